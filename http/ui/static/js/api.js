// API access: the token kept in session storage, requests to /v1 and
// /api/v2 with the header each expects, errors with a readable message,
// and blocking-query watches.

const KEY = 'sched.token';

/** The signed-in token's secret, kept for this browser tab only. */
export const token = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (s) => sessionStorage.setItem(KEY, s),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An answer other than 2xx: status, the API's message, and the request. */
export class APIError extends Error {
  constructor(status, message, request) {
    super(message);
    this.status = status;
    this.request = request;
  }
}

function errorText(text) {
  try {
    const doc = JSON.parse(text);
    if (Array.isArray(doc.errors)) {
      return doc.errors.map((e) => [e.title, e.detail].filter(Boolean).join(': ')).join('; ');
    }
  } catch (_) { /* not JSON */ }
  return text.trim().slice(0, 500);
}

/**
 * request sends method path with query parameters and a JSON body and
 * returns {data, index, nextToken}. /api/v2 gets Authorization: Bearer and
 * JSON:API content types; /v1 gets X-Sched-Token.
 */
export async function request(method, path, { query, body, signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
  }
  const headers = {};
  const secret = token.get();
  if (path.startsWith('/api/v2')) {
    headers.Accept = 'application/vnd.api+json';
    if (body !== undefined) headers['Content-Type'] = 'application/vnd.api+json';
    if (secret) headers.Authorization = 'Bearer ' + secret;
  } else {
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (secret) headers['X-Sched-Token'] = secret;
  }
  let resp;
  for (let attempt = 0; ; attempt++) {
    resp = await fetch(url, {
      method, headers, signal,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // /api/v2 limits requests per token: wait for the bucket to refill
    // (X-RateLimit-Reset, in seconds) and try again, a few times.
    if (resp.status !== 429 || attempt >= 3) break;
    const reset = Math.min(Number(resp.headers.get('X-RateLimit-Reset')) || 1, 5);
    await pause(reset * 1000 + 50, signal || new AbortController().signal);
    if (signal && signal.aborted) break;
  }
  const text = await resp.text();
  if (!resp.ok) {
    throw new APIError(resp.status, errorText(text) || resp.statusText, method + ' ' + url.pathname);
  }
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (_) { data = text; }
  }
  return {
    data,
    index: Number(resp.headers.get('X-Sched-Index') || 0),
    nextToken: resp.headers.get('X-Sched-NextToken') || '',
  };
}

export const get = (path, query, signal) => request('GET', path, { query, signal });

function pause(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

/**
 * watch keeps path's answer current with blocking queries: onData gets the
 * first answer and each one whose X-Sched-Index moved, until signal
 * aborts. An error goes to onError; a refusal of the request itself (4xx
 * but 429: a bad filter, a missing token, a vanished object) ends the
 * watch, others (the server or the network failing) are retried after a
 * pause.
 */
export async function watch(path, query, signal, onData, onError) {
  let index = 0;
  while (!signal.aborted) {
    try {
      const q = { ...query };
      if (index) { q.index = index; q.wait = '60s'; }
      const r = await get(path, q, signal);
      if (signal.aborted) return;
      if (!index || r.index !== index) onData(r);
      index = r.index;
    } catch (e) {
      if (signal.aborted || e.name === 'AbortError') return;
      onError(e);
      if (e.status >= 400 && e.status < 500 && e.status !== 429) return;
      await pause(2000, signal);
    }
  }
}

/**
 * follow streams a log as plain text: onText gets each chunk until the
 * stream ends or signal aborts.
 */
export async function follow(path, query, signal, onText) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const headers = {};
  if (token.get()) headers['X-Sched-Token'] = token.get();
  const resp = await fetch(url, { headers, signal });
  if (!resp.ok) throw new APIError(resp.status, errorText(await resp.text()), 'GET ' + url.pathname);
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    onText(dec.decode(value, { stream: true }));
  }
}
