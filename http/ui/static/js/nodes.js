// Nodes: the list (live) and a node's page with eligibility, drain,
// allocations and resources used against available.
import { request, watch } from './api.js';
import { html, enc, short, when, badge, table, dl, meter } from './html.js';
import { errorBox, flash } from './app.js';
import { allocRows, allocHeaders } from './jobs.js';
import { sample, Series } from './charts.js';
import { usage, charts, WINDOW, SAMPLE } from './alloc.js';

/** SAMPLED is how many running allocations a node's charts add up. */
const SAMPLED = 20;

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

/** ALLOC_PAGE is how many allocations a node's page shows at once. */
const ALLOC_PAGE = 25;

const live = (a) => a.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(a.ClientStatus);

export async function detail(ctx, session) {
  const [id] = ctx.params;
  ctx.title('Node ' + short(id));
  const base = '/v1/node/' + enc(id);
  ctx.show(html`<p class="crumbs"><a href="#/nodes">Nodes</a></p><div class="head"><h1 id="node-name">Node <code>${short(id)}</code></h1><div id="node-actions" class="actions"></div></div>
<div id="node-info"></div><section><h2>Resources</h2><div id="node-res"></div></section>
<section><h2>Resource use</h2><p class="muted" id="node-use-note">The sum of its running allocations' use, sampled every ${SAMPLE / 1000} s while this page is open.</p><div id="node-use" class="charts"></div></section>
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
  // The allocations, newest first, a page at a time (the page stays put
  // when the list moves).
  let pg = 0;
  const allocTable = () => {
    const rows = allocRows(allocs);
    const pages = Math.max(1, Math.ceil(rows.length / ALLOC_PAGE));
    pg = Math.min(pg, pages - 1);
    const from = pg * ALLOC_PAGE;
    ctx.region('node-allocs', html`${table(allocHeaders, rows.slice(from, from + ALLOC_PAGE))}
${pages > 1 ? html`<nav class="pager" aria-label="Pages of allocations">
${pg > 0 ? html`<button type="button" data-action="allocs-page" data-page="${pg - 1}">← Previous</button>` : ''}
<span>${from + 1}–${Math.min(from + ALLOC_PAGE, rows.length)} of ${rows.length}</span>
${pg < pages - 1 ? html`<button type="button" data-action="allocs-page" data-page="${pg + 1}">Next →</button>` : ''}</nav>` : ''}`);
  };
  // CPU and memory in use: the sum of the running allocations' stats.
  const cpuS = new Series(WINDOW); const memS = new Series(WINDOW);
  ctx.region('node-use', charts(cpuS, memS));
  let allocsRead = false;
  sample(async () => {
    if (!allocsRead) return undefined; // nothing to add up yet
    const running = allocs.filter((a) => a.ClientStatus === 'running').slice(0, SAMPLED);
    const us = await Promise.all(running.map((a) => usage(a.ID, ctx.signal).catch(() => ({ cpu: 0, mem: 0 }))));
    return us.reduce((t, u) => ({ cpu: t.cpu + u.cpu, mem: t.mem + u.mem }), { cpu: 0, mem: 0 });
  }, SAMPLE, ctx.signal, (t, u) => {
    cpuS.add(t, u.cpu); memS.add(t, u.mem);
    ctx.region('node-use', charts(cpuS, memS));
  });
  ctx.on('allocs-page', (d) => { pg = Number(d.page); allocTable(); });
  await watch(base + '/allocations', {}, ctx.signal, (r) => {
    allocs = r.data;
    allocsRead = true;
    allocTable();
    resources();
  }, (e) => ctx.region('node-allocs', errorBox(e)));
}
