// The management side: organizations, projects (search, sort, create,
// edit, delete, move workspaces) and a project's team access.
import { get, request } from './api.js';
import { html, raw, enc, when, table, dl } from './html.js';
import { errorBox, flash, go, setQuery } from './app.js';

const LEVELS = ['read', 'write', 'maintain', 'admin', 'custom'];
const PROJECT_PERMS = { settings: ['read', 'update', 'delete'], teams: ['none', 'read', 'manage'] };
const WS_PERMS = {
  runs: ['read', 'plan', 'apply'], variables: ['none', 'read', 'write'],
  'state-versions': ['none', 'read-outputs', 'read', 'write'], 'gate-mocks': ['none', 'read'],
};
const WS_FLAGS = ['create', 'move', 'locking', 'delete', 'run-tasks'];

/** pager renders JSON:API pagination as previous and next links. */
function pager(meta) {
  const p = (meta || {}).pagination;
  if (!p || p['total-pages'] <= 1) return '';
  return html`<nav class="pager" aria-label="Pages">
${p['prev-page'] ? html`<button type="button" data-action="page" data-page="${p['prev-page']}">← Previous</button>` : ''}
<span>Page ${p['current-page']} of ${p['total-pages']}</span>
${p['next-page'] ? html`<button type="button" data-action="page" data-page="${p['next-page']}">Next →</button>` : ''}</nav>`;
}

export async function orgs(ctx, session) {
  ctx.title('Organizations');
  const page = ctx.query.get('page') || 1;
  const r = await get('/api/v2/organizations', { 'page[number]': page }, ctx.signal);
  ctx.on('page', (d) => setQuery({ page: d.page }));
  ctx.show(html`<h1>Organizations</h1>
${table(['Name', 'E-mail', 'Created'], r.data.data.map((o) => [
    html`<a href="#/org/${enc(o.id)}">${o.attributes.name}</a>`, o.attributes.email, when(o.attributes['created-at'])]), 'No organizations you can see.')}
${pager(r.data.meta)}
${session.admin ? html`<form data-form="org" class="card narrow"><h2>New organization</h2>
<label for="org-name">Name</label><input id="org-name" name="name" required pattern="[A-Za-z0-9_-]+">
<label for="org-email">E-mail</label><input id="org-email" name="email" type="email" required>
<button type="submit">Create organization</button></form>` : ''}`);
  ctx.onSubmit('org', async (f) => {
    await request('POST', '/api/v2/organizations', { body: { data: { type: 'organizations', attributes: { name: f.name.value, email: f.email.value } } } });
    flash('Organization ' + f.name.value + ' created.');
    go('#/org/' + enc(f.name.value));
  });
}

export async function projects(ctx) {
  const [org] = ctx.params;
  ctx.title('Projects of ' + org);
  const q = ctx.query.get('q') || '';
  const sort = ctx.query.get('sort') || 'name';
  const page = ctx.query.get('page') || 1;
  const [r, orgDoc] = await Promise.all([
    get('/api/v2/organizations/' + enc(org) + '/projects', { q, sort, 'page[number]': page }, ctx.signal),
    get('/api/v2/organizations/' + enc(org), {}, ctx.signal).catch(() => null),
  ]);
  const orgPerms = orgDoc ? orgDoc.data.data.attributes.permissions || {} : {};
  const counts = (r.data.meta || {})['status-counts'] || {};
  ctx.show(html`<p class="crumbs"><a href="#/orgs">Organizations</a> / ${org}</p><h1>Projects</h1>
<form class="filters" data-form="search" role="search">
<label class="grow">Search <input name="q" value="${q}" type="search"></label>
<label>Sort <select name="sort" data-change="search">
<option value="name" ${sort === 'name' ? raw('selected') : ''}>Name A–Z</option>
<option value="-name" ${sort === '-name' ? raw('selected') : ''}>Name Z–A</option></select></label>
<button type="submit">Search</button></form>
<p class="muted">${counts.matching ?? r.data.data.length} of ${counts.total ?? '?'} projects.</p>
${table(['Name', 'Description', 'Workspaces', 'Teams', ''], r.data.data.map((p) => [
    html`<a href="#/project/${enc(p.id)}">${p.attributes.name}</a>`, p.attributes.description || '',
    p.attributes['workspace-count'], p.attributes['team-count'],
    // The Default Project cannot be deleted, whatever the permissions say.
    (p.attributes.permissions || {})['can-destroy'] && !p.attributes['is-default'] ? html`<button type="button" class="danger small" data-action="delete" data-id="${p.id}" data-confirm="Delete project ${p.attributes.name}?">Delete</button>` : '']),
  'No projects.')}
${pager(r.data.meta)}
${orgPerms['can-create-project'] ? html`<form data-form="create" class="card narrow"><h2>New project</h2>
<label for="p-name">Name</label><input id="p-name" name="name" required minlength="3" maxlength="40">
<label for="p-desc">Description</label><input id="p-desc" name="description" maxlength="256">
<button type="submit">Create project</button></form>` : ''}<div id="result"></div>`);
  const search = (f) => setQuery({ q: f.q.value.trim(), sort: f.sort.value, page: '' });
  ctx.onSubmit('search', search);
  ctx.onChange('search', (el) => search(el.form));
  ctx.on('page', (d) => setQuery({ page: d.page }));
  ctx.on('delete', async (d) => { await request('DELETE', '/api/v2/projects/' + enc(d.id)); flash('Project deleted.'); go(location.hash); });
  ctx.onSubmit('create', async (f) => {
    const attrs = { name: f.name.value };
    if (f.description.value) attrs.description = f.description.value;
    try {
      const p = (await request('POST', '/api/v2/organizations/' + enc(org) + '/projects', { body: { data: { type: 'projects', attributes: attrs } } })).data.data;
      flash('Project ' + p.attributes.name + ' created.');
      go('#/project/' + enc(p.id));
    } catch (e) { ctx.region('result', errorBox(e)); }
  });
}

/** permsOf shows a team access record's effective permissions. */
function permsOf(a) {
  const pa = a['project-access'] || {}; const wa = a['workspace-access'] || {};
  return html`<ul class="perms">${[...Object.entries(pa).map(([k, v]) => `project ${k}: ${v}`),
    ...Object.entries(wa).map(([k, v]) => `workspace ${k}: ${v === true ? 'yes' : v === false ? 'no' : v}`)].map((s) => html`<li>${s}</li>`)}</ul>`;
}

function customFields(a, id) {
  const pa = a['project-access'] || {}; const wa = a['workspace-access'] || {};
  const sel = (group, k, opts, cur) => html`<label>${group} ${k} <select name="${group}.${k}">${opts.map((o) =>
    html`<option ${o === cur ? raw('selected') : ''}>${o}</option>`)}</select></label>`;
  return html`<form data-form="custom" data-id="${id}" class="custom">
${Object.entries(PROJECT_PERMS).map(([k, o]) => sel('project-access', k, o, pa[k]))}
${Object.entries(WS_PERMS).map(([k, o]) => sel('workspace-access', k, o, wa[k]))}
${WS_FLAGS.map((k) => html`<label><input type="checkbox" name="workspace-access.${k}" ${wa[k] ? raw('checked') : ''}> workspace ${k}</label>`)}
<button type="submit" class="small">Save permissions</button></form>`;
}

export async function project(ctx) {
  const [id] = ctx.params;
  const base = '/api/v2/projects/' + enc(id);
  const p = (await get(base, {}, ctx.signal)).data.data;
  const org = p.relationships.organization.data.id;
  const perms = p.attributes.permissions || {};
  ctx.title('Project ' + p.attributes.name);
  const [access, teams, wss] = await Promise.all([
    get('/api/v2/team-projects', { 'filter[project][id]': id, 'page[size]': 100 }, ctx.signal).catch((e) => e),
    get('/api/v2/organizations/' + enc(org) + '/teams', { 'page[size]': 100 }, ctx.signal).catch((e) => e),
    get('/api/v2/organizations/' + enc(org) + '/workspaces', { 'page[size]': 100 }, ctx.signal).catch((e) => e),
  ]);
  const teamName = {};
  if (!(teams instanceof Error)) for (const t of teams.data.data) teamName[t.id] = t.attributes.name;
  const records = access instanceof Error ? [] : access.data.data;
  const inProject = wss instanceof Error ? [] : wss.data.data.filter((w) => ((w.relationships.project || {}).data || {}).id === id);
  const elsewhere = wss instanceof Error ? [] : wss.data.data.filter((w) => ((w.relationships.project || {}).data || {}).id !== id);
  const freeTeams = Object.entries(teamName).filter(([tid]) => !records.some((r) => r.relationships.team.data.id === tid));
  ctx.show(html`<p class="crumbs"><a href="#/orgs">Organizations</a> / <a href="#/org/${enc(org)}">${org}</a></p>
<div class="head"><h1>${p.attributes.name}</h1><div class="actions">
${perms['can-destroy'] && !p.attributes['is-default'] ? html`<button type="button" class="danger" data-action="delete" data-confirm="Delete project ${p.attributes.name}?">Delete project</button>` : ''}</div></div>
${dl([['ID', html`<code>${p.id}</code>`], ['Description', p.attributes.description || ''], ['Workspaces', p.attributes['workspace-count']],
    ['Teams', p.attributes['team-count']], ['Auto-destroy after', p.attributes['auto-destroy-activity-duration'] || '']])}
${perms['can-update'] ? html`<details><summary>Edit project</summary><form data-form="edit" class="card narrow">
<label for="e-name">Name</label><input id="e-name" name="name" value="${p.attributes.name}" required minlength="3" maxlength="40">
<label for="e-desc">Description</label><input id="e-desc" name="description" value="${p.attributes.description || ''}" maxlength="256">
<label for="e-ad">Auto-destroy after inactivity (e.g. 14d, 12h; empty for none)</label><input id="e-ad" name="ad" value="${p.attributes['auto-destroy-activity-duration'] || ''}" pattern="[0-9]{1,4}[dh]">
<button type="submit">Save</button></form></details>` : ''}
<section><h2>Team access</h2>
${access instanceof Error ? errorBox(access) : table(['Team', 'Access', 'Effective permissions', ''], records.map((rec) => [
    teamName[rec.relationships.team.data.id] || rec.relationships.team.data.id,
    perms['can-manage-teams'] ? html`<select aria-label="Access of ${teamName[rec.relationships.team.data.id] || ''}" data-change="level" data-id="${rec.id}">${LEVELS.map((l) =>
      html`<option ${l === rec.attributes.access ? raw('selected') : ''}>${l}</option>`)}</select>
${rec.attributes.access === 'custom' ? customFields(rec.attributes, rec.id) : ''}` : rec.attributes.access,
    permsOf(rec.attributes),
    perms['can-manage-teams'] ? html`<button type="button" class="danger small" data-action="remove" data-id="${rec.id}" data-confirm="Remove this team's access?">Remove</button>` : '']), 'No team has access.')}
${!perms['can-manage-teams'] ? '' : freeTeams.length ? html`<form data-form="grant" class="filters"><label>Team <select name="team">${freeTeams.map(([tid, n]) => html`<option value="${tid}">${n}</option>`)}</select></label>
<label>Access <select name="access">${LEVELS.map((l) => html`<option>${l}</option>`)}</select></label>
<button type="submit">Grant access</button></form>` : html`<p class="muted">${teams instanceof Error ? errorBox(teams) : 'Every team of the organization has a record.'}</p>`}
</section>
<section><h2>Workspaces</h2>${table(['Name', 'Locked'], inProject.map((w) => [html`<a href="#/workspace/${enc(w.id)}">${w.attributes.name}</a>`, w.attributes.locked ? 'yes' : 'no']), 'No workspaces.')}
${elsewhere.length && perms['can-move-workspace'] ? html`<form data-form="move" class="filters"><label>Move workspace here <select name="ws">${elsewhere.map((w) =>
    html`<option value="${w.id}">${w.attributes.name}</option>`)}</select></label><button type="submit">Move</button></form>` : ''}</section>
<div id="result"></div>`);
  const reload = () => go(location.hash);
  ctx.on('delete', async () => { await request('DELETE', base); flash('Project deleted.'); go('#/org/' + enc(org)); });
  ctx.onSubmit('edit', async (f) => {
    const attrs = { name: f.name.value, description: f.description.value };
    attrs['auto-destroy-activity-duration'] = f.ad.value || null;
    await request('PATCH', base, { body: { data: { type: 'projects', attributes: attrs } } });
    flash('Project saved.'); reload();
  });
  ctx.onSubmit('grant', async (f) => {
    await request('POST', '/api/v2/team-projects', { body: { data: { type: 'team-projects', attributes: { access: f.access.value },
      relationships: { project: { data: { type: 'projects', id } }, team: { data: { type: 'teams', id: f.team.value } } } } } });
    flash('Access granted to ' + teamName[f.team.value] + '.'); reload();
  });
  ctx.onChange('level', async (el) => {
    await request('PATCH', '/api/v2/team-projects/' + enc(el.dataset.id), { body: { data: { type: 'team-projects', id: el.dataset.id, attributes: { access: el.value } } } });
    flash('Access changed to ' + el.value + '.'); reload();
  });
  ctx.onSubmit('custom', async (f) => {
    const pa = {}; const wa = {};
    for (const k of Object.keys(PROJECT_PERMS)) pa[k] = f.elements['project-access.' + k].value;
    for (const k of Object.keys(WS_PERMS)) wa[k] = f.elements['workspace-access.' + k].value;
    for (const k of WS_FLAGS) wa[k] = f.elements['workspace-access.' + k].checked;
    await request('PATCH', '/api/v2/team-projects/' + enc(f.dataset.id), { body: { data: { type: 'team-projects', id: f.dataset.id,
      attributes: { access: 'custom', 'project-access': pa, 'workspace-access': wa } } } });
    flash('Permissions saved.'); reload();
  });
  ctx.on('remove', async (d) => { await request('DELETE', '/api/v2/team-projects/' + enc(d.id)); flash('Access removed.'); reload(); });
  ctx.onSubmit('move', async (f) => {
    await request('POST', base + '/relationships/workspaces', { body: { data: [{ type: 'workspaces', id: f.ws.value }] } });
    flash('Workspace moved.'); reload();
  });
}
