import { CreateOperatorRequestSchema, OPERATOR_ROLES, type OperatorView } from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api } from '../api.js';
import { useConfirm } from '../confirm.js';
import { ago, utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { useSession } from '../session.js';
import { Button, ErrorNote, Field } from '../ui.js';
import { compact, type FieldErrors, fieldErrors } from '../validate.js';

/** What a role may do, for the role change's confirmation. */
const ROLE_EFFECT: Record<string, string> = {
  viewer: 'A viewer can read every page but change nothing.',
  admin: 'An admin can change members, keys, models and queues, but not operators.',
  owner: 'An owner can change everything, operators and their roles included.',
};

export function OperatorsPage() {
  const me = useSession().operator;
  const list = useLoad(() => api<{ data: OperatorView[] }>('GET', '/admin/operators'), 'operators');
  const [failure, setFailure] = useState<unknown>(null);
  const [form, setForm] = useState({ email: '', role: 'viewer', password: '' });
  const [errors, setErrors] = useState<FieldErrors>({});
  const confirm = useConfirm();
  if (me.role !== 'owner')
    return (
      <section>
        <h1>Operators</h1>
        <p>Only an owner can manage operators.</p>
      </section>
    );
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const body = compact(form);
    const errs = fieldErrors(CreateOperatorRequestSchema, body);
    setErrors(errs);
    if (Object.keys(errs).length) return;
    try {
      await api('POST', '/admin/operators', body);
      setForm({ email: '', role: 'viewer', password: '' });
      list.reload();
    } catch (error) {
      setFailure(error);
    }
  };
  return (
    <section>
      <h1>Operators</h1>
      <ErrorNote error={list.error ?? failure} />
      {confirm.element}
      <table className="cards">
        <caption className="sr-only">Operators</caption>
        <thead>
          <tr>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
            <th scope="col">Sign-in</th>
            <th scope="col">Last sign-in</th>
            <th scope="col">Created</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((o) => (
            <tr key={o.id}>
              <td data-label="Email">{o.email}</td>
              <td data-label="Role">
                <span>
                  <label className="sr-only" htmlFor={`role-${o.id}`}>
                    Role of {o.email}
                  </label>
                  <select
                    id={`role-${o.id}`}
                    value={o.role}
                    onChange={(e) => {
                      const role = e.target.value;
                      confirm.ask({
                        title: `Make ${o.email} ${role === 'admin' ? 'an' : 'a'} ${role}?`,
                        body: <p>{ROLE_EFFECT[role] ?? ''} It applies to their next request.</p>,
                        confirmLabel: `Make ${role}`,
                        danger: role === 'owner',
                        action: () => api('PATCH', `/admin/operators/${encodeURIComponent(o.id)}`, { role }),
                        done: `${o.email} is now ${role === 'admin' ? 'an' : 'a'} ${role}.`,
                        onDone: list.reload,
                      });
                    }}
                  >
                    {OPERATOR_ROLES.map((r) => (
                      <option key={r}>{r}</option>
                    ))}
                  </select>
                </span>
              </td>
              <td data-label="Sign-in">{o.sso_only ? 'single sign-on' : 'password'}</td>
              <td data-label="Last sign-in">{ago(o.last_login_at)}</td>
              <td data-label="Created">{utc(o.created_at)}</td>
              <td data-label="Status">
                <Button
                  kind={o.disabled ? 'plain' : 'danger'}
                  disabled={o.id === me.id}
                  reason="You cannot disable yourself."
                  onClick={() =>
                    confirm.ask({
                      title: o.disabled ? `Enable ${o.email}?` : `Disable ${o.email}?`,
                      body: o.disabled ? (
                        <p>{o.email} can sign in again.</p>
                      ) : (
                        <p>
                          {o.email} loses access to the console with their next request and cannot sign in
                          until enabled again.
                        </p>
                      ),
                      confirmLabel: o.disabled ? 'Enable operator' : 'Disable operator',
                      danger: !o.disabled,
                      action: () =>
                        api('PATCH', `/admin/operators/${encodeURIComponent(o.id)}`, {
                          disabled: !o.disabled,
                        }),
                      done: o.disabled ? `${o.email} is enabled.` : `${o.email} is disabled.`,
                      onDone: list.reload,
                    })
                  }
                  label={o.disabled ? `Enable ${o.email}` : `Disable ${o.email}`}
                >
                  {o.disabled ? 'Enable' : 'Disable'}
                </Button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Add an operator</h2>
      <form onSubmit={create} noValidate className="filters">
        <Field
          label="Email"
          name="email"
          type="email"
          value={form.email}
          onChange={(v) => setForm({ ...form, email: v })}
          error={errors.email}
        />
        <Field
          label="Role"
          name="role"
          value={form.role}
          options={OPERATOR_ROLES}
          onChange={(v) => setForm({ ...form, role: v })}
        />
        <Field
          label="Password (12+ characters; empty: single sign-on only)"
          name="password"
          type="password"
          autoComplete="new-password"
          value={form.password}
          onChange={(v) => setForm({ ...form, password: v })}
          error={errors.password}
        />
        <Button type="submit" kind="primary">
          Add operator
        </Button>
      </form>
    </section>
  );
}
