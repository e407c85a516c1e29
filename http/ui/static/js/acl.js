// What a /v1 token may do, worked out in the browser from its policies so
// that pages hide the buttons the API would refuse. The API enforces; this
// only keeps pages honest.

const READ = ['list-jobs', 'parse-job', 'read-job', 'read-job-scaling', 'read-logs', 'read-fs'];
const WRITE = READ.concat(['submit-job', 'dispatch-job', 'alloc-exec', 'alloc-lifecycle', 'scale-job',
  'list-scaling-policies', 'read-scaling-policy', 'submit-recommendation']);

/** tokens splits policy HCL into strings, words and punctuation. */
function tokens(src) {
  const out = [];
  const re = /\s+|#[^\n]*|\/\/[^\n]*|\/\*[\s\S]*?\*\/|"((?:[^"\\]|\\.)*)"|([A-Za-z0-9_.*-]+)|([{}[\]=,:])/g;
  let m;
  while ((m = re.exec(src)) !== null) {
    if (m[1] !== undefined) out.push({ s: m[1] });
    else if (m[2] !== undefined) out.push({ w: m[2] });
    else if (m[3] !== undefined) out.push({ p: m[3] });
  }
  return out;
}

/** parseBody reads attributes and blocks up to a closing brace. */
function parseBody(t, i) {
  const body = { attrs: {}, blocks: [] };
  while (i < t.length && t[i].p !== '}') {
    const name = t[i].w ?? t[i].s; i++;
    if (t[i] && (t[i].p === '=' || t[i].p === ':')) {
      i++;
      if (t[i] && t[i].p === '[') {
        const list = []; i++;
        while (i < t.length && t[i].p !== ']') { if (t[i].s !== undefined || t[i].w !== undefined) list.push(t[i].s ?? t[i].w); i++; }
        i++;
        body.attrs[name] = list;
      } else if (t[i]) { body.attrs[name] = t[i].s ?? t[i].w; i++; }
      continue;
    }
    const labels = [];
    while (i < t.length && t[i].p !== '{') { if (t[i].s !== undefined) labels.push(t[i].s); i++; }
    const inner = parseBody(t, i + 1);
    body.blocks.push({ type: name, labels, body: inner.body });
    i = inner.i + 1;
  }
  return { body, i };
}

/** rulesOf turns a policy's rules (HCL, or JSON) into namespace, node and quota rules. */
export function rulesOf(src) {
  const out = { namespaces: [], node: '', quota: '' };
  src = String(src || '').trim();
  if (src.startsWith('{')) {
    try {
      const doc = JSON.parse(src);
      for (const [ns, r] of Object.entries(doc.namespace || {})) out.namespaces.push({ glob: ns, policy: r.policy || '', caps: r.capabilities || [] });
      if (doc.node) out.node = doc.node.policy || '';
      if (doc.quota) out.quota = doc.quota.policy || '';
      return out;
    } catch (_) { return out; }
  }
  const { body } = parseBody(tokens(src), 0);
  for (const b of body.blocks) {
    if (b.type === 'namespace') out.namespaces.push({ glob: b.labels[0] || 'default', policy: b.body.attrs.policy || '', caps: [].concat(b.body.attrs.capabilities || []) });
    if (b.type === 'node') out.node = b.body.attrs.policy || '';
    if (b.type === 'quota') out.quota = b.body.attrs.policy || '';
  }
  return out;
}

function globMatch(glob, name) {
  const re = new RegExp('^' + glob.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$');
  return re.test(name);
}

/** best picks the rule for ns: an exact name, else the glob with most literal characters. */
function best(rules, ns) {
  const exact = rules.find((r) => r.glob === ns);
  if (exact) return exact;
  let pick = null;
  for (const r of rules) {
    if (r.glob.includes('*') && globMatch(r.glob, ns) && (!pick || r.glob.replace(/\*/g, '').length > pick.glob.replace(/\*/g, '').length)) pick = r;
  }
  return pick;
}

/**
 * Capabilities answers what a token may do. management: everything;
 * unknown (no token, or ACLs off): everything, the API decides.
 */
export class Capabilities {
  constructor(kind, policies = []) {
    this.kind = kind; // 'all' or 'policies'
    this.policies = policies.map(rulesOf);
  }

  /** ns reports whether capability cap is granted in namespace. */
  ns(namespace, cap) {
    if (this.kind === 'all') return true;
    if (namespace === '*') return this.policies.some((p) => p.namespaces.some((r) => this.ruleGrants(r, cap)));
    let granted = false;
    for (const p of this.policies) {
      const r = best(p.namespaces, namespace);
      if (!r) continue;
      if (r.policy === 'deny' || r.caps.includes('deny')) return false;
      if (this.ruleGrants(r, cap)) granted = true;
    }
    return granted;
  }

  ruleGrants(r, cap) {
    const set = r.policy === 'write' ? WRITE : r.policy === 'read' ? READ : [];
    return set.includes(cap) || r.caps.includes(cap);
  }

  /** nodeWrite reports whether node:write is granted. */
  nodeWrite() {
    return this.kind === 'all' || this.policies.some((p) => p.node === 'write');
  }
}
