// The token sign-in page.
import { token } from './api.js';
import { html } from './html.js';
import { loadSession, session, go } from './app.js';

export async function view(ctx) {
  ctx.title('Sign in');
  const self = session.self;
  ctx.show(html`<h1>Sign in</h1>
${self ? html`<p>Signed in as <strong>${self.Name || self.AccessorID}</strong> (${self.Type}${(self.Policies || []).length ? ', policies ' + self.Policies.join(', ') : ''}).</p>` : ''}
<form data-form="signin" class="card narrow">
  <label for="secret">Token secret ID</label>
  <input id="secret" name="secret" type="password" autocomplete="off" required autofocus spellcheck="false">
  <p class="muted">The secret is kept in this tab's session storage and sent as
  <code>X-Sched-Token</code> to <code>/v1</code> and <code>Authorization: Bearer</code> to <code>/api/v2</code>.</p>
  <button type="submit">Sign in</button>
</form>
<div id="signin-error"></div>`);
  document.getElementById('secret').focus();
  ctx.onSubmit('signin', async (form) => {
    const secret = form.secret.value.trim();
    if (!secret) return;
    token.set(secret);
    await loadSession();
    if (session.error) {
      token.clear(); // not known to work, whatever the failure
      ctx.region('signin-error', html`<div class="error" role="alert"><strong>Sign-in failed.</strong> ${session.error}</div>`);
      return;
    }
    // Land on the first page the token may read.
    go(session.caps.ns('*', 'list-jobs') ? '#/jobs' : '#/orgs');
  });
}
