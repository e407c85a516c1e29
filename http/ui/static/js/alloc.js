// An allocation's page: task states and events, addresses, CPU and
// memory charts, a terminal (exec), live logs.
import { get, watch, follow } from './api.js';
import { html, enc, short, when, badge, table, dl, esc } from './html.js';
import { errorBox } from './app.js';
import { lineChart, sample, Series, fmtBytes } from './charts.js';
import { panel, open } from './exec.js';

/** WINDOW is how far back the charts go; SAMPLE how often they read. */
export const WINDOW = 5 * 60 * 1000;
export const SAMPLE = 2000;

/** usage reads an allocation's stats as {cpu: MHz, mem: bytes}. */
export async function usage(id, signal) {
  const r = (await get('/v1/client/allocation/' + enc(id) + '/stats', {}, signal)).data || {};
  const u = r.ResourceUsage || {};
  return { cpu: (u.CpuStats || {}).TotalTicks || 0, mem: (u.MemoryStats || {}).RSS || 0 };
}

/** charts draws the CPU and memory series. */
export function charts(cpu, mem) {
  return html`${lineChart('CPU', cpu.points, WINDOW, (v) => Math.round(v) + ' MHz')}${lineChart('Memory', mem.points, WINDOW, fmtBytes)}`;
}

const MAX_LOG = 256 * 1024; // characters of log kept on the page

export async function detail(ctx, session) {
  const [id] = ctx.params;
  ctx.title('Allocation ' + short(id));
  ctx.show(html`<p class="crumbs" id="crumbs"></p><h1>Allocation <code>${short(id)}</code></h1>
<div id="alloc-info"></div>
<section><h2>Tasks</h2><div id="alloc-tasks"></div></section>
<section><h2>Addresses</h2><div id="alloc-addrs"></div></section>
<section id="alloc-use-section" hidden><h2>Resource use</h2><p class="muted">Sampled every ${SAMPLE / 1000} s while this page is open.</p><div id="alloc-use" class="charts"></div></section>
<section id="alloc-exec-section" hidden><h2>Exec</h2><div id="alloc-exec"></div></section>
<section><h2>Logs</h2>
<form class="filters" data-form="logs"><label>Task <select name="task" id="log-task"></select></label>
<fieldset class="seg"><legend>Stream</legend>
<label><input type="radio" name="type" value="stdout" checked> stdout</label>
<label><input type="radio" name="type" value="stderr"> stderr</label></fieldset>
<button type="submit">Show</button></form>
<pre id="logs" class="logs" tabindex="0" aria-label="Log output" aria-live="off"></pre></section>`);
  let logCtl = null;
  let tasksKnown = '';
  // The node's address, for ports assigned without a host IP: read once
  // per node (node:read); without it the node's name stands in.
  let host = null;
  const nodeHost = (a) => {
    if (host && host.id === a.NodeID) return host;
    host = { id: a.NodeID, addr: a.NodeName || short(a.NodeID) };
    get('/v1/node/' + enc(a.NodeID), {}, ctx.signal).then((r) => {
      const n = r.data || {};
      const ip = (n.Attributes || {})['unique.network.ip-address'] || String(n.HTTPAddr || '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
      if (ip && host.id === a.NodeID) { host.addr = ip; ports(a); }
    }, () => {});
    return host;
  };
  const ports = (a) => {
    const res = a.AllocatedResources || {};
    // Shared.Ports lists every port; older allocations have only Networks.
    const list = [...((res.Shared || {}).Ports || [])];
    if (!list.length) {
      for (const n of (res.Shared || {}).Networks || []) for (const p of [...(n.ReservedPorts || []), ...(n.DynamicPorts || [])]) list.push({ Label: p.Label, Value: p.Value, HostIP: n.IP, To: p.To });
    }
    const at = (ip, port) => (String(ip).includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);
    const h = list.some((p) => !p.HostIP) ? nodeHost(a) : null;
    ctx.region('alloc-addrs', table(['Label', 'Host port', 'Address', 'To'], list.map((p) => [p.Label, p.Value, at(p.HostIP || h.addr, p.Value), p.To || '']), 'No ports.'));
  };
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
  // CPU and memory, sampled from the stats endpoint once the allocation
  // runs, for as long as the page is open.
  const cpu = new Series(WINDOW); const mem = new Series(WINDOW);
  let sampling = false;
  const startSampling = () => {
    if (sampling) return;
    sampling = true;
    document.getElementById('alloc-use-section').hidden = false;
    ctx.region('alloc-use', charts(cpu, mem));
    sample(() => usage(id, ctx.signal), SAMPLE, ctx.signal, (t, u) => {
      cpu.add(t, u.cpu); mem.add(t, u.mem);
      ctx.region('alloc-use', charts(cpu, mem));
    });
  };
  // The terminal: shown to a token with alloc-exec in the namespace.
  let alloc = null;
  let closeExec = null;
  let execTasks = '';
  ctx.onSubmit('exec', (form) => {
    if (closeExec) closeExec();
    closeExec = open(alloc, form.task.value, form.command.value, ctx.signal);
    form.querySelector('[data-action=exec-close]').hidden = false;
  });
  ctx.on('exec-close', (d, el) => { if (closeExec) closeExec(); closeExec = null; el.hidden = true; });
  await watch('/v1/allocation/' + enc(id), {}, ctx.signal, (r) => {
    const a = r.data;
    alloc = a;
    ctx.region('crumbs', html`<a href="#/jobs?namespace=${a.Namespace}">Jobs</a> / <a href="#/job/${enc(a.Namespace)}/${enc(a.JobID)}">${a.JobID}</a> / ${a.TaskGroup}`);
    ctx.region('alloc-info', dl([['Name', a.Name], ['Status', badge(a.ClientStatus)], ['Description', a.ClientDescription],
      ['Desired', a.DesiredStatus + (a.DesiredDescription ? ': ' + a.DesiredDescription : '')],
      ['Node', html`<a href="#/node/${enc(a.NodeID)}">${a.NodeName || short(a.NodeID)}</a>`], ['Job version', a.Job ? a.Job.Version : ''],
      ['Deployment', a.DeploymentID ? html`<code>${short(a.DeploymentID)}</code>${a.DeploymentStatus ? ` healthy: ${a.DeploymentStatus.Healthy ?? 'pending'}${a.DeploymentStatus.Canary ? ', canary' : ''}` : ''}` : ''],
      ['Evaluation', html`<a href="#/eval/${enc(a.EvalID)}"><code>${short(a.EvalID)}</code></a>`],
      ['Preempted by', a.PreemptedByAllocation ? html`<a href="#/alloc/${enc(a.PreemptedByAllocation)}" id="preempted-by"><code>${short(a.PreemptedByAllocation)}</code></a>` : ''],
      ['Preempted', (a.PreemptedAllocations || []).length ? a.PreemptedAllocations.map((p, i) => html`${i ? ', ' : ''}<a href="#/alloc/${enc(p)}"><code>${short(p)}</code></a>`) : ''],
      ['Created', when(a.CreateTime)], ['Modified', when(a.ModifyTime)]]));
    const states = Object.entries(a.TaskStates || {});
    ctx.region('alloc-tasks', states.length ? states.map(([name, s]) => html`<div class="card"><h3>${name} ${badge(s.State)}${s.Failed ? ' failed' : ''}</h3>
${dl([['Started', when(s.StartedAt)], ['Finished', when(s.FinishedAt)], ['Restarts', s.Restarts]])}
${table(['Time', 'Type', 'Message'], (s.Events || []).slice().reverse().map((e) => [when(e.Time), e.Type, e.DisplayMessage || e.Message]), 'No events.')}</div>`)
      : html`<p class="muted">No task has started yet.</p>`);
    ports(a);
    ctx.drawn();
    if (a.ClientStatus === 'running') startSampling();
    const names = Object.keys((a.Job && a.Job.TaskGroups || []).find((g) => g.Name === a.TaskGroup)?.Tasks?.reduce((m, t) => ({ ...m, [t.Name]: 1 }), {}) || a.TaskStates || {});
    if (names.join() !== tasksKnown) {
      tasksKnown = names.join();
      const sel = document.getElementById('log-task');
      sel.innerHTML = names.map((n) => `<option>${esc(n)}</option>`).join('');
      if (names.length && !logCtl && a.ClientStatus !== 'pending') startLogs(names[0], 'stdout');
    }
    if (!logCtl && names.length && a.ClientStatus !== 'pending') startLogs(names[0], 'stdout');
    const running = Object.entries(a.TaskStates || {}).filter(([, st]) => st.State === 'running').map(([n]) => n).sort();
    const mayExec = session.caps.ns(a.Namespace || 'default', 'alloc-exec') && running.length > 0;
    document.getElementById('alloc-exec-section').hidden = !mayExec && !closeExec;
    if (mayExec && running.join() !== execTasks && !closeExec) {
      execTasks = running.join();
      ctx.region('alloc-exec', panel(running));
    }
  }, (e) => ctx.region('alloc-info', errorBox(e)));
}
