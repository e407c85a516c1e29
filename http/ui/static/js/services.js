// Services: the catalog by namespace, and one service's registrations.
import { watch } from './api.js';
import { html, enc, short, table } from './html.js';
import { errorBox } from './app.js';

export async function list(ctx) {
  ctx.title('Services');
  const ns = ctx.query.get('namespace') || '*';
  ctx.show(html`<h1>Services</h1><div id="services"></div>`);
  await watch('/v1/services', { namespace: ns }, ctx.signal, (r) => {
    const rows = [];
    for (const group of r.data || []) {
      for (const s of group.Services || []) {
        rows.push([html`<a href="#/service/${enc(group.Namespace)}/${enc(s.ServiceName)}">${s.ServiceName}</a>`, group.Namespace, (s.Tags || []).join(', ')]);
      }
    }
    ctx.region('services', table(['Service', 'Namespace', 'Tags'], rows, 'No services registered.'));
  }, (e) => ctx.region('services', errorBox(e)));
}

export async function detail(ctx) {
  const [ns, name] = ctx.params;
  ctx.title('Service ' + name);
  ctx.show(html`<p class="crumbs"><a href="#/services">Services</a> / ${ns}</p><h1>${name}</h1><div id="service"></div>`);
  await watch('/v1/service/' + enc(name), { namespace: ns }, ctx.signal, (r) => {
    ctx.region('service', table(['ID', 'Address', 'Job', 'Allocation', 'Node', 'Tags'], (r.data || []).map((s) => [
      s.ID, `${s.Address}:${s.Port}`, html`<a href="#/job/${enc(s.Namespace)}/${enc(s.JobID)}">${s.JobID}</a>`,
      html`<a href="#/alloc/${enc(s.AllocID)}"><code>${short(s.AllocID)}</code></a>`,
      html`<a href="#/node/${enc(s.NodeID)}"><code>${short(s.NodeID)}</code></a>`, (s.Tags || []).join(', ')])));
  }, (e) => ctx.region('service', errorBox(e)));
}
