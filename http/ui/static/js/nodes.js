// Nodes: the list (live) and a node's page with eligibility, drain,
// allocations and resources used against available.
import { request, watch } from './api.js';
import { html, enc, short, when, badge, table, dl, meter } from './html.js';
import { errorBox, flash } from './app.js';
import { allocRows, allocHeaders } from './jobs.js';

export async function list(ctx) {
  ctx.title('Nodes');
  ctx.show(html`<h1>Nodes</h1><div id="nodes"></div>`);
  await watch('/v1/nodes', {}, ctx.signal, (r) => {
    ctx.region('nodes', table(['Name', 'ID', 'Datacenter', 'Pool', 'Status', 'Eligibility', 'Drain'], r.data.map((n) => [
      html`<a href="#/node/${enc(n.ID)}">${n.Name}</a>`, html`<code>${short(n.ID)}</code>`, n.Datacenter, n.NodePool,
      badge(n.Status), n.SchedulingEligibility, n.Drain ? 'draining' : 'no'])));
    ctx.drawn();
  }, (e) => ctx.region('nodes', errorBox(e)));
}

const live = (a) => a.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(a.ClientStatus);

export async function detail(ctx, session) {
  const [id] = ctx.params;
  ctx.title('Node ' + short(id));
  const base = '/v1/node/' + enc(id);
  ctx.show(html`<p class="crumbs"><a href="#/nodes">Nodes</a></p><div class="head"><h1 id="node-name">Node <code>${short(id)}</code></h1><div id="node-actions" class="actions"></div></div>
<div id="node-info"></div><section><h2>Resources</h2><div id="node-res"></div></section>
<section><h2>Allocations</h2><div id="node-allocs"></div></section>`);
  let node = null;
  let allocs = [];
  const resources = () => {
    if (!node) return;
    // Resources come in Nomad's nested shapes (Cpu.CpuShares,
    // Memory.MemoryMB, Disk.DiskMB); the flat ones of older agents too.
    const cpu = (r) => (r && r.Cpu ? r.Cpu.CpuShares : r && r.CPU) || 0;
    const mem = (r) => (r && r.Memory ? r.Memory.MemoryMB : r && r.MemoryMB) || 0;
    const disk = (r) => (r && r.Disk ? r.Disk.DiskMB : r && r.DiskMB) || 0;
    const nr = node.NodeResources || {}; const rr = node.ReservedResources || {};
    const used = { cpu: 0, mem: 0, disk: 0 };
    for (const a of allocs.filter(live)) {
      const ar = a.AllocatedResources || {};
      for (const t of Object.values(ar.Tasks || {})) { used.cpu += cpu(t); used.mem += mem(t); }
      used.disk += (ar.Shared || {}).DiskMB || 0;
    }
    ctx.region('node-res', html`${meter('CPU', used.cpu, cpu(nr) - cpu(rr), 'MHz')}
${meter('Memory', used.mem, mem(nr) - mem(rr), 'MB')}${meter('Disk', used.disk, disk(nr) - disk(rr), 'MB')}`);
  };
  const canWrite = session.caps.nodeWrite();
  ctx.on('eligibility', async (d) => {
    await request('POST', base + '/eligibility', { body: { NodeID: id, Eligibility: d.to } });
    flash('Node marked ' + d.to + '.');
  });
  ctx.on('drain', async (d) => {
    const on = d.to === 'on';
    await request('POST', base + '/drain', { body: { NodeID: id, DrainSpec: on ? { Deadline: 3600e9, IgnoreSystemJobs: false } : null, MarkEligible: !on } });
    flash(on ? 'Drain started.' : 'Drain stopped.');
  });
  watch(base, {}, ctx.signal, (r) => {
    node = r.data;
    ctx.region('node-name', html`Node ${node.Name}`);
    ctx.region('node-actions', canWrite ? html`${node.SchedulingEligibility === 'eligible'
      ? html`<button type="button" data-action="eligibility" data-to="ineligible">Mark ineligible</button>`
      : html`<button type="button" data-action="eligibility" data-to="eligible">Mark eligible</button>`}
${node.Drain ? html`<button type="button" data-action="drain" data-to="off">Stop drain</button>`
    : html`<button type="button" class="danger" data-action="drain" data-to="on" data-confirm="Drain node ${node.Name}?">Drain</button>`}` : '');
    ctx.region('node-info', dl([['ID', html`<code>${node.ID}</code>`], ['Status', badge(node.Status)], ['Eligibility', node.SchedulingEligibility],
      ['Drain', node.Drain ? 'draining' + (node.DrainStrategy && node.DrainStrategy.ForceDeadline ? ' until ' + when(node.DrainStrategy.ForceDeadline) : '') : 'no'],
      ['Datacenter', node.Datacenter], ['Node pool', node.NodePool], ['Class', node.NodeClass], ['Address', node.HTTPAddr],
      ['Drivers', Object.keys(node.Drivers || {}).join(', ')], ['Status updated', node.StatusUpdatedAt ? when(node.StatusUpdatedAt * 1e9) : '']]));
    resources();
  }, (e) => ctx.region('node-info', errorBox(e)));
  await watch(base + '/allocations', {}, ctx.signal, (r) => {
    allocs = r.data;
    ctx.region('node-allocs', table(allocHeaders, allocRows(allocs)));
    resources();
  }, (e) => ctx.region('node-allocs', errorBox(e)));
}
