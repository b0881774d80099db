// The operator's side of member accounts (on the member's console page): an invitation link where the
// member sets their account password. Also a password reset: a new link voids the older ones.
import { type MemberInvitationView, MemberInviteRequestSchema } from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api } from '../api.js';
import { utc } from '../format.js';
import { READ_ONLY_REASON } from '../session.js';
import { Button, Dialog, ErrorNote, Field } from '../ui.js';
import { type FieldErrors, fieldErrors } from '../validate.js';

export function InviteButton(props: { memberId: string; email: string | null; canWrite: boolean }) {
  const [open, setOpen] = useState(false);
  const [email, setEmail] = useState(props.email ?? '');
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<unknown>(null);
  const [made, setMade] = useState<MemberInvitationView | null>(null);
  const close = () => {
    setOpen(false);
    setMade(null);
    setFailure(null);
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = email ? { email } : {};
    const errs = fieldErrors(MemberInviteRequestSchema, body);
    setErrors(errs);
    setFailure(null);
    if (Object.keys(errs).length) return;
    try {
      setMade(
        await api<MemberInvitationView>(
          'POST',
          `/admin/members/${encodeURIComponent(props.memberId)}/invitations`,
          body,
        ),
      );
    } catch (error) {
      setFailure(error);
    }
  };
  return (
    <>
      <Button disabled={!props.canWrite} reason={READ_ONLY_REASON} onClick={() => setOpen(true)}>
        Invite to account
      </Button>
      <Dialog open={open} title="Invite to the account page" onClose={close} dismissable={!made}>
        {made ? (
          <>
            <p>
              Send this link to {made.email}. It works once, until {utc(made.expires_at)}; it is not shown
              again (a new invitation voids it).
            </p>
            <p className="secret mono" data-testid="invitation-url">
              {made.url}
            </p>
            <div className="actions">
              <Button onClick={() => navigator.clipboard?.writeText(made.url)}>Copy</Button>
              <Button kind="primary" onClick={close}>
                Done
              </Button>
            </div>
          </>
        ) : (
          <form onSubmit={submit} noValidate aria-label="Invite to the account page">
            <p>
              The member sets their password through a one-time link, then manages their own API keys. For a
              forgotten password, make a new invitation.
            </p>
            <Field
              label="Sign-in email"
              name="email"
              type="email"
              value={email}
              onChange={setEmail}
              error={errors.email}
            />
            <ErrorNote error={failure} />
            <div className="actions">
              <Button onClick={close}>Cancel</Button>
              <Button type="submit" kind="primary">
                Make the link
              </Button>
            </div>
          </form>
        )}
      </Dialog>
    </>
  );
}
