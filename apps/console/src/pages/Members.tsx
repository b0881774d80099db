import { type AdminMember, CreateMemberRequestSchema, TIERS } from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api, query } from '../api.js';
import { utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { Link, navigate } from '../router.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { Button, Dialog, ErrorNote, Field, UrlPager } from '../ui.js';
import { compact, type FieldErrors, fieldErrors } from '../validate.js';

interface Page {
  data: AdminMember[];
  next_after: string | null;
}

/** Members: server-side search, filters and keyset paging, all in the URL. */
export function MembersPage(props: { params: URLSearchParams }) {
  const q = props.params.get('q') ?? '';
  const tier = props.params.get('tier') ?? '';
  const status = props.params.get('status') ?? '';
  const after = props.params.get('after') ?? '';
  const canWrite = useCanWrite();
  const [search, setSearch] = useState(q);
  const [creating, setCreating] = useState(false);
  const list = useLoad(
    () => api<Page>('GET', `/admin/members${query({ q, tier, status, after, limit: 25 })}`),
    `${q}|${tier}|${status}|${after}`,
  );
  const go = (p: Record<string, string | undefined>) => navigate('members', { q, tier, status, ...p });
  return (
    <section>
      <div className="titlebar">
        <h1>Members</h1>
        <Button
          kind="primary"
          onClick={() => setCreating(true)}
          disabled={!canWrite}
          reason={READ_ONLY_REASON}
        >
          New member
        </Button>
      </div>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ q: search, after: undefined, trail: undefined });
        }}
      >
        <Field label="Search name, email or id" name="q" value={search} onChange={setSearch} type="search" />
        <Field
          label="Tier"
          name="tier"
          value={tier}
          options={['', ...TIERS]}
          onChange={(v) => go({ tier: v, after: undefined })}
        />
        <Field
          label="Status"
          name="status"
          value={status}
          options={['', 'active', 'suspended']}
          onChange={(v) => go({ status: v, after: undefined })}
        />
        <Button type="submit">Search</Button>
      </form>
      <ErrorNote error={list.error} />
      <table>
        <caption className="sr-only">Members</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" className="wide">
              Email
            </th>
            <th scope="col">Tier</th>
            <th scope="col">Keys</th>
            <th scope="col">Status</th>
            <th scope="col" className="wide">
              Created
            </th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((m) => (
            <tr key={m.id}>
              <td>
                <Link to={`members/${encodeURIComponent(m.id)}`}>{m.name}</Link>
              </td>
              <td className="wide">{m.email ?? '-'}</td>
              <td>{m.tier}</td>
              <td>{m.keys ?? 0}</td>
              <td>{m.suspended ? <span className="badge danger">suspended</span> : 'active'}</td>
              <td className="wide">{utc(m.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && list.data.data.length === 0 ? <p>No members match.</p> : null}
      <UrlPager params={props.params} nextAfter={list.data?.next_after} go={go} />
      <CreateMember open={creating} onClose={() => setCreating(false)} />
    </section>
  );
}

function CreateMember(props: { open: boolean; onClose: () => void }) {
  const [form, setForm] = useState({ name: '', email: '', tier: 'community' });
  const [errors, setErrors] = useState<FieldErrors>({});
  const [failure, setFailure] = useState<unknown>(null);
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = compact(form);
    const errs = fieldErrors(CreateMemberRequestSchema, body);
    setErrors(errs);
    if (Object.keys(errs).length) return;
    try {
      const m = await api<AdminMember>('POST', '/admin/members', body);
      props.onClose();
      navigate(`members/${encodeURIComponent(m.id)}`);
    } catch (error) {
      setFailure(error);
    }
  };
  return (
    <Dialog open={props.open} title="New member" onClose={props.onClose}>
      <form onSubmit={submit} noValidate>
        <Field
          label="Name"
          name="name"
          value={form.name}
          onChange={set('name')}
          error={errors.name}
          required
        />
        <Field
          label="Email (optional)"
          name="email"
          value={form.email}
          onChange={set('email')}
          error={errors.email}
          type="email"
        />
        <Field
          label="Tier"
          name="tier"
          value={form.tier}
          onChange={set('tier')}
          error={errors.tier}
          options={TIERS}
        />
        <ErrorNote error={failure} />
        <div className="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button type="submit" kind="primary">
            Create
          </Button>
        </div>
      </form>
    </Dialog>
  );
}
