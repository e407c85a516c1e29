// The event stream (/v1/event/stream): pages that follow many objects at
// once (the topology, a job's allocations) read each change as it is
// applied instead of asking again.
import { token, APIError } from './api.js';

/**
 * stream follows /v1/event/stream for topics (['Node', 'Allocation:ID',
 * …]) in namespace (default '*'): onEvents gets the events of each log
 * entry, in order. The stream resumes after the last index seen when the
 * connection breaks (2 s later); a refusal (4xx: a topic the token may not
 * read) goes to onError and ends it, as does signal.
 */
export async function stream(topics, signal, onEvents, onError, namespace = '*') {
  let next = 0;
  while (!signal.aborted) {
    const url = new URL('/v1/event/stream', location.origin);
    for (const t of topics) url.searchParams.append('topic', t);
    url.searchParams.set('namespace', namespace);
    if (next) url.searchParams.set('index', next);
    const headers = {};
    if (token.get()) headers['X-Sched-Token'] = token.get();
    try {
      const resp = await fetch(url, { headers, signal });
      if (!resp.ok) {
        const e = new APIError(resp.status, (await resp.text()).trim().slice(0, 500), 'GET /v1/event/stream');
        if (resp.status >= 400 && resp.status < 500 && resp.status !== 429) { onError(e); return; }
        throw e;
      }
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (!line || line === '{}') continue; // a heartbeat
          const doc = JSON.parse(line);
          if (doc.Index) next = doc.Index + 1;
          if (doc.Events && doc.Events.length) onEvents(doc.Events, doc.Index);
        }
      }
    } catch (e) {
      if (signal.aborted || e.name === 'AbortError') return;
    }
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 2000);
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }
}

/** deleted reports whether an event removes its object. */
export const deleted = (ev) => /Delet|Deregist|Purge/.test(ev.Type || '');
