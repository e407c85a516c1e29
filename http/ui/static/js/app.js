// The UI's shell: session (token, capabilities), navigation, the hash
// router, and event delegation for the views' buttons and forms.
import { token, get, APIError } from './api.js';
import { html } from './html.js';
import { Capabilities } from './acl.js';
import * as jobsView from './jobs.js';

// Views load on first use, so a page fetches only the modules it needs.
const views = {
  signin: () => import('./signin.js'),
  // The jobs list is the first page of most visits: loaded with the shell.
  jobs: () => jobsView,
  alloc: () => import('./alloc.js'),
  nodes: () => import('./nodes.js'),
  topology: () => import('./topology.js'),
  evals: () => import('./evals.js'),
  services: () => import('./services.js'),
  mgmt: () => import('./mgmt.js'),
  admin: () => import('./admin.js'),
  runs: () => import('./runs.js'),
  quotas: () => import('./quotas.js'),
};

/** session is what the signed-in token is and may do. */
export const session = {
  self: null, // /v1/acl/token/self, or null
  caps: new Capabilities('all'),
  admin: false,
  error: '',
};

const CACHE = 'sched.session';

/** useSession sets the session from what was learned about the token. */
function useSession(c) {
  session.self = c.self;
  session.admin = c.admin;
  session.caps = c.rules ? new Capabilities('policies', c.rules) : new Capabilities('all');
}

/**
 * loadSession learns who the stored token is and what it may do; a
 * refused token is forgotten. What it learns is kept for this tab, so a
 * reload renders at once (cached() then refreshes it in the background);
 * the session in use stays until the answer is known, so a page drawn
 * meanwhile sees the cached one.
 */
export async function loadSession() {
  const none = { self: null, admin: false, rules: null };
  const forget = () => { sessionStorage.removeItem(CACHE); useSession(none); };
  session.error = '';
  if (!token.get()) { forget(); return; }
  const c = { ...none };
  try {
    c.self = (await get('/v1/acl/token/self')).data;
  } catch (e) {
    session.error = e.message;
    // Only the API's refusal forgets the token: a request cut short (the
    // document left while it ran, the network gone) says nothing of it,
    // and the tab's next page must still have it.
    if (e instanceof APIError) { token.clear(); forget(); }
    return;
  }
  if (c.self.Type === 'management') {
    c.admin = true;
  } else {
    const names = c.self.Policies || [];
    c.rules = (await Promise.all(names.map((n) => get('/v1/acl/policy/' + encodeURIComponent(n))
      .then((r) => r.data.Rules, () => '')))); // an unreadable policy grants nothing here
    c.admin = await get('/api/v2/admin/organizations', { 'page[size]': 1 }).then(() => true, () => false);
  }
  sessionStorage.setItem(CACHE, JSON.stringify(c));
  useSession(c);
}

/** cached uses the session kept for this tab, if any. */
function cached() {
  try {
    const c = JSON.parse(sessionStorage.getItem(CACHE) || 'null');
    if (c && token.get()) { useSession(c); return true; }
  } catch (_) { /* ignore a damaged cache */ }
  return false;
}

const routes = [
  [/^\/signin$/, 'signin', 'view'],
  [/^\/jobs$/, 'jobs', 'list'],
  [/^\/jobs\/new$/, 'jobs', 'create'],
  [/^\/job\/([^/]+)\/([^/]+)$/, 'jobs', 'detail'],
  [/^\/alloc\/([^/]+)$/, 'alloc', 'detail'],
  [/^\/nodes$/, 'nodes', 'list'],
  [/^\/node\/([^/]+)$/, 'nodes', 'detail'],
  [/^\/topology$/, 'topology', 'view'],
  [/^\/evals$/, 'evals', 'list'],
  [/^\/eval\/([^/]+)$/, 'evals', 'detail'],
  [/^\/services$/, 'services', 'list'],
  [/^\/quotas$/, 'quotas', 'list'],
  [/^\/service\/([^/]+)\/([^/]+)$/, 'services', 'detail'],
  [/^\/orgs$/, 'mgmt', 'orgs'],
  [/^\/org\/([^/]+)$/, 'mgmt', 'projects'],
  [/^\/project\/([^/]+)$/, 'mgmt', 'project'],
  [/^\/workspace\/([^/]+)$/, 'runs', 'workspace'],
  [/^\/run\/([^/]+)$/, 'runs', 'run'],
  [/^\/admin\/(organizations|workspaces|tool-versions|policy-versions)$/, 'admin', 'list'],
];

const main = document.getElementById('main');
let current = null; // the view's context

function nav() {
  const signedIn = !!token.get();
  const c = session.caps;
  // Each item: its link, its name, and the routes it is current for.
  const items = [];
  if (c.ns('*', 'list-jobs')) items.push(['#/jobs', 'Jobs', ['#/job', '#/alloc']]);
  if (c.kind === 'all' || c.policies.some((p) => p.node)) items.push(['#/nodes', 'Nodes', ['#/node']], ['#/topology', 'Topology', ['#/topology']]);
  if (c.ns('*', 'read-job')) items.push(['#/evals', 'Evaluations', ['#/eval']], ['#/services', 'Services', ['#/service']]);
  if (c.kind === 'all' || c.policies.some((p) => p.quota === 'read' || p.quota === 'write')) items.push(['#/quotas', 'Quotas', ['#/quotas']]);
  if (signedIn) items.push(['#/orgs', 'Organizations', ['#/org', '#/project', '#/workspace', '#/run']]);
  if (session.admin) items.push(['#/admin/organizations', 'Admin', ['#/admin/']]);
  const here = location.hash.split('?')[0];
  document.getElementById('nav').innerHTML = html`<ul>${items.map(([h, t, under]) =>
    html`<li><a href="${h}" ${under.some((u) => here.startsWith(u)) ? html`aria-current="page"` : ''}>${t}</a></li>`)}</ul>`;
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

/**
 * landing is set while the page shows the first view of a visit that
 * named none (/ui/ without a token): when ACLs are off that view is the
 * jobs list, and when the API refuses an anonymous caller the visitor is
 * sent to sign in instead. Any navigation clears it.
 */
let landing = false;

/** errorBox explains a failed request; 401 and 403 say what to do. */
export function errorBox(e) {
  if (landing && !token.get() && e instanceof APIError && (e.status === 403 || e.status === 401)) {
    landing = false;
    queueMicrotask(() => go('#/signin'));
  }
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

  /** show puts content (html, or an array of html) on the page. */
  show(content) { if (!this.signal.aborted) main.innerHTML = html`${content}`.toString(); }

  /** region replaces the content of an element of the page by id. */
  region(id, content) {
    if (this.signal.aborted) return;
    const el = document.getElementById(id);
    if (el) el.innerHTML = html`${content}`.toString();
  }

  /**
   * drawn marks, once per page, that its main data is on screen (a
   * performance mark, read by the measurements of docs/ui.md).
   */
  drawn() {
    if (!this.marked && !this.signal.aborted) { this.marked = true; performance.mark('sched:drawn'); }
  }

  title(t) { document.title = t + ' · sched'; }
  on(name, fn) { this.actions[name] = fn; }
  onSubmit(name, fn) { this.forms[name] = fn; }
  onChange(name, fn) { this.changes[name] = fn; }
}

async function render(ev) {
  const moved = !!ev; // a hashchange, not the first load
  if (moved) landing = false;
  if (current) current.ctrl.abort();
  const { path, query } = parseHash();
  nav();
  flash('');
  for (const [re, mod, fn] of routes) {
    const m = path.match(re);
    if (!m) continue;
    const ctx = new Context(m.slice(1), query);
    current = ctx;
    main.innerHTML = '<p class="muted">Loading…</p>';
    try {
      const view = (await views[mod]())[fn];
      if (ctx.signal.aborted) return;
      // Keyboard and screen-reader users start at the new page's content.
      if (moved) main.focus({ preventScroll: true });
      await view(ctx, session);
    } catch (e) {
      if (!ctx.signal.aborted) ctx.show(errorBox(e));
    }
    return;
  }
  current = null;
  main.innerHTML = html`<div class="error" role="alert">No such page: <code>${path}</code>. <a href="#/jobs">Jobs</a></div>`.toString();
}

// Leaving the document ends the page's requests: a followed event
// stream or a blocking query left open by a page the browser unloaded
// kept its connection, and after a few such pages the browser had none
// left for this host (its limit is six), so the next page never loaded.
addEventListener('pagehide', () => { if (current) current.ctrl.abort(); });

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

// The skip link moves focus to the content; following its #main would
// change the route.
document.querySelector('.skip').addEventListener('click', (ev) => { ev.preventDefault(); main.focus(); });

// /ui/jobs is the page of #/jobs (the agent serves index.html under
// every page's path): the address becomes /ui/#/jobs, so that links and
// the back button work as for any other page.
if (!location.hash && location.pathname.length > '/ui/'.length) {
  history.replaceState(null, '', '/ui/#' + location.pathname.slice('/ui'.length) + location.search);
}

window.addEventListener('hashchange', render);
if (cached()) {
  render();
  loadSession().then(nav); // the token may have changed or gone since
} else if (!token.get()) {
  // No token: draw at once. Without a named page that is the jobs list,
  // which works when ACLs are off; when the API refuses an anonymous
  // caller, errorBox sends the visitor to sign in.
  if (!location.hash) { landing = true; history.replaceState(null, '', '#/jobs'); }
  render();
  if (location.hash === '#/jobs') {
    const s = document.createElement('script');
    s.type = 'module';
    s.src = new URL('./landing.js', import.meta.url).href; // under this build's path
    document.head.append(s);
  }
} else {
  // The first page of a tab with a token: its module loads while the
  // session is read, and the page draws once the session is known (its
  // buttons depend on it).
  const r = routes.find(([re]) => re.test(parseHash().path));
  if (r) Promise.resolve(views[r[1]]()).catch(() => {}); // render reports a failure
  loadSession().then(render);
}
