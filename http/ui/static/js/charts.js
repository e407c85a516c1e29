// Pictures drawn as SVG: a job's allocation-status bar, bars split into
// parts (a node's CPU and memory by allocation), and line charts of
// samples over time, with the sampler that feeds them.
import { html, raw, esc } from './html.js';

/** The allocation states a status bar shows, in order, with their colours' classes. */
const STATES = ['running', 'pending', 'failed', 'complete', 'lost'];

/** allocCounts sums a job summary's groups into the status bar's states. */
export function allocCounts(summary) {
  const out = { running: 0, pending: 0, failed: 0, complete: 0, lost: 0 };
  for (const g of Object.values((summary || {}).Summary || {})) {
    out.running += g.Running || 0;
    out.pending += (g.Queued || 0) + (g.Starting || 0);
    out.failed += g.Failed || 0;
    out.complete += g.Complete || 0;
    out.lost += g.Lost || 0;
  }
  return out;
}

/**
 * statusBar draws counts by state as one bar of proportional parts;
 * kind 'legend' adds the counts below it, 'small' is the list's size.
 * Nothing is drawn when every count is zero.
 */
export function statusBar(counts, kind = '') {
  const total = STATES.reduce((n, s) => n + (counts[s] || 0), 0);
  if (!total) return '';
  let x = 0;
  const parts = STATES.filter((s) => counts[s]).map((s) => {
    const w = (counts[s] / total) * 100;
    const r = `<rect class="st-${s}" x="${x.toFixed(3)}" y="0" width="${w.toFixed(3)}" height="10" data-state="${s}" data-count="${counts[s]}"><title>${s}: ${counts[s]}</title></rect>`;
    x += w;
    return r;
  }).join('');
  const label = STATES.filter((s) => counts[s]).map((s) => `${counts[s]} ${s}`).join(', ');
  return html`<div class="statusbar ${kind}"><svg viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label="Allocations: ${label}">${raw(parts)}</svg>
${kind === 'legend' ? html`<ul class="legend">${STATES.filter((s) => counts[s]).map((s) => html`<li><span class="sw st-${s}"></span>${counts[s]} ${s}</li>`)}</ul>` : ''}</div>`;
}

/**
 * splitBar draws capacity as a bar whose parts are the given uses, each
 * {label, value, href}: a part links to its href. The rest is free.
 */
export function splitBar(label, unit, capacity, parts) {
  const used = parts.reduce((n, p) => n + p.value, 0);
  const scale = Math.max(capacity, used) || 1;
  let x = 0;
  const rects = parts.filter((p) => p.value > 0).map((p, i) => {
    const w = (p.value / scale) * 100;
    const r = `<a href="${esc(p.href)}" data-alloc="${esc(p.id || '')}"><rect class="part p${i % 6}" x="${x.toFixed(3)}" y="0" width="${w.toFixed(3)}" height="10"><title>${esc(p.label)}: ${p.value} ${esc(unit)}</title></rect></a>`;
    x += w;
    return r;
  }).join('');
  const pct = capacity > 0 ? Math.round((used / capacity) * 100) : 0;
  return html`<div class="splitbar"><span class="sb-label">${label} <span class="muted">${used} / ${capacity} ${unit} (${pct}%)</span></span>
<svg viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label="${label}: ${used} of ${capacity} ${unit} allocated"><rect class="free" x="0" y="0" width="100" height="10"></rect>${raw(rects)}</svg></div>`;
}

/** fmtBytes writes a byte count for an axis. */
export function fmtBytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + ' GiB';
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MiB';
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(0) + ' KiB';
  return String(Math.round(n)) + ' B';
}

/**
 * lineChart draws samples [{t: ms, v}] over the window (ms, ending now)
 * as a line with its latest value and the highest one; fmt writes a value.
 */
export function lineChart(title, samples, windowMs, fmt, now = Date.now()) {
  const W = 300; const H = 80;
  // Until the window has filled, the chart spans the samples taken (a
  // minute at least), so that the first ones are not a dot at its edge.
  windowMs = samples.length ? Math.min(windowMs, Math.max(60000, now - samples[0].t)) : windowMs;
  const max = Math.max(...samples.map((s) => s.v), 0) || 1;
  const pts = samples.filter((s) => s.t >= now - windowMs).map((s) => {
    const x = W - ((now - s.t) / windowMs) * W;
    const y = H - (s.v / max) * (H - 4);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  const latest = samples.length ? samples[samples.length - 1].v : null;
  return html`<figure class="chart" data-samples="${samples.length}"><figcaption>${title}: <strong>${latest === null ? '—' : fmt(latest)}</strong>
<span class="muted">(peak ${fmt(max === 1 && !samples.some((s) => s.v) ? 0 : max)}, last ${Math.round(windowMs / 60000)} min)</span></figcaption>
<svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="${title} over the last ${Math.round(windowMs / 60000)} minutes">
<line class="axis" x1="0" y1="${H - 0.5}" x2="${W}" y2="${H - 0.5}"></line>
${pts.length > 1 ? raw(`<polyline class="line" points="${pts.join(' ')}"></polyline>`) : ''}
${pts.length ? raw(`<circle class="dot" r="2.5" cx="${pts[pts.length - 1].split(',')[0]}" cy="${pts[pts.length - 1].split(',')[1]}"></circle>`) : ''}</svg></figure>`;
}

/**
 * sample calls read every interval ms until signal aborts, and hands
 * each value it returns, with its time, to onSample; the first call is at
 * once. A read that fails is skipped: the next one tries again.
 */
export async function sample(read, interval, signal, onSample) {
  while (!signal.aborted) {
    const started = Date.now();
    try {
      const v = await read();
      if (signal.aborted) return;
      if (v !== undefined) onSample(started, v);
    } catch (_) { /* the next sample tries again */ }
    await new Promise((resolve) => {
      const t = setTimeout(resolve, Math.max(interval - (Date.now() - started), 0));
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }
}

/** Series keeps the samples of one measure within a window. */
export class Series {
  constructor(windowMs) { this.windowMs = windowMs; this.points = []; }

  /** add records v at time t and drops what fell out of the window. */
  add(t, v) {
    this.points.push({ t, v });
    const from = t - this.windowMs;
    while (this.points.length && this.points[0].t < from) this.points.shift();
  }
}
