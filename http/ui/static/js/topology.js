// The topology: every node, grouped by datacenter and node pool, drawn
// with its CPU and memory as bars split by the allocations placed on it
// (each part links to its allocation), kept current by the event stream.
import { get } from './api.js';
import { html, raw, enc, short, badge } from './html.js';
import { errorBox } from './app.js';
import { splitBar } from './charts.js';
import { stream, deleted } from './events.js';

// Resources come in Nomad's nested shapes (Cpu.CpuShares,
// Memory.MemoryMB); the flat ones of older agents too.
const cpu = (r) => (r && r.Cpu ? r.Cpu.CpuShares : r && r.CPU) || 0;
const mem = (r) => (r && r.Memory ? r.Memory.MemoryMB : r && r.MemoryMB) || 0;

/** live reports whether an allocation holds its node's resources. */
const live = (a) => a.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(a.ClientStatus);

/**
 * LIVE is live() as the API's filter: the list answers only the live
 * allocations, so its size follows what the picture shows and not the
 * stopped and failed ones the cluster still keeps.
 */
const LIVE = 'DesiredStatus == "run" and ClientStatus != "complete" and ClientStatus != "failed" and ClientStatus != "lost"';

/**
 * slim keeps what the picture uses of an allocation: a compact list
 * entry (CPU and MemoryMB summed) or a whole one from the event stream
 * (AllocatedResources by task).
 */
function slim(a) {
  const out = { ID: a.ID, Name: a.Name, NodeID: a.NodeID, cpu: 0, mem: 0 };
  if (a.AllocatedResources) {
    for (const t of Object.values(a.AllocatedResources.Tasks || {})) { out.cpu += cpu(t); out.mem += mem(t); }
  } else {
    out.cpu = a.CPU || 0; out.mem = a.MemoryMB || 0;
  }
  return out;
}

/** capacity is what a node offers: its resources less what it reserves. */
function capacity(n) {
  const nr = n.NodeResources || {}; const rr = n.ReservedResources || {};
  return { cpu: cpu(nr) - cpu(rr), mem: mem(nr) - mem(rr) };
}

/** nodeCard draws one node with its bars (allocs are slim). */
function nodeCard(n, allocs) {
  const cap = capacity(n);
  const parts = (key) => allocs.map((a) => ({ id: a.ID, label: `${a.Name} (${short(a.ID)})`, value: a[key], href: '#/alloc/' + enc(a.ID) }));
  return html`<article class="topo-node s-${n.Status}" id="topo-${n.ID}" data-node="${n.ID}">
<h4><a href="#/node/${enc(n.ID)}">${n.Name}</a> ${badge(n.Status)}${n.SchedulingEligibility === 'ineligible' ? html` <span class="badge">ineligible</span>` : ''}
<span class="muted">${allocs.length} alloc${allocs.length === 1 ? '' : 's'}</span></h4>
${splitBar('CPU', 'MHz', cap.cpu, parts('cpu'))}${splitBar('Memory', 'MB', cap.mem, parts('mem'))}</article>`.toString();
}

/**
 * firstScreen is how many node cards fill a screen (cards are at least
 * 220 px wide and about 92 px high): the page draws those at once and
 * the rest in the tasks that follow.
 */
const firstScreen = () => Math.ceil(innerWidth / 220) * Math.ceil(innerHeight / 90);

/** CHUNK is how many further cards one task draws. */
const CHUNK = 200;

export async function view(ctx) {
  ctx.title('Topology');
  ctx.show(html`<h1>Topology</h1><p id="topo-sum" class="muted"></p><div id="topo"><p class="muted">Loading…</p></div>`);
  const nodes = new Map(); // ID → node
  const allocs = new Map(); // ID → live allocation, slim
  const byNode = () => {
    const m = new Map();
    for (const a of allocs.values()) {
      if (!m.has(a.NodeID)) m.set(a.NodeID, []);
      m.get(a.NodeID).push(a);
    }
    for (const list of m.values()) list.sort((a, b) => (a.Name < b.Name ? -1 : 1));
    return m;
  };
  const summary = (on) => {
    let c = 0; let cc = 0; let m = 0; let mc = 0;
    for (const n of nodes.values()) { const k = capacity(n); cc += k.cpu; mc += k.mem; }
    for (const a of allocs.values()) { c += a.cpu; m += a.mem; }
    const dcs = new Set([...nodes.values()].map((n) => n.Datacenter));
    const n = (k, word) => `${k} ${word}${k === 1 ? '' : 's'}`;
    ctx.region('topo-sum', html`${n(nodes.size, 'node')} in ${n(dcs.size, 'datacenter')}, ${n(allocs.size, 'allocation')};
CPU ${c} / ${cc} MHz, memory ${m} / ${mc} MB allocated.${on ? '' : ' Not following changes.'}`);
  };
  // draw lays out every datacenter and pool with the first screenful of
  // node cards, and adds the others CHUNK at a time in the tasks that
  // follow, so that the first screen shows before the thousandth card is
  // built. A newer draw ends an older one's chunks; a card changed
  // meanwhile is drawn from the current state when its turn comes.
  let generation = 0;
  const draw = (done) => {
    const gen = ++generation;
    // Datacenter, then pool, then node name.
    const groups = new Map();
    for (const n of [...nodes.values()].sort((a, b) => (a.Name < b.Name ? -1 : 1))) {
      const k = n.Datacenter + '\u0000' + n.NodePool;
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(n);
    }
    const keys = [...groups.keys()].sort();
    const queue = []; // [pool index, node], in page order
    keys.forEach((k, i) => { for (const n of groups.get(k)) queue.push([i, n]); });
    let per = byNode();
    const first = firstScreen();
    let dc = null;
    const out = [];
    keys.forEach((k, i) => {
      const [d, pool] = k.split('\u0000');
      if (d !== dc) { if (dc !== null) out.push(html`</section>`); out.push(html`<section class="topo-dc" data-dc="${d}"><h2>Datacenter ${d}</h2>`); dc = d; }
      const list = groups.get(k);
      const cards = queue.slice(0, first).filter(([p]) => p === i).map(([, n]) => nodeCard(n, per.get(n.ID) || []));
      out.push(html`<h3>Node pool ${pool} <span class="muted">(${list.length} node${list.length === 1 ? '' : 's'})</span></h3>
<div class="topo-nodes" id="topo-pool-${i}" data-pool="${pool}">${raw(cards.join(''))}</div>`);
    });
    if (dc !== null) out.push(html`</section>`);
    ctx.region('topo', out.length ? out : html`<p class="muted">No nodes.</p>`);
    let at = first;
    const more = () => {
      if (gen !== generation || ctx.signal.aborted) return;
      if (at >= queue.length) { if (done) done(); return; }
      per = byNode();
      const end = Math.min(at + CHUNK, queue.length);
      // One insertion per pool the chunk touches.
      let pool = -1; let buf = '';
      const flush = () => { if (buf) document.getElementById('topo-pool-' + pool)?.insertAdjacentHTML('beforeend', buf); buf = ''; };
      for (; at < end; at++) {
        const [p, n] = queue[at];
        if (p !== pool) { flush(); pool = p; }
        const now = nodes.get(n.ID);
        if (now) buf += nodeCard(now, per.get(n.ID) || []);
      }
      flush();
      setTimeout(more, 0);
    };
    setTimeout(more, 0);
  };
  let following = true;
  // The lists first, then changes as the event stream reports them; a
  // burst of changes is drawn once (one frame).
  const [nr, ar] = await Promise.all([
    get('/v1/nodes', { resources: true }, ctx.signal),
    // The live allocations in their compact form: about a third of the
    // bytes of stubs with their resources.
    get('/v1/allocations', { namespace: '*', compact: true, filter: LIVE }, ctx.signal),
  ]).catch((e) => { ctx.region('topo', errorBox(e)); return [null, null]; });
  if (!nr) return;
  for (const n of nr.data) nodes.set(n.ID, n);
  for (const a of ar.data) if (live(a)) allocs.set(a.ID, slim(a));
  // Meaningful: the summary, and every node of the first screen with its
  // allocations in its bars; the rest of the cards follow.
  draw(() => performance.mark('sched:topology-all'));
  summary(following);
  ctx.drawn();
  let pending = false;
  let full = false;
  const touched = new Set();
  const later = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (ctx.signal.aborted) return;
      if (full) { full = false; touched.clear(); draw(); summary(following); return; }
      const per = byNode();
      for (const id of touched) {
        const el = document.getElementById('topo-' + id);
        const n = nodes.get(id);
        if (el && n) el.outerHTML = nodeCard(n, per.get(id) || []);
      }
      touched.clear();
      summary(following);
    });
  };
  await stream(['Node', 'Allocation'], ctx.signal, (events) => {
    for (const ev of events) {
      const p = ev.Payload || {};
      if (ev.Topic === 'Node' && p.Node) {
        const known = nodes.get(p.Node.ID);
        if (deleted(ev)) { nodes.delete(p.Node.ID); full = true; continue; }
        if (!known || known.Datacenter !== p.Node.Datacenter || known.NodePool !== p.Node.NodePool || known.Name !== p.Node.Name) full = true;
        nodes.set(p.Node.ID, p.Node);
        touched.add(p.Node.ID);
      } else if (ev.Topic === 'Allocation' && p.Allocation) {
        const a = p.Allocation;
        const before = allocs.get(a.ID);
        if (before) touched.add(before.NodeID);
        if (!deleted(ev) && live(a)) allocs.set(a.ID, slim(a)); else allocs.delete(a.ID);
        touched.add(a.NodeID);
      }
    }
    later();
  }, () => { following = false; summary(following); });
}
