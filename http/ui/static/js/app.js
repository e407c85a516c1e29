// The UI's shell: session (token, capabilities), navigation, the hash
// router, and event delegation for the views' buttons and forms.
import { token, get, APIError } from './api.js';
import { html, esc } from './html.js';
import { Capabilities } from './acl.js';
import * as jobs from './jobs.js';
import * as alloc from './alloc.js';
import * as nodes from './nodes.js';
import * as evals from './evals.js';
import * as services from './services.js';
import * as mgmt from './mgmt.js';
import * as admin from './admin.js';
import * as signin from './signin.js';

/** session is what the signed-in token is and may do. */
export const session = {
  self: null, // /v1/acl/token/self, or null
  caps: new Capabilities('all'),
  admin: false,
  error: '',
};

/** loadSession learns who the stored token is; a refused token is forgotten. */
export async function loadSession() {
  session.self = null; session.caps = new Capabilities('all'); session.admin = false; session.error = '';
  if (!token.get()) return;
  try {
    session.self = (await get('/v1/acl/token/self')).data;
  } catch (e) {
    session.error = e.message;
    token.clear();
    return;
  }
  if (session.self.Type === 'management') {
    session.admin = true;
    return;
  }
  const rules = [];
  for (const name of session.self.Policies || []) {
    try { rules.push((await get('/v1/acl/policy/' + encodeURIComponent(name))).data.Rules); } catch (_) { /* unreadable: grants nothing here */ }
  }
  session.caps = new Capabilities('policies', rules);
  try {
    await get('/api/v2/admin/organizations', { 'page[size]': 1 });
    session.admin = true;
  } catch (_) { session.admin = false; }
}

const routes = [
  [/^\/signin$/, signin.view],
  [/^\/jobs$/, jobs.list],
  [/^\/jobs\/new$/, jobs.create],
  [/^\/job\/([^/]+)\/([^/]+)$/, jobs.detail],
  [/^\/alloc\/([^/]+)$/, alloc.detail],
  [/^\/nodes$/, nodes.list],
  [/^\/node\/([^/]+)$/, nodes.detail],
  [/^\/evals$/, evals.list],
  [/^\/eval\/([^/]+)$/, evals.detail],
  [/^\/services$/, services.list],
  [/^\/service\/([^/]+)\/([^/]+)$/, services.detail],
  [/^\/orgs$/, mgmt.orgs],
  [/^\/org\/([^/]+)$/, mgmt.projects],
  [/^\/project\/([^/]+)$/, mgmt.project],
  [/^\/admin\/(organizations|workspaces|tool-versions|policy-versions)$/, admin.list],
];

const main = document.getElementById('main');
let current = null; // the view's context

function nav() {
  const signedIn = !!token.get();
  const c = session.caps;
  const items = [];
  if (c.ns('*', 'list-jobs')) items.push(['#/jobs', 'Jobs']);
  if (c.kind === 'all' || c.policies.some((p) => p.node)) items.push(['#/nodes', 'Nodes']);
  if (c.ns('*', 'read-job')) items.push(['#/evals', 'Evaluations'], ['#/services', 'Services']);
  if (signedIn) items.push(['#/orgs', 'Organizations']);
  if (session.admin) items.push(['#/admin/organizations', 'Admin']);
  const here = location.hash.split('?')[0];
  document.getElementById('nav').innerHTML = html`<ul>${items.map(([h, t]) =>
    html`<li><a href="${h}" ${here.startsWith(h.replace(/s$/, '')) ? html`aria-current="page"` : ''}>${t}</a></li>`)}</ul>`;
  const who = session.self;
  document.getElementById('who').innerHTML = signedIn
    ? html`<span title="${who ? who.AccessorID : ''}">${who ? (who.Name || who.Type) : 'signed in'}</span> <button type="button" id="signout">Sign out</button>`
    : html`<a href="#/signin">Sign in</a>`;
  const so = document.getElementById('signout');
  if (so) so.onclick = () => { token.clear(); loadSession().then(() => go('#/signin')); };
}

/** flash shows a message in the live region above the page. */
export function flash(msg, kind = 'ok') {
  const el = document.getElementById('flash');
  el.className = kind;
  el.textContent = msg;
}

/** errorBox explains a failed request; 401 and 403 say what to do. */
export function errorBox(e) {
  if (e instanceof APIError && (e.status === 403 || e.status === 401)) {
    return html`<div class="error" role="alert"><strong>Permission denied.</strong>
The token ${token.get() ? 'you signed in with' : '(none: you are not signed in)'} may not do this
(<code>${e.request}</code>: ${e.status} ${e.message}).
<a href="#/signin">Sign in with another token</a>.</div>`;
  }
  if (e instanceof APIError && e.status === 404) {
    return html`<div class="error" role="alert"><strong>Not found.</strong> ${e.message} (<code>${e.request}</code>)</div>`;
  }
  return html`<div class="error" role="alert"><strong>Error.</strong> ${e.message || String(e)}${e.request ? html` (<code>${e.request}</code>)` : ''}</div>`;
}

/** go navigates to a hash. */
export function go(hash) {
  if (location.hash === hash) render(); else location.hash = hash;
}

function parseHash() {
  const h = location.hash.replace(/^#/, '') || '/jobs';
  const [path, qs] = h.split('?');
  return { path, query: new URLSearchParams(qs || '') };
}

/** setQuery replaces the hash's query parameters (dropping empty ones). */
export function setQuery(params) {
  const { path, query } = parseHash();
  for (const [k, v] of Object.entries(params)) {
    if (v === '' || v === null || v === undefined) query.delete(k); else query.set(k, v);
  }
  const qs = query.toString();
  location.hash = '#' + path + (qs ? '?' + qs : '');
}

/**
 * Context is one page's life: its parameters, an abort signal that ends
 * its watches when the user leaves, and its event handlers.
 */
class Context {
  constructor(params, query) {
    this.params = params.map(decodeURIComponent);
    this.query = query;
    this.ctrl = new AbortController();
    this.signal = this.ctrl.signal;
    this.actions = {};
    this.forms = {};
    this.changes = {};
    this.main = main;
  }

  /** show puts content on the page. */
  show(content) { if (!this.signal.aborted) main.innerHTML = content.toString(); }

  /** region replaces the content of an element of the page by id. */
  region(id, content) {
    if (this.signal.aborted) return;
    const el = document.getElementById(id);
    if (el) el.innerHTML = content.toString();
  }

  title(t) { document.title = t + ' · sched'; }
  on(name, fn) { this.actions[name] = fn; }
  onSubmit(name, fn) { this.forms[name] = fn; }
  onChange(name, fn) { this.changes[name] = fn; }
}

async function render() {
  if (current) current.ctrl.abort();
  const { path, query } = parseHash();
  nav();
  flash('');
  for (const [re, view] of routes) {
    const m = path.match(re);
    if (!m) continue;
    current = new Context(m.slice(1), query);
    main.innerHTML = '<p class="muted">Loading…</p>';
    try {
      await view(current, session);
    } catch (e) {
      if (!current.signal.aborted) current.show(errorBox(e));
    }
    return;
  }
  current = null;
  main.innerHTML = html`<div class="error" role="alert">No such page: <code>${path}</code>. <a href="#/jobs">Jobs</a></div>`.toString();
}

async function run(fn, el, arg) {
  if (el) el.disabled = true;
  try {
    await fn(arg, el);
  } catch (e) {
    flash(e.status === 403 || e.status === 401 ? 'Permission denied: ' + e.message + ' (' + e.request + ')' : e.message, 'bad');
  } finally {
    if (el && el.isConnected) el.disabled = false;
  }
}

main.addEventListener('click', (ev) => {
  const el = ev.target.closest('[data-action]');
  if (!el || !current) return;
  const fn = current.actions[el.dataset.action];
  if (!fn) return;
  ev.preventDefault();
  if (el.dataset.confirm && !window.confirm(el.dataset.confirm)) return;
  run(fn, el, el.dataset);
});

main.addEventListener('submit', (ev) => {
  const form = ev.target.closest('form[data-form]');
  if (!form || !current) return;
  const fn = current.forms[form.dataset.form];
  if (!fn) return;
  ev.preventDefault();
  run(fn, form.querySelector('[type=submit]'), form);
});

main.addEventListener('change', (ev) => {
  const el = ev.target.closest('[data-change]');
  if (!el || !current) return;
  const fn = current.changes[el.dataset.change];
  if (fn) run(fn, null, el);
});

window.addEventListener('hashchange', render);
loadSession().then(() => {
  if (!token.get() && !location.hash) location.hash = '#/signin';
  render();
});
export { esc };
