// Evaluations: the list (live) and one evaluation with its placement
// failures explained.
import { html, enc, short, when, badge, table, dl } from './html.js';
import { errorBox, setQuery } from './app.js';
import { placement, allocRows, allocHeaders } from './jobs.js';
import { get, watch } from './api.js';

export async function list(ctx) {
  ctx.title('Evaluations');
  const ns = ctx.query.get('namespace') || '*';
  const next = ctx.query.get('next') || '';
  const prev = (ctx.query.get('prev') || '').split(',').filter(Boolean);
  ctx.show(html`<h1>Evaluations</h1><div id="evals"></div><nav class="pager" aria-label="Pages" id="pager"></nav>`);
  ctx.on('next', (d) => setQuery({ next: d.token, prev: [...prev, next || '-'].join(',') }));
  ctx.on('prev', () => {
    const p = prev.slice(); const t = p.pop();
    setQuery({ next: t === '-' ? '' : t, prev: p.join(',') });
  });
  await watch('/v1/evaluations', { namespace: ns, per_page: 50, next_token: next }, ctx.signal, (r) => {
    ctx.region('pager', html`${prev.length ? html`<button type="button" data-action="prev">← Previous</button>` : ''}
${r.nextToken ? html`<button type="button" data-action="next" data-token="${r.nextToken}">Next →</button>` : ''}`);
    ctx.region('evals', table(['ID', 'Job', 'Namespace', 'Triggered by', 'Status', 'Placement failures', 'Created'], r.data.map((e) => [
      html`<a href="#/eval/${enc(e.ID)}"><code>${short(e.ID)}</code></a>`,
      html`<a href="#/job/${enc(e.Namespace)}/${enc(e.JobID)}">${e.JobID}</a>`, e.Namespace, e.TriggeredBy, badge(e.Status),
      Object.keys(e.FailedTGAllocs || {}).join(', ') || '—', when(e.CreateTime)])));
    ctx.drawn();
  }, (e) => ctx.region('evals', errorBox(e)));
}

export async function detail(ctx) {
  const [id] = ctx.params;
  ctx.title('Evaluation ' + short(id));
  ctx.show(html`<p class="crumbs"><a href="#/evals">Evaluations</a></p><h1>Evaluation <code>${short(id)}</code></h1>
<div id="eval-info"></div><div id="eval-fail"></div><section><h2>Allocations placed</h2><div id="eval-allocs"></div></section>`);
  await watch('/v1/evaluation/' + enc(id), {}, ctx.signal, async (r) => {
    const e = r.data;
    ctx.region('eval-info', dl([['Job', html`<a href="#/job/${enc(e.Namespace)}/${enc(e.JobID)}">${e.JobID}</a>`], ['Status', badge(e.Status)],
      ['Description', e.StatusDescription], ['Triggered by', e.TriggeredBy], ['Type', e.Type], ['Priority', e.Priority],
      ['Node', e.NodeID ? html`<a href="#/node/${enc(e.NodeID)}"><code>${short(e.NodeID)}</code></a>` : ''],
      ['Blocked eval', e.BlockedEval ? html`<a href="#/eval/${enc(e.BlockedEval)}"><code>${short(e.BlockedEval)}</code></a>` : ''],
      ['Previous eval', e.PreviousEval ? html`<a href="#/eval/${enc(e.PreviousEval)}"><code>${short(e.PreviousEval)}</code></a>` : ''],
      ['Queued', Object.entries(e.QueuedAllocations || {}).map(([g, n]) => `${g}: ${n}`).join(', ')], ['Created', when(e.CreateTime)]]));
    ctx.region('eval-fail', placement(e.FailedTGAllocs));
    try {
      const a = await get('/v1/evaluation/' + enc(id) + '/allocations', {}, ctx.signal);
      ctx.region('eval-allocs', table(allocHeaders, allocRows(a.data)));
    } catch (err) { ctx.region('eval-allocs', errorBox(err)); }
  }, (e) => ctx.region('eval-info', errorBox(e)));
}
