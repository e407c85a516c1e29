// A workspace's runs (runs executed as jobs, docs/terraform.md): the
// workspace page lists its runs with their status, and a run's page shows
// its plan and apply, their logs (followed while they run), and the
// actions its status allows.
import { get, request } from './api.js';
import { html, enc, when, table, dl } from './html.js';
import { flash, go } from './app.js';

const FINAL = new Set(['applied', 'planned_and_finished', 'errored', 'canceled', 'discarded']);
const FOLLOW_MS = 1500;

/** follow calls fn again after a while, until the page is left or it returns false. */
function follow(ctx, fn) {
  const timer = setTimeout(async () => {
    if (ctx.signal.aborted) return;
    if (await fn().catch(() => false)) follow(ctx, fn);
  }, FOLLOW_MS);
  ctx.signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
}

/** status renders a run's or a phase's status. */
function status(s) {
  return html`<span class="badge">${s.replaceAll('_', ' ')}</span>`;
}

function runRows(runs) {
  return runs.map((r) => [html`<a href="#/run/${enc(r.id)}">${r.id}</a>`, status(r.attributes.status),
    r.attributes.message || '', r.attributes['is-destroy'] ? 'destroy' : r.attributes['plan-only'] ? 'plan only' : 'apply',
    when(r.attributes['created-at'])]);
}

export async function workspace(ctx) {
  const [id] = ctx.params;
  const w = (await get('/api/v2/workspaces/' + enc(id), {}, ctx.signal)).data.data;
  const org = w.relationships.organization.data.id;
  const project = ((w.relationships.project || {}).data || {}).id;
  ctx.title('Workspace ' + w.attributes.name);
  const load = () => get('/api/v2/workspaces/' + enc(id) + '/runs', { 'page[size]': 50 }, ctx.signal);
  const runs = await load();
  ctx.show(html`<p class="crumbs"><a href="#/orgs">Organizations</a> / <a href="#/org/${enc(org)}">${org}</a>${project ? html` / <a href="#/project/${enc(project)}">project</a>` : ''}</p>
<h1>${w.attributes.name}</h1>
${dl([['ID', html`<code>${w.id}</code>`], ['Execution mode', w.attributes['execution-mode'] || ''],
    ['Locked', w.attributes.locked ? 'yes' : 'no'], ['Terraform version', w.attributes['tool-version'] || 'the newest enabled']])}
<section><h2>Runs</h2><div id="runs">${table(['Run', 'Status', 'Message', 'Kind', 'Created'], runRows(runs.data.data), 'No runs yet.')}</div></section>`);
  ctx.drawn();
  const busy = (rs) => rs.some((r) => !FINAL.has(r.attributes.status));
  if (busy(runs.data.data)) {
    follow(ctx, async () => {
      const r = await load();
      ctx.region('runs', table(['Run', 'Status', 'Message', 'Kind', 'Created'], runRows(r.data.data), 'No runs yet.'));
      return busy(r.data.data);
    });
  }
}

/** logText is a phase's log without the archivist's STX/ETX frame. */
async function logText(path, signal) {
  const r = await request('GET', path, { signal });
  const text = typeof r.data === 'string' ? r.data : JSON.stringify(r.data);
  return text.replace(/^\u0002/, '').replace(/\u0003$/, '');
}

function phase(title, p, log) {
  const a = p.attributes;
  const counts = `+${a['resource-additions']} ~${a['resource-changes']} -${a['resource-destructions']}`;
  return html`<section><h2>${title} ${status(a.status)}</h2><p class="muted">${counts}</p>
<pre class="logs" aria-label="${title} log">${log || (a.status === 'pending' || a.status === 'unreachable' ? 'Not started.' : '')}</pre></section>`;
}

export async function run(ctx) {
  const [id] = ctx.params;
  const base = '/api/v2/runs/' + enc(id);
  const draw = async () => {
    const r = (await get(base, {}, ctx.signal)).data.data;
    const planID = r.relationships.plan.data.id;
    const applyID = r.relationships.apply.data.id;
    const [plan, apply, planLog, applyLog] = await Promise.all([
      get('/api/v2/plans/' + enc(planID), {}, ctx.signal), get('/api/v2/applies/' + enc(applyID), {}, ctx.signal),
      logText('/api/v2/plans/' + enc(planID) + '/logs', ctx.signal), logText('/api/v2/applies/' + enc(applyID) + '/logs', ctx.signal)]);
    const a = r.attributes; const acts = a.actions || {};
    ctx.title('Run ' + r.id);
    ctx.show(html`<p class="crumbs"><a href="#/workspace/${enc(r.relationships.workspace.data.id)}">workspace</a></p>
<div class="head"><h1>${r.id} ${status(a.status)}</h1><div class="actions">
${acts['is-confirmable'] ? html`<button type="button" data-action="apply">Confirm and apply</button>` : ''}
${acts['is-discardable'] ? html`<button type="button" data-action="discard" data-confirm="Discard this run?">Discard</button>` : ''}
${acts['is-cancelable'] ? html`<button type="button" class="danger" data-action="cancel" data-confirm="Cancel this run?">Cancel</button>` : ''}</div></div>
${dl([['Message', a.message || ''], ['Created', when(a['created-at'])], ['Auto-apply', a['auto-apply'] ? 'yes' : 'no'],
    ['Terraform', a['terraform-version'] || ''], ...(a['error-message'] ? [['Error', a['error-message']]] : [])])}
${phase('Plan', plan.data.data, planLog)}
${phase('Apply', apply.data.data, applyLog)}`);
    ctx.drawn();
    return !FINAL.has(a.status);
  };
  for (const action of ['apply', 'discard', 'cancel']) {
    ctx.on(action, async () => {
      await request('POST', base + '/actions/' + action, { body: { comment: null } });
      flash('Run ' + action + ' requested.');
      go(location.hash);
    });
  }
  if (await draw()) follow(ctx, draw);
}
