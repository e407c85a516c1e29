// Quotas: each namespace quota's usage against its limits, per region,
// followed with a blocking query (quota:read).
import { watch } from './api.js';
import { html, table, meter } from './html.js';
import { errorBox } from './app.js';

// dims are the limited dimensions: the field, its name and unit.
const dims = [['CPU', 'CPU', 'MHz'], ['MemoryMB', 'Memory', 'MB'], ['MemoryMaxMB', 'Memory max', 'MB'], ['Allocations', 'Allocations', '']];

/** usageOf draws one region's usage: a bar per limited dimension. */
function usageOf(u) {
  const limit = u.RegionLimit || {};
  const used = u.Used || {};
  const bars = dims.filter(([f]) => limit[f]).map(([f, name, unit]) => (limit[f] < 0
    ? html`<p class="meter">${name}: ${used[f] || 0} ${unit} (none allowed)</p>`
    : meter(name, used[f] || 0, limit[f], unit)));
  return bars.length ? bars : html`<p class="muted">No limit in this region.</p>`;
}

export async function list(ctx) {
  ctx.title('Quotas');
  ctx.show(html`<h1>Quotas</h1><div id="quotas"></div>`);
  await watch('/v1/quota-usages', {}, ctx.signal, (r) => {
    const quotas = r.data || [];
    const cards = quotas.map((q) => {
      const regions = Object.values(q.Used || {}).sort((a, b) => String(a.Region).localeCompare(String(b.Region)));
      return html`<div class="card quota" id="quota-${q.Name}"><h2>${q.Name}</h2>
${regions.length ? regions.map((u) => html`<h3>${u.Region || 'every region'}</h3>${usageOf(u)}`) : html`<p class="muted">No limits.</p>`}</div>`;
    });
    ctx.region('quotas', quotas.length ? cards : table(['Quota'], [], 'No quotas. Create one with sched quota apply.'));
    ctx.drawn();
  }, (e) => ctx.region('quotas', errorBox(e)));
}
