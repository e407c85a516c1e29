// Site administration: workspaces, organizations, tool and policy
// versions (administrators only; others get 404 from the API).
import { get, request } from './api.js';
import { html, enc, when, table } from './html.js';
import { flash, go, setQuery } from './app.js';

const TABS = [['organizations', 'Organizations'], ['workspaces', 'Workspaces'], ['tool-versions', 'Tool versions'], ['policy-versions', 'Policy versions']];

const columns = {
  organizations: [['Name', 'Status', 'E-mail', 'Workspace limit'], (o) => [o.attributes.name, o.attributes['is-disabled'] ? 'disabled' : 'active',
    o.attributes['notification-email'], o.attributes['workspace-limit'] ?? '—']],
  workspaces: [['Name', 'Organization', 'Locked', 'Current run'], (w) => [w.attributes.name, w.relationships.organization.data.id,
    w.attributes.locked ? 'yes' : 'no', ((w.relationships['current-run'] || {}).data || {}).id || '—']],
  'tool-versions': [['Version', 'Official', 'Enabled', 'Beta', 'Deprecated', 'Usage', 'Created'], (v) => [v.attributes.version,
    v.attributes.official ? 'yes' : 'no', v.attributes.enabled ? 'yes' : 'no', v.attributes.beta ? 'yes' : 'no',
    v.attributes.deprecated ? 'yes' + (v.attributes['deprecated-reason'] ? ': ' + v.attributes['deprecated-reason'] : '') : 'no',
    v.attributes.usage, when(v.attributes['created-at'])]],
};
columns['policy-versions'] = columns['tool-versions'];

export async function list(ctx) {
  const [kind] = ctx.params;
  ctx.title('Admin: ' + kind);
  const q = ctx.query.get('q') || '';
  const page = ctx.query.get('page') || 1;
  const query = { 'page[number]': page };
  if (q) { if (kind.endsWith('versions')) query['search[version]'] = q; else query.q = q; }
  const r = await get('/api/v2/admin/' + kind, query, ctx.signal);
  const [heads, row] = columns[kind];
  const p = (r.data.meta || {}).pagination || {};
  ctx.show(html`<h1>Site administration</h1>
<nav class="tabs" aria-label="Administration">${TABS.map(([k, t]) => html`<a href="#/admin/${k}" ${k === kind ? html`aria-current="page"` : ''}>${t}</a>`)}</nav>
<form class="filters" data-form="search" role="search"><label class="grow">Search <input type="search" name="q" value="${q}"></label><button type="submit">Search</button></form>
${table([...heads, ''], r.data.data.map((x) => [...row(x),
    html`<button type="button" class="danger small" data-action="delete" data-id="${x.id}" data-confirm="Delete ${x.id}?">Delete</button>`]), 'Nothing here.')}
${p['total-pages'] > 1 ? html`<nav class="pager">${p['prev-page'] ? html`<button type="button" data-action="page" data-page="${p['prev-page']}">← Previous</button>` : ''}
<span>Page ${p['current-page']} of ${p['total-pages']}</span>${p['next-page'] ? html`<button type="button" data-action="page" data-page="${p['next-page']}">Next →</button>` : ''}</nav>` : ''}`);
  ctx.onSubmit('search', (f) => setQuery({ q: f.q.value.trim(), page: '' }));
  ctx.on('page', (d) => setQuery({ page: d.page }));
  ctx.on('delete', async (d) => {
    await request('DELETE', '/api/v2/admin/' + kind + '/' + enc(d.id));
    flash('Deleted ' + d.id + '.');
    go(location.hash);
  });
}
