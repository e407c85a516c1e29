// Exec in the browser: a terminal panel over the exec WebSocket
// (/v1/client/allocation/:id/exec, docs/exec.md) with a pseudo terminal
// whose size follows the panel's.
import { token } from './api.js';
import { html, enc, esc } from './html.js';

const MAX_LINES = 2000; // lines of output the panel keeps

/**
 * Screen is the smallest terminal that a shell needs: text written at a
 * cursor, carriage return, line feed, backspace and tab; of the escape
 * sequences, erase in line and display and cursor moves are applied and
 * the others (colours, titles) are dropped.
 */
export class Screen {
  constructor() { this.lines = ['']; this.row = 0; this.col = 0; this.pending = ''; }

  /** write applies output text. */
  write(text) {
    let s = this.pending + text;
    this.pending = '';
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === '\x1b') {
        const rest = s.slice(i);
        const m = rest.match(/^\x1b\[([0-9;?]*)([@-~])/) || rest.match(/^\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/) || rest.match(/^\x1b[()][0-9A-Za-z]/) || rest.match(/^\x1b[=>78DEM]/);
        if (!m) {
          if (rest.length < 32) { this.pending = rest; return; } // the rest of it comes with the next write
          continue;
        }
        if (m[2]) this.csi(m[1], m[2]);
        i += m[0].length - 1;
        continue;
      }
      if (c === '\r') this.col = 0;
      else if (c === '\n') this.newline();
      else if (c === '\b') this.col = Math.max(0, this.col - 1);
      else if (c === '\t') this.put(' '.repeat(8 - (this.col % 8)));
      else if (c === '\x07') continue;
      else if (c >= ' ' && c !== '\x7f') this.put(c);
    }
  }

  put(t) {
    const line = this.lines[this.row];
    const padded = line.length < this.col ? line + ' '.repeat(this.col - line.length) : line;
    this.lines[this.row] = padded.slice(0, this.col) + t + padded.slice(this.col + t.length);
    this.col += t.length;
  }

  newline() {
    this.row++;
    if (this.row >= this.lines.length) this.lines.push('');
    if (this.lines.length > MAX_LINES) { const drop = this.lines.length - MAX_LINES; this.lines.splice(0, drop); this.row -= drop; }
  }

  csi(args, op) {
    const n = Number(args.split(';')[0]) || 0;
    const line = this.lines[this.row];
    switch (op) {
      case 'K': // erase in line: 0 to the end, 1 from the start, 2 all
        if (n === 0) this.lines[this.row] = line.slice(0, this.col);
        else if (n === 1) this.lines[this.row] = ' '.repeat(this.col) + line.slice(this.col);
        else this.lines[this.row] = '';
        break;
      case 'J':
        if (n === 2 || n === 3) { this.lines = ['']; this.row = 0; this.col = 0; } else if (n === 0) { this.lines[this.row] = line.slice(0, this.col); this.lines.length = this.row + 1; }
        break;
      case 'C': this.col += n || 1; break;
      case 'D': this.col = Math.max(0, this.col - (n || 1)); break;
      case 'G': this.col = Math.max(0, (n || 1) - 1); break;
      case 'H': case 'f': {
        // Cursor positions count from the top of what is shown.
        const [r, c] = args.split(';').map((x) => Number(x) || 1);
        const top = Math.max(0, this.lines.length - (this.rows || 24));
        this.row = Math.min(top + (r || 1) - 1, this.lines.length - 1);
        this.col = (c || 1) - 1;
        break;
      }
      case 'P': this.lines[this.row] = line.slice(0, this.col) + line.slice(this.col + (n || 1)); break;
      case '@': this.lines[this.row] = line.slice(0, this.col) + ' '.repeat(n || 1) + line.slice(this.col); break;
      default: // colours (m), modes (h, l) and the rest: nothing to draw
    }
  }

  /** html is the screen with its cursor, escaped. */
  html() {
    const out = this.lines.map((l, i) => {
      if (i !== this.row) return esc(l);
      const padded = l.length <= this.col ? l + ' '.repeat(this.col - l.length + 1) : l;
      return esc(padded.slice(0, this.col)) + '<span class="cursor">' + esc(padded[this.col]) + '</span>' + esc(padded.slice(this.col + 1));
    });
    return out.join('\n');
  }
}

/** KEYS are the bytes of the keys that are not text. */
const KEYS = {
  Enter: '\r', Backspace: '\x7f', Tab: '\t', Escape: '\x1b', Delete: '\x1b[3~',
  ArrowUp: '\x1b[A', ArrowDown: '\x1b[B', ArrowRight: '\x1b[C', ArrowLeft: '\x1b[D', Home: '\x1b[H', End: '\x1b[F',
};

/** b64 encodes text as UTF-8 in standard base64. */
const b64 = (text) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

/** unb64 decodes standard base64 to bytes. */
const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

/** panel is the exec section of an allocation's page. */
export function panel(tasks) {
  return html`<form class="filters" data-form="exec"><label>Task <select name="task">${tasks.map((t) => html`<option>${t}</option>`)}</select></label>
<label class="grow">Command <input name="command" value="/bin/sh" spellcheck="false"></label>
<button type="submit">Open terminal</button> <button type="button" data-action="exec-close" hidden>Close</button></form>
<pre id="term" class="term" tabindex="0" aria-label="Terminal" hidden></pre><p id="term-status" class="muted" role="status"></p>`;
}

/**
 * open starts a session of command (a line split on spaces) in task of
 * allocation alloc, drawing into the page's #term; it ends with signal
 * or close(). It returns close.
 */
export function open(alloc, task, command, signal) {
  const pre = document.getElementById('term');
  const status = document.getElementById('term-status');
  const screen = new Screen();
  pre.hidden = false;
  pre.innerHTML = '';
  const argv = command.trim().split(/\s+/).filter(Boolean);
  const url = new URL('/v1/client/allocation/' + enc(alloc.ID) + '/exec', location.origin);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  url.searchParams.set('task', task);
  url.searchParams.set('command', JSON.stringify(argv));
  url.searchParams.set('tty', 'true');
  url.searchParams.set('ws_handshake', 'true');
  url.searchParams.set('namespace', alloc.Namespace || 'default');
  const ws = new WebSocket(url);
  let size = '';
  let drawQueued = false;
  const draw = () => {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => {
      drawQueued = false;
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.innerHTML = screen.html();
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    });
  };
  const send = (frame) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame)); };
  // The terminal's size in characters, from the panel's size and the
  // width and height of one character of its font.
  const resize = () => {
    const probe = document.createElement('span');
    probe.textContent = 'MMMMMMMMMM';
    pre.append(probe);
    const box = probe.getBoundingClientRect();
    probe.remove();
    const cs = getComputedStyle(pre);
    const w = pre.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const h = pre.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
    const cols = Math.max(10, Math.floor(w / (box.width / 10)));
    const rows = Math.max(2, Math.floor(h / box.height));
    screen.rows = rows;
    const next = rows + 'x' + cols;
    if (next === size) return;
    size = next;
    pre.dataset.size = next;
    send({ tty_size: { height: rows, width: cols } });
  };
  const observer = new ResizeObserver(() => resize());
  const onKey = (ev) => {
    let data = '';
    if (ev.ctrlKey && ev.key.length === 1 && /[a-z@[\\\]^_]/i.test(ev.key)) data = String.fromCharCode(ev.key.toUpperCase().charCodeAt(0) & 0x1f);
    else if (KEYS[ev.key]) data = KEYS[ev.key];
    else if (ev.key.length === 1 && !ev.metaKey && !ev.ctrlKey) data = ev.key;
    if (!data) return;
    ev.preventDefault();
    send({ stdin: { data: b64(data) } });
  };
  const onPaste = (ev) => {
    ev.preventDefault();
    send({ stdin: { data: b64(ev.clipboardData.getData('text')) } });
  };
  const dec = new TextDecoder();
  ws.onopen = () => {
    send({ version: 1, auth_token: token.get() });
    status.textContent = 'Connected: ' + argv.join(' ') + ' in task ' + task + '.';
    pre.dataset.state = 'open';
    size = '';
    resize();
    observer.observe(pre);
    pre.focus();
  };
  ws.onmessage = (m) => {
    const f = JSON.parse(m.data);
    for (const k of ['stdout', 'stderr']) {
      if (f[k] && f[k].data) { screen.write(dec.decode(unb64(f[k].data), { stream: true })); draw(); }
    }
    if (f.exited) {
      const code = (f.result || {}).exit_code || 0;
      status.textContent = 'The command exited' + (code ? ' with code ' + code : '') + '.';
      pre.dataset.exit = code;
    }
  };
  ws.onclose = (ev) => {
    observer.disconnect();
    pre.removeEventListener('keydown', onKey);
    pre.removeEventListener('paste', onPaste);
    pre.dataset.state = 'closed';
    if (ev.code >= 4000) status.textContent = 'Session ended: ' + (ev.reason || 'error ' + ev.code) + '.';
    else if (!pre.dataset.exit && ev.code !== 1000) status.textContent = 'Session ended (' + (ev.reason || 'connection closed') + ').';
  };
  pre.addEventListener('keydown', onKey);
  pre.addEventListener('paste', onPaste);
  const close = () => { if (ws.readyState <= WebSocket.OPEN) ws.close(1000); };
  signal.addEventListener('abort', close, { once: true });
  return close;
}
