import { LoginRequestSchema, type OidcConfigView, type SessionView } from '@infer/contracts';
import { type FormEvent, useEffect, useState } from 'react';
import { api } from './api.js';
import { ssoMessage } from './sso.js';
import { Button, ErrorNote, Field } from './ui.js';
import { type FieldErrors, fieldErrors } from './validate.js';

export function SignIn(props: { onSignedIn: (s: SessionView) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<unknown>(() =>
    ssoMessage(new URLSearchParams(window.location.search).get('sso_error')),
  );
  const [busy, setBusy] = useState(false);
  const [sso, setSso] = useState<OidcConfigView | null>(null);
  useEffect(() => {
    // The error code has been read: a reload should not show it again.
    if (new URLSearchParams(window.location.search).has('sso_error'))
      window.history.replaceState(null, '', window.location.pathname);
    api<OidcConfigView>('GET', '/admin/oidc').then(setSso, () => setSso(null));
  }, []);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { email, password };
    const errs = fieldErrors(LoginRequestSchema, body);
    setErrors(errs);
    setFailure(null);
    if (Object.keys(errs).length) return;
    setBusy(true);
    try {
      props.onSignedIn(await api<SessionView>('POST', '/admin/session', body));
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <h1>Operator console</h1>
      <form onSubmit={submit} noValidate aria-label="Sign in">
        <Field
          label="Email"
          name="email"
          value={email}
          onChange={setEmail}
          error={errors.email}
          autoComplete="username"
          type="email"
          required
        />
        <Field
          label="Password"
          name="password"
          value={password}
          onChange={setPassword}
          error={errors.password}
          autoComplete="current-password"
          type="password"
          required
        />
        <ErrorNote error={failure} />
        <Button type="submit" kind="primary" disabled={busy}>
          Sign in
        </Button>
      </form>
      {sso?.enabled ? (
        <p className="sso">
          {/* A plain link: the browser itself goes to the provider and comes back with a cookie. */}
          <a className="btn" href="/admin/oidc/start">
            Sign in with {sso.provider_name}
          </a>
        </p>
      ) : null}
    </main>
  );
}
