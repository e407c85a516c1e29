// Jobs: the list (namespace, status, type and filter expression, paged,
// live), the register form, and a job's page (summary, deployment,
// allocations, evaluations, versions with diffs, actions).
import { get, request, watch } from './api.js';
import { html, raw, enc, short, when, badge, table, dl } from './html.js';
import { errorBox, flash, go, setQuery } from './app.js';
import { statusBar, allocCounts } from './charts.js';
import { stream } from './events.js';

const PAGE = 25;

/** namespaces lists the namespace names the token may see. */
async function namespaces(signal) {
  try {
    return (await get('/v1/namespaces', {}, signal)).data.map((n) => n.Name);
  } catch (_) {
    return ['default'];
  }
}

function select(name, label, value, options) {
  return html`<label>${label} <select name="${name}" data-change="filter">${options.map(([v, t]) =>
    html`<option value="${v}" ${v === value ? raw('selected') : ''}>${t}</option>`)}</select></label>`;
}

/** bexpr quotes s as a filter expression string. */
const quote = (s) => '"' + String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';

export async function list(ctx, session) {
  ctx.title('Jobs');
  const q = ctx.query;
  const ns = q.get('namespace') || 'default';
  const status = q.get('status') || '';
  const type = q.get('type') || '';
  const filter = q.get('filter') || '';
  const next = q.get('next') || '';
  const perPage = Math.min(Math.max(Number(q.get('per_page')) || PAGE, 1), 100);
  const canSubmit = session.caps.ns(ns === '*' ? 'default' : ns, 'submit-job');
  ctx.show(html`<div class="head"><h1>Jobs</h1>${canSubmit ? html`<a class="button" href="#/jobs/new?namespace=${ns === '*' ? 'default' : ns}">Run a job</a>` : ''}</div>
<form class="filters" data-form="filter" role="search">
  <span id="ns-select">${select('namespace', 'Namespace', ns, [['*', 'All namespaces (*)'], ...(ns === '*' ? [] : [[ns, ns]])])}</span>
  ${select('status', 'Status', status, [['', 'Any status'], ['pending', 'pending'], ['running', 'running'], ['dead', 'dead']])}
  ${select('type', 'Type', type, [['', 'Any type'], ['service', 'service'], ['batch', 'batch'], ['system', 'system'], ['sysbatch', 'sysbatch']])}
  <label class="grow">Filter <input name="filter" value="${filter}" placeholder='e.g. Name contains "web"' spellcheck="false"></label>
  <button type="submit">Apply</button>
</form>
<div id="jobs"><p class="muted">Loading…</p></div>
<nav class="pager" aria-label="Pages" id="pager"></nav>`);
  const change = (form) => setQuery({
    namespace: form.namespace.value, status: form.status.value, type: form.type.value,
    filter: form.filter.value.trim(), next: '', prev: '',
  });
  ctx.onSubmit('filter', change);
  ctx.onChange('filter', (el) => change(el.form));
  namespaces(ctx.signal).then((names) => {
    if (!names.includes(ns) && ns !== '*') names.unshift(ns);
    ctx.region('ns-select', select('namespace', 'Namespace', ns, [['*', 'All namespaces (*)'], ...names.map((n) => [n, n])]));
  });
  // Children of periodic and parameterized jobs are not listed on their
  // own: each parent's row counts them and links the latest few.
  const parts = ['ParentID == ""'];
  if (status) parts.push('Status == ' + quote(status));
  if (type) parts.push('Type == ' + quote(type));
  if (filter) parts.push('(' + filter + ')');
  const query = { namespace: ns, per_page: perPage, next_token: next, filter: parts.join(' and ') };
  const prev = (q.get('prev') || '').split(',').filter(Boolean);
  ctx.on('next', (d) => setQuery({ next: d.token, prev: [...prev, next || '-'].join(',') }));
  ctx.on('prev', () => {
    const p = prev.slice(); const t = p.pop();
    setQuery({ next: t === '-' ? '' : t, prev: p.join(',') });
  });
  const kids = new Map(); // parent key → {total, latest}
  let last = null;
  const draw = (r) => {
    last = r;
    ctx.region('jobs', jobTable(r.data, kids));
    ctx.region('pager', html`${prev.length ? html`<button type="button" data-action="prev">← Previous</button>` : ''}
${r.nextToken ? html`<button type="button" data-action="next" data-token="${r.nextToken}">Next →</button>` : ''}`);
    ctx.drawn();
    for (const j of r.data) {
      if (!j.Periodic && !j.ParameterizedJob) continue;
      const key = (j.Namespace || 'default') + '/' + j.ID;
      const total = childCount(j.JobSummary);
      const known = kids.get(key);
      if (known && known.total === total) continue;
      kids.set(key, { total, latest: known ? known.latest : null });
      latestChildren(j, ctx.signal).then((latest) => {
        kids.set(key, { total, latest });
        if (last) ctx.region('jobs', jobTable(last.data, kids));
      }, () => {});
    }
  };
  // A visit without a token gets the default page's first answer with
  // the document itself (landing.js), before the browser's load event.
  const isDefault = ns === 'default' && !status && !type && !filter && !next && perPage === PAGE;
  firstAnswer = isDefault ? draw : null;
  ctx.signal.addEventListener('abort', () => { if (firstAnswer === draw) firstAnswer = null; });
  await watch('/v1/jobs', query, ctx.signal, (r) => {
    if (firstAnswer === draw) firstAnswer = null;
    draw(r);
  }, (e) => ctx.region('jobs', errorBox(e)));
}

/** firstAnswer draws the default jobs list while it waits for its first answer. */
let firstAnswer = null;

/**
 * landing hands the default jobs list the answer landing.js read as part
 * of the document's load, so that the list is drawn before the load
 * event (a plain headless screenshot is taken then).
 */
export function landing(data) {
  if (firstAnswer && Array.isArray(data)) {
    const draw = firstAnswer;
    firstAnswer = null;
    draw({ data, index: 0, nextToken: '' });
  }
}

/** LATEST is how many children a parent's row of the jobs list links. */
const LATEST = 3;

/** childCount is a parent's children as its summary counts them. */
function childCount(summary) {
  const c = (summary || {}).Children || {};
  return (c.Pending || 0) + (c.Running || 0) + (c.Dead || 0);
}

/**
 * latestChildren reads a parent's newest children. Children's IDs are
 * the parent's ID, "/" and the launch time, so the list (sorted by ID)
 * ends with the newest; it is read a page of 200 at a time, up to 2,000.
 */
async function latestChildren(j, signal) {
  const ns = j.Namespace || 'default';
  let token = '';
  let tail = [];
  for (let i = 0; i < 10; i++) {
    const r = await get('/v1/jobs', { namespace: ns, prefix: j.ID + '/', filter: 'ParentID == ' + quote(j.ID), per_page: 200, next_token: token }, signal);
    tail = tail.concat(r.data).slice(-50);
    token = r.nextToken;
    if (!token) break;
  }
  return tail.sort((a, b) => (b.SubmitTime || 0) - (a.SubmitTime || 0)).slice(0, LATEST);
}

/** allChildren reads every child of a parent (up to 10,000), newest first. */
async function allChildren(j, signal) {
  let token = '';
  let out = [];
  for (let i = 0; i < 50; i++) {
    const r = await get('/v1/jobs', { namespace: j.Namespace || 'default', prefix: j.ID + '/', filter: 'ParentID == ' + quote(j.ID), per_page: 200, next_token: token }, signal);
    out = out.concat(r.data);
    token = r.nextToken;
    if (!token) break;
  }
  return out.sort((a, b) => (b.SubmitTime || 0) - (a.SubmitTime || 0));
}

/** jobTable draws the jobs list, each parent with its children's row. */
function jobTable(jobs, kids) {
  if (!jobs.length) return html`<p class="muted">No jobs match.</p>`;
  const headers = ['Name', 'Namespace', 'Type', 'Status', 'Allocations', 'Priority'];
  return html`<div class="scroll"><table class="jobs"><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${jobs.map((j) => {
    const ns = j.Namespace || 'default';
    const row = html`<tr><td><a href="#/job/${enc(ns)}/${enc(j.ID)}">${j.Name || j.ID}</a></td><td>${j.Namespace}</td><td>${j.Type}</td>
<td>${badge(j.Status)}</td><td>${statusBar(allocCounts(j.JobSummary), 'small')}${groups(j.JobSummary)}</td><td>${j.Priority}</td></tr>`;
    if (!j.Periodic && !j.ParameterizedJob) return row;
    const k = kids.get(ns + '/' + j.ID) || {};
    const c = (j.JobSummary || {}).Children || {};
    const total = childCount(j.JobSummary);
    return html`${row}<tr class="children"><td colspan="6"><span class="muted">↳ ${total} ${total === 1 ? 'child' : 'children'}${total ? ` (${c.Pending || 0} pending, ${c.Running || 0} running, ${c.Dead || 0} dead)` : ''}</span>
${(k.latest || []).length ? html` · latest: ${k.latest.map((x, i) => html`${i ? ', ' : ''}<a href="#/job/${enc(ns)}/${enc(x.ID)}">${x.ID.slice(j.ID.length + 1)}</a> ${badge(x.Status)}`)}` : ''}
${total > LATEST ? html` · <a href="#/job/${enc(ns)}/${enc(j.ID)}">all ${total}</a>` : ''}</td></tr>`;
  })}</tbody></table></div>`;
}

/** groups sums a job summary's allocations by state. */
function groups(summary) {
  if (!summary || !summary.Summary) return '';
  const t = { Running: 0, Starting: 0, Queued: 0, Failed: 0, Complete: 0, Lost: 0 };
  for (const g of Object.values(summary.Summary)) for (const k of Object.keys(t)) t[k] += g[k] || 0;
  const out = Object.entries(t).filter(([, v]) => v).map(([k, v]) => `${v} ${k.toLowerCase()}`);
  return out.join(', ');
}

export async function create(ctx) {
  ctx.title('Run a job');
  const ns = ctx.query.get('namespace') || 'default';
  ctx.show(html`<h1>Run a job</h1>
<form data-form="register" class="card">
  <label for="ns">Namespace</label><input id="ns" name="namespace" value="${ns}" required>
  <label for="spec">Job specification (HCL or JSON)</label>
  <textarea id="spec" name="spec" rows="18" spellcheck="false" required placeholder='job "example" { ... }'></textarea>
  <div class="row"><button type="button" data-action="plan">Plan</button> <button type="submit">Run</button></div>
</form>
<div id="result"></div>`);
  const parse = async (form) => {
    const src = form.spec.value.trim();
    if (src.startsWith('{')) {
      const doc = JSON.parse(src);
      return doc.Job || doc;
    }
    return (await request('POST', '/v1/jobs/parse', { query: { namespace: form.namespace.value }, body: { JobHCL: src, Canonicalize: true } })).data;
  };
  ctx.on('plan', async (_, el) => {
    const form = el.form;
    try {
      const job = await parse(form);
      job.Namespace = form.namespace.value;
      const r = (await request('POST', '/v1/job/' + enc(job.ID) + '/plan', { query: { namespace: job.Namespace }, body: { Job: job, Diff: true } })).data;
      const fails = Object.entries(r.FailedTGAllocs || {});
      ctx.region('result', html`<div class="card"><h2>Plan</h2>${dl([['Diff', r.Diff ? r.Diff.Type : 'None'],
        ['Placement failures', fails.length ? fails.map(([g]) => g).join(', ') : 'none']])}${r.Diff ? diff(r.Diff) : ''}</div>`);
    } catch (e) { ctx.region('result', errorBox(e)); }
  });
  ctx.onSubmit('register', async (form) => {
    let job;
    try { job = await parse(form); } catch (e) { ctx.region('result', errorBox(e)); return; }
    job.Namespace = form.namespace.value;
    try {
      await request('POST', '/v1/jobs', { query: { namespace: job.Namespace }, body: { Job: job } });
    } catch (e) { ctx.region('result', errorBox(e)); return; }
    flash('Job ' + job.ID + ' registered.');
    go('#/job/' + enc(job.Namespace) + '/' + enc(job.ID));
  });
}

/** diff renders a job diff (fields, objects, groups, tasks) as nested lists. */
export function diff(d) {
  if (!d || d.Type === 'None') return html`<p class="muted">No changes.</p>`;
  const fields = (fs) => (fs || []).filter((f) => f.Type !== 'None').map((f) =>
    html`<li class="d-${f.Type}"><code>${f.Name}</code>: ${f.Type === 'Added' ? '' : html`<del>${f.Old}</del> `}${f.Type === 'Deleted' ? '' : html`<ins>${f.New}</ins>`}</li>`);
  const objects = (os) => (os || []).filter((o) => o.Type !== 'None').map((o) =>
    html`<li class="d-${o.Type}">${o.Name} (${o.Type.toLowerCase()})<ul>${fields(o.Fields)}${objects(o.Objects)}</ul></li>`);
  const tasks = (ts) => (ts || []).filter((t) => t.Type !== 'None').map((t) =>
    html`<li class="d-${t.Type}">task ${t.Name} (${t.Type.toLowerCase()})<ul>${fields(t.Fields)}${objects(t.Objects)}</ul></li>`);
  const groupsOf = (gs) => (gs || []).filter((g) => g.Type !== 'None').map((g) =>
    html`<li class="d-${g.Type}">group ${g.Name} (${g.Type.toLowerCase()})<ul>${fields(g.Fields)}${objects(g.Objects)}${tasks(g.Tasks)}</ul></li>`);
  return html`<ul class="diff">${fields(d.Fields)}${objects(d.Objects)}${groupsOf(d.TaskGroups)}</ul>`;
}

/** placement explains an evaluation's failed placements per group. */
export function placement(failed, evalID) {
  const entries = Object.entries(failed || {});
  if (!entries.length) return '';
  return html`<div class="warn"><strong>Placement failures</strong>${evalID ? html` of evaluation <a href="#/eval/${enc(evalID)}"><code>${short(evalID)}</code></a>` : ''}<ul>${entries.map(([g, m]) => html`<li>Group <code>${g}</code>:
${m.NodesEvaluated ?? 0} nodes evaluated, ${m.NodesFiltered ?? 0} filtered, ${m.NodesExhausted ?? 0} exhausted${m.CoalescedFailures ? `, ${m.CoalescedFailures + 1} unplaced allocations` : ''}.
<ul>${[...Object.entries(m.ConstraintFiltered || {}).map(([k, v]) => `Constraint ${k} filtered ${v} nodes`),
    ...Object.entries(m.ClassFiltered || {}).map(([k, v]) => `Class ${k} filtered ${v} nodes`),
    ...Object.entries(m.DimensionExhausted || {}).map(([k, v]) => `Resources exhausted: ${k} on ${v} nodes`),
    ...Object.entries(m.ClassExhausted || {}).map(([k, v]) => `Class ${k} exhausted on ${v} nodes`),
    ...Object.entries(m.QuotaExhausted || []).map(([, v]) => `Quota exhausted: ${v}`),
    ...(m.NodesAvailable ? Object.entries(m.NodesAvailable).map(([dc, n]) => `${n} nodes available in ${dc}`) : []),
  ].map((s) => html`<li>${s}</li>`)}</ul></li>`)}</ul></div>`;
}

/** allocRows are the table rows of allocations. */
export function allocRows(allocs) {
  return allocs.slice().sort((a, b) => (b.CreateIndex || 0) - (a.CreateIndex || 0)).map((a) => [
    html`<a href="#/alloc/${enc(a.ID)}"><code>${short(a.ID)}</code></a>`, a.Name, a.TaskGroup,
    a.NodeID ? html`<a href="#/node/${enc(a.NodeID)}"><code>${short(a.NodeID)}</code></a>` : '',
    a.DesiredStatus, badge(a.ClientStatus), a.JobVersion ?? (a.Job ? a.Job.Version : ''), when(a.CreateTime),
  ]);
}

export const allocHeaders = ['ID', 'Name', 'Group', 'Node', 'Desired', 'Status', 'Version', 'Created'];

export async function detail(ctx, session) {
  const [ns, id] = ctx.params;
  ctx.title('Job ' + id);
  const q = { namespace: ns };
  const base = '/v1/job/' + enc(id);
  const may = (cap) => session.caps.ns(ns, cap);
  ctx.show(html`<p class="crumbs"><a href="#/jobs?namespace=${ns}">Jobs</a> / ${ns}</p>
<div class="head"><h1>${id}</h1><div id="job-actions" class="actions"></div></div>
<div id="job-info"></div>
<section><h2>Summary</h2><div id="job-summary"></div></section>
<section id="job-children-section" hidden><h2>Children</h2><div id="job-children"></div></section>
<section><h2>Latest deployment</h2><div id="job-deployment"></div></section>
<section><h2>Allocations</h2><div id="job-allocs"></div></section>
<section><h2>Evaluations</h2><div id="job-evals"></div></section>
<section><h2>Versions</h2><div id="job-versions"></div></section>`);
  let job = null;
  // A parent's children: all of them, read again when the event stream
  // reports a job of this parent (launched, or changed).
  const loadChildren = () => allChildren(job, ctx.signal).then((list) =>
    ctx.region('job-children', html`<p class="muted">${list.length} ${list.length === 1 ? 'child' : 'children'}, newest first.</p>
${table(['Child', 'Status', 'Allocations', 'Submitted'], list.map((c) => [
    html`<a href="#/job/${enc(ns)}/${enc(c.ID)}">${c.ID}</a>`, badge(c.Status), statusBar(allocCounts(c.JobSummary), 'small'), when(c.SubmitTime)]), 'No children yet.')}`),
  (e) => ctx.region('job-children', errorBox(e)));
  let following = false;
  const followChildren = () => {
    if (following) return;
    following = true;
    let queued = null;
    stream(['Job'], ctx.signal, (events) => {
      if (!events.some((ev) => ((ev.Payload || {}).Job || {}).ParentID === id)) return;
      clearTimeout(queued);
      queued = setTimeout(loadChildren, 300); // a burst of changes, read once
    }, () => {}, ns);
  };
  const refresh = async () => {
    // Everything at once: the job, its summary, evaluations and versions.
    const rest = Promise.all([
      get(base + '/summary', q, ctx.signal).catch((e) => e),
      get(base + '/evaluations', q, ctx.signal).catch((e) => e),
      get(base + '/versions', { ...q, diffs: true }, ctx.signal).catch((e) => e),
    ]);
    try {
      job = (await get(base, q, ctx.signal)).data;
    } catch (e) {
      ctx.show(errorBox(e));
      ctx.ctrl.abort();
      return;
    }
    const btn = [];
    if (may('submit-job')) {
      btn.push(job.Stop
        ? html`<button type="button" data-action="start">Start</button>`
        : html`<button type="button" class="danger" data-action="stop" data-confirm="Stop job ${job.ID}?">Stop</button>`);
      if (job.Periodic && !job.Stop) btn.push(html`<button type="button" data-action="force">Force periodic launch</button>`);
    }
    if (job.ParameterizedJob && may('dispatch-job')) btn.push(html`<button type="button" data-action="dispatch">Dispatch</button>`);
    ctx.region('job-actions', btn);
    ctx.region('job-info', dl([['Status', badge(job.Status)], ['Type', job.Type], ['Version', job.Version], ['Priority', job.Priority],
      ['Namespace', job.Namespace], ['Datacenters', (job.Datacenters || []).join(', ')], ['Node pool', job.NodePool],
      ['Periodic', job.Periodic ? (job.Periodic.Specs && job.Periodic.Specs.length ? job.Periodic.Specs : [job.Periodic.Spec]).join(', ') + (job.Periodic.TimeZone ? ' ' + job.Periodic.TimeZone : '') : ''],
      ['Parameterized', job.ParameterizedJob ? 'payload ' + (job.ParameterizedJob.Payload || 'optional') + ((job.ParameterizedJob.MetaRequired || []).length ? ', meta ' + job.ParameterizedJob.MetaRequired.join(', ') : '') : ''],
      ['Parent', job.ParentID ? html`<a href="#/job/${enc(ns)}/${enc(job.ParentID)}">${job.ParentID}</a>` : ''],
      ['Submitted', when(job.SubmitTime)]]));
    if (job.Periodic || job.ParameterizedJob) {
      document.getElementById('job-children-section').hidden = false;
      loadChildren();
      followChildren();
    }
    const [summary, evalsR, versions] = await rest;
    ctx.region('job-summary', summary instanceof Error ? errorBox(summary) : html`${statusBar(allocCounts(summary.data), 'legend')}
${table(['Group', 'Queued', 'Starting', 'Running', 'Complete', 'Failed', 'Lost'],
    Object.entries(summary.data.Summary || {}).map(([g, s]) => [g, s.Queued, s.Starting, s.Running, s.Complete, s.Failed, s.Lost]))}`);
    if (!(evalsR instanceof Error)) evalsR.data.sort((a, b) => (b.CreateIndex || 0) - (a.CreateIndex || 0));
    ctx.region('job-evals', evalsR instanceof Error ? errorBox(evalsR) : html`${table(['ID', 'Triggered by', 'Status', 'Created'],
      evalsR.data.slice(0, 20).map((e) => [html`<a href="#/eval/${enc(e.ID)}"><code>${short(e.ID)}</code></a>`, e.TriggeredBy, badge(e.Status), when(e.CreateTime)]))}
${evalsR.data.filter((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length).slice(0, 1).map((e) => placement(e.FailedTGAllocs, e.ID))}`);
    if (versions instanceof Error) ctx.region('job-versions', errorBox(versions));
    else {
      const vs = versions.data.Versions || []; const ds = versions.data.Diffs || [];
      ctx.region('job-versions', vs.length ? html`<ol class="versions">${vs.map((v, i) => html`<li><details ${i === 0 ? raw('open') : ''}>
<summary>Version ${v.Version}${v.Stable ? ' (stable)' : ''} · ${when(v.SubmitTime)}</summary>
${i < ds.length ? diff(ds[i]) : html`<p class="muted">First version.</p>`}
${may('submit-job') && i > 0 ? html`<button type="button" data-action="revert" data-version="${v.Version}" data-confirm="Revert to version ${v.Version}?">Revert to this version</button>` : ''}
</details></li>`)}</ol>` : html`<p class="muted">None.</p>`);
    }
  };
  const deployment = (r) => {
    const d = r.data;
    if (!d) { ctx.region('job-deployment', html`<p class="muted">None.</p>`); return; }
    const groupsT = Object.entries(d.TaskGroups || {});
    const needsPromotion = d.Status === 'running' && groupsT.some(([, g]) => g.DesiredCanaries > 0 && !g.Promoted);
    const acts = [];
    if (d.Status === 'running' && may('submit-job')) {
      const ready = groupsT.every(([, g]) => !g.DesiredCanaries || g.Promoted || g.HealthyAllocs >= g.DesiredCanaries);
      if (needsPromotion) {
        acts.push(ready ? html`<button type="button" data-action="promote" data-id="${d.ID}">Promote canaries</button>`
          : html`<button type="button" disabled title="Waiting for the canaries to become healthy">Promote canaries (canaries not yet healthy)</button>`);
      }
      acts.push(html`<button type="button" class="danger" data-action="fail" data-id="${d.ID}" data-confirm="Fail deployment ${short(d.ID)}?">Fail deployment</button>`);
    }
    ctx.region('job-deployment', html`${dl([['ID', html`<code>${short(d.ID)}</code>`], ['Version', d.JobVersion], ['Status', badge(d.Status)], ['Description', d.StatusDescription]])}
${table(['Group', 'Desired', 'Canaries', 'Placed', 'Healthy', 'Unhealthy', 'Promoted', 'Progress deadline'], groupsT.map(([g, s]) =>
    [g, s.DesiredTotal, `${(s.PlacedCanaries || []).length} / ${s.DesiredCanaries}`, s.PlacedAllocs, s.HealthyAllocs, s.UnhealthyAllocs,
      s.DesiredCanaries ? (s.Promoted ? 'yes' : 'no') : '—', when(s.RequireProgressBy)]))}
<div class="actions">${acts}</div>`);
  };
  ctx.on('stop', async () => { await request('DELETE', base, { query: q }); flash('Job stopped.'); await refresh(); });
  ctx.on('start', async () => {
    const j = { ...job, Stop: false };
    await request('POST', '/v1/jobs', { query: q, body: { Job: j } });
    flash('Job started.'); await refresh();
  });
  ctx.on('force', async () => {
    const r = (await request('POST', base + '/periodic/force', { query: q, body: {} })).data;
    flash('Launched a child job' + (r.EvalID ? ' (evaluation ' + short(r.EvalID) + ')' : '') + '.'); await refresh();
  });
  ctx.on('dispatch', async () => {
    const payload = window.prompt('Payload (text, may be empty)', '');
    if (payload === null) return;
    const bytes = new TextEncoder().encode(payload);
    const r = (await request('POST', base + '/dispatch', { query: q, body: { Payload: payload ? btoa(String.fromCharCode(...bytes)) : '', Meta: {} } })).data;
    flash('Dispatched ' + r.DispatchedJobID + '.');
    go('#/job/' + enc(ns) + '/' + enc(r.DispatchedJobID));
  });
  ctx.on('revert', async (d) => {
    await request('POST', base + '/revert', { query: q, body: { JobID: id, JobVersion: Number(d.version) } });
    flash('Reverted to version ' + d.version + '.'); await refresh();
  });
  ctx.on('promote', async (d) => {
    await request('POST', '/v1/deployment/promote/' + enc(d.id), { query: q, body: { DeploymentID: d.id, All: true } });
    flash('Canaries promoted.');
  });
  ctx.on('fail', async (d) => {
    await request('POST', '/v1/deployment/fail/' + enc(d.id), { query: q, body: { DeploymentID: d.id } });
    flash('Deployment failed.');
  });
  // The job and the two watches start together; a missing job ends all.
  refresh();
  watch(base + '/deployment', q, ctx.signal, deployment, (e) => ctx.region('job-deployment', errorBox(e)));
  let first = true;
  await watch(base + '/allocations', q, ctx.signal, (r) => {
    ctx.region('job-allocs', table(allocHeaders, allocRows(r.data)));
    ctx.drawn();
    if (!first) refresh();
    first = false;
  }, (e) => ctx.region('job-allocs', errorBox(e)));
}
