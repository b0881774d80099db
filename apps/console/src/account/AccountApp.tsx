// The members' account pages at /account/ (the console's build, a member-only layout): the invitation
// link where a member sets their password, the sign-in, and the account page itself. A member's
// session is its own cookie and API (/account/api/...), never the operator console's.
import {
  AccountLoginRequestSchema,
  type AccountSessionView,
  type InvitationPreview,
  type OidcConfigView,
} from '@infer/contracts';
import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { ApiFailure, api, onSessionEnded, setCsrfToken } from '../api.js';
import { utc } from '../format.js';
import { ssoMessage } from '../sso.js';
import { Button, ErrorNote, Field } from '../ui.js';
import { type FieldErrors, fieldErrors } from '../validate.js';
import { AccountPage } from './AccountPage.js';
import './account.css';

const SESSION = '/account/api/session';

export function AccountApp() {
  const [session, setSession] = useState<AccountSessionView | null | undefined>(undefined);
  const [inviting, setInviting] = useState(() => /^\/account\/invitation\/?$/.test(window.location.pathname));
  const adopt = useCallback((s: AccountSessionView | null) => {
    setCsrfToken(s?.csrf_token ?? '');
    setSession(s);
  }, []);
  useEffect(() => {
    onSessionEnded(() => adopt(null));
    if (!inviting) api<AccountSessionView>('GET', SESSION).then(adopt, () => adopt(null));
  }, [adopt, inviting]);

  if (inviting) {
    return (
      <Invitation
        onSignedIn={(s) => {
          // The token has been used: it leaves the address bar and the history.
          window.history.replaceState(null, '', '/account/');
          adopt(s);
          setInviting(false);
        }}
      />
    );
  }
  if (session === undefined) return <p className="loading">Loading…</p>;
  if (session === null) return <AccountSignIn onSignedIn={adopt} />;
  return (
    <AccountPage
      session={session}
      onSignedOut={async () => {
        try {
          await api('DELETE', SESSION);
        } catch (error) {
          if (!(error instanceof ApiFailure) || error.status !== 401) throw error;
        }
        adopt(null);
      }}
    />
  );
}

function AccountSignIn(props: { onSignedIn: (s: AccountSessionView) => void }) {
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
    const errs = fieldErrors(AccountLoginRequestSchema, body);
    setErrors(errs);
    setFailure(null);
    if (Object.keys(errs).length) return;
    setBusy(true);
    try {
      props.onSignedIn(await api<AccountSessionView>('POST', SESSION, body));
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <h1>Your account</h1>
      <p>Sign in to manage your API keys and see your usage.</p>
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
          <a className="btn" href="/admin/oidc/start?for=member">
            Sign in with {sso.provider_name}
          </a>
        </p>
      ) : null}
      <p className="hint">No password yet, or forgot it? Ask an operator for an invitation link.</p>
    </main>
  );
}

/** The invitation link (`/account/invitation#token=...`): set a password, then signed in. */
function Invitation(props: { onSignedIn: (s: AccountSessionView) => void }) {
  const token = new URLSearchParams(window.location.hash.replace(/^#/, '')).get('token') ?? '';
  const [preview, setPreview] = useState<InvitationPreview | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api<InvitationPreview>('GET', `/account/api/invitation?token=${encodeURIComponent(token)}`).then(
      setPreview,
      setProblem,
    );
  }, [token]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs: FieldErrors = {};
    if (password.length < 12) errs.password = 'At least 12 characters.';
    else if (repeat !== password) errs.repeat = 'The two passwords differ.';
    setErrors(errs);
    setFailure(null);
    if (Object.keys(errs).length) return;
    setBusy(true);
    try {
      props.onSignedIn(await api<AccountSessionView>('POST', '/account/api/invitation', { token, password }));
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <h1>Set your password</h1>
      {problem ? (
        <>
          <ErrorNote error={problem} />
          <p>
            <a href="/account/">Go to the sign-in page</a>
          </p>
        </>
      ) : !preview ? (
        <p className="loading">Checking the link…</p>
      ) : (
        <>
          <p>
            Welcome, {preview.name}. Choose the password you will sign in with as{' '}
            <strong>{preview.email}</strong>. This link works once, until {utc(preview.expires_at)}.
          </p>
          <form onSubmit={submit} noValidate aria-label="Set your password">
            <input type="hidden" name="username" autoComplete="username" value={preview.email} readOnly />
            <Field
              label="New password"
              name="password"
              value={password}
              onChange={setPassword}
              error={errors.password}
              autoComplete="new-password"
              type="password"
              hint="At least 12 characters."
              required
            />
            <Field
              label="Repeat the password"
              name="repeat"
              value={repeat}
              onChange={setRepeat}
              error={errors.repeat}
              autoComplete="new-password"
              type="password"
              required
            />
            <ErrorNote error={failure} />
            <Button type="submit" kind="primary" disabled={busy}>
              Set password and sign in
            </Button>
          </form>
        </>
      )}
    </main>
  );
}
