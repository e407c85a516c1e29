// An allocation's page: task states and events, addresses, live logs.
import { watch, follow } from './api.js';
import { html, enc, short, when, badge, table, dl, esc } from './html.js';
import { errorBox } from './app.js';

const MAX_LOG = 256 * 1024; // characters of log kept on the page

export async function detail(ctx) {
  const [id] = ctx.params;
  ctx.title('Allocation ' + short(id));
  ctx.show(html`<p class="crumbs" id="crumbs"></p><h1>Allocation <code>${short(id)}</code></h1>
<div id="alloc-info"></div>
<section><h2>Tasks</h2><div id="alloc-tasks"></div></section>
<section><h2>Addresses</h2><div id="alloc-addrs"></div></section>
<section><h2>Logs</h2>
<form class="filters" data-form="logs"><label>Task <select name="task" id="log-task"></select></label>
<fieldset class="seg"><legend>Stream</legend>
<label><input type="radio" name="type" value="stdout" checked> stdout</label>
<label><input type="radio" name="type" value="stderr"> stderr</label></fieldset>
<button type="submit">Show</button></form>
<pre id="logs" class="logs" tabindex="0" aria-label="Log output" aria-live="off"></pre></section>`);
  let logCtl = null;
  let tasksKnown = '';
  const startLogs = (task, type) => {
    if (logCtl) logCtl.abort();
    logCtl = new AbortController();
    ctx.signal.addEventListener('abort', () => logCtl.abort(), { once: true });
    const pre = document.getElementById('logs');
    pre.textContent = '';
    pre.dataset.task = task; pre.dataset.type = type;
    follow('/v1/client/fs/logs/' + enc(id), { task, type, follow: 'true', plain: 'true', origin: 'start', offset: '0' }, logCtl.signal, (text) => {
      let t = pre.textContent + text;
      if (t.length > MAX_LOG) t = t.slice(t.length - MAX_LOG);
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = t;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }).catch((e) => {
      if (e.name !== 'AbortError') pre.insertAdjacentHTML('afterend', errorBox(e).toString());
    });
  };
  ctx.onSubmit('logs', (form) => startLogs(form.task.value, form.type.value));
  await watch('/v1/allocation/' + enc(id), {}, ctx.signal, (r) => {
    const a = r.data;
    ctx.region('crumbs', html`<a href="#/jobs?namespace=${a.Namespace}">Jobs</a> / <a href="#/job/${enc(a.Namespace)}/${enc(a.JobID)}">${a.JobID}</a> / ${a.TaskGroup}`);
    ctx.region('alloc-info', dl([['Name', a.Name], ['Status', badge(a.ClientStatus)], ['Description', a.ClientDescription],
      ['Desired', a.DesiredStatus + (a.DesiredDescription ? ': ' + a.DesiredDescription : '')],
      ['Node', html`<a href="#/node/${enc(a.NodeID)}">${a.NodeName || short(a.NodeID)}</a>`], ['Job version', a.Job ? a.Job.Version : ''],
      ['Deployment', a.DeploymentID ? html`<code>${short(a.DeploymentID)}</code>${a.DeploymentStatus ? ` healthy: ${a.DeploymentStatus.Healthy ?? 'pending'}${a.DeploymentStatus.Canary ? ', canary' : ''}` : ''}` : ''],
      ['Evaluation', html`<a href="#/eval/${enc(a.EvalID)}"><code>${short(a.EvalID)}</code></a>`],
      ['Created', when(a.CreateTime)], ['Modified', when(a.ModifyTime)]]));
    const states = Object.entries(a.TaskStates || {});
    ctx.region('alloc-tasks', states.length ? states.map(([name, s]) => html`<div class="card"><h3>${name} ${badge(s.State)}${s.Failed ? ' failed' : ''}</h3>
${dl([['Started', when(s.StartedAt)], ['Finished', when(s.FinishedAt)], ['Restarts', s.Restarts]])}
${table(['Time', 'Type', 'Message'], (s.Events || []).slice().reverse().map((e) => [when(e.Time), e.Type, e.DisplayMessage || e.Message]), 'No events.')}</div>`)
      : html`<p class="muted">No task has started yet.</p>`);
    const res = a.AllocatedResources || {};
    // Shared.Ports lists every port; older allocations have only Networks.
    const ports = [...((res.Shared || {}).Ports || [])];
    if (!ports.length) {
      for (const n of (res.Shared || {}).Networks || []) for (const p of [...(n.ReservedPorts || []), ...(n.DynamicPorts || [])]) ports.push({ Label: p.Label, Value: p.Value, HostIP: n.IP, To: p.To });
    }
    ctx.region('alloc-addrs', table(['Label', 'Host port', 'Address', 'To'], ports.map((p) => [p.Label, p.Value, p.HostIP ? `${p.HostIP}:${p.Value}` : `(node address):${p.Value}`, p.To || '']), 'No ports.'));
    const names = Object.keys((a.Job && a.Job.TaskGroups || []).find((g) => g.Name === a.TaskGroup)?.Tasks?.reduce((m, t) => ({ ...m, [t.Name]: 1 }), {}) || a.TaskStates || {});
    if (names.join() !== tasksKnown) {
      tasksKnown = names.join();
      const sel = document.getElementById('log-task');
      sel.innerHTML = names.map((n) => `<option>${esc(n)}</option>`).join('');
      if (names.length && !logCtl && a.ClientStatus !== 'pending') startLogs(names[0], 'stdout');
    }
    if (!logCtl && names.length && a.ClientStatus !== 'pending') startLogs(names[0], 'stdout');
  }, (e) => ctx.region('alloc-info', errorBox(e)));
}
