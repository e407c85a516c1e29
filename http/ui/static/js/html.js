// HTML building with escaping: html`...` escapes every interpolated value
// except the results of html and raw, and joins arrays.

class Safe {
  constructor(s) { this.s = s; }
  toString() { return this.s; }
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** esc escapes s for text and attribute values. */
export const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ESC[c]);

function part(v) {
  if (v instanceof Safe) return v.s;
  if (Array.isArray(v)) return v.map(part).join('');
  if (v === null || v === undefined || v === false) return '';
  return esc(v);
}

/** html is a tagged template whose interpolations are escaped. */
export function html(strings, ...values) {
  let out = strings[0];
  values.forEach((v, i) => { out += part(v) + strings[i + 1]; });
  return new Safe(out);
}

/** raw marks s as already safe HTML. */
export const raw = (s) => new Safe(s);

/** enc encodes one path segment (an ID may hold a slash). */
export const enc = (s) => encodeURIComponent(s);

/** short is the first 8 characters of an ID. */
export const short = (id) => String(id || '').slice(0, 8);

/** when formats a time given as nanoseconds since the epoch or an RFC 3339 string. */
export function when(t) {
  if (!t) return '';
  let d;
  if (typeof t === 'number') d = new Date(t / 1e6);
  else d = new Date(t);
  if (Number.isNaN(d.getTime()) || d.getFullYear() < 1971) return '';
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** badge shows a status word styled by its value. */
export const badge = (s) => html`<span class="badge s-${String(s || 'none').replace(/[^a-z-]/gi, '')}">${s || '—'}</span>`;

/** table renders rows (arrays of cells) under headers, or an empty note. */
export function table(headers, rows, empty = 'None.') {
  if (!rows.length) return html`<p class="muted">${empty}</p>`;
  return html`<div class="scroll"><table><thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody></table></div>`;
}

/** dl renders pairs as a definition list. */
export const dl = (pairs) => html`<dl class="kv">${pairs.filter((p) => p[1] !== undefined && p[1] !== '').map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;

/** meter shows used of total as a bar with its numbers. */
export function meter(label, used, total, unit) {
  const pct = total > 0 ? Math.round((used / total) * 100) : 0;
  return html`<div class="meter"><label>${label}: ${used} / ${total} ${unit} (${pct}%)
<meter min="0" max="${total}" value="${used}" high="${total * 0.9}">${pct}%</meter></label></div>`;
}
