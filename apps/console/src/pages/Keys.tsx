import type { AdminKeyList, AdminKeyListItem, AdminMember, MintedKey } from '@infer/contracts';
import { type FormEvent, useState } from 'react';
import { api, query } from '../api.js';
import { useConfirm } from '../confirm.js';
import { ago, utc } from '../format.js';
import { useLoad, useNow } from '../hooks.js';
import { lifecycleBody, lifecycleOf } from '../key-form.js';
import {
  AllowLists,
  FormProblems,
  failureFields,
  KeyActions,
  KeyExpiry,
  KeyStatus,
  LifecycleFields,
  OneTimeKeyDialog,
  useKeyDialogs,
} from '../keys.js';
import { Link, navigate } from '../router.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { Button, Dialog, ErrorNote, Field, UrlPager, Words } from '../ui.js';

/**
 * The keys of all members: server-side search (key name, prefix or id; member name or email) and
 * keyset paging in the URL, newest first or expiring soonest, last use, expiry, allow-lists, status
 * (the old secret's grace while it runs), live limit state; mint, edit, limits, rotate and revoke.
 */
export function KeysPage(props: { params: URLSearchParams }) {
  const q = props.params.get('q') ?? '';
  const status = props.params.get('status') ?? '';
  const after = props.params.get('after') ?? '';
  const sort = props.params.get('sort') === 'expiring' ? 'expiring' : '';
  const canWrite = useCanWrite();
  const now = useNow(10_000);
  const [search, setSearch] = useState(q);
  const [minting, setMinting] = useState(false);
  const [minted, setMinted] = useState<MintedKey | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  const key = useKeyDialogs<AdminKeyListItem>({
    owner: (k) => k.member.name,
    tier: (k) => k.member.tier,
    reload: () => list.reload(),
    onRevoked: setFailure,
  });
  const confirm = useConfirm();
  const list = useLoad(
    () =>
      api<AdminKeyList>(
        'GET',
        `/admin/keys${query({ q: sort ? undefined : q, status: sort ? undefined : status, sort, after, limit: 25 })}`,
      ),
    `${q}|${status}|${sort}|${after}`,
  );
  const go = (p: Record<string, string | undefined>) => navigate('keys', { q, status, sort, ...p });
  return (
    <section>
      <div className="titlebar">
        <h1>Keys</h1>
        <Button
          kind="primary"
          onClick={() => setMinting(true)}
          disabled={!canWrite}
          reason={READ_ONLY_REASON}
        >
          Mint key
        </Button>
      </div>
      <form
        className="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ q: search, after: undefined, trail: undefined });
        }}
      >
        <Field
          label="Search key name, prefix, member"
          name="q"
          value={search}
          onChange={setSearch}
          type="search"
        />
        <Field
          label="Status"
          name="status"
          value={status}
          options={['', 'active', 'revoked']}
          onChange={(v) => go({ status: v, after: undefined, trail: undefined })}
        />
        <div className="field">
          <label htmlFor="keys-sort">Order</label>
          <select
            id="keys-sort"
            name="sort"
            value={sort}
            onChange={(e) => go({ sort: e.target.value || undefined, after: undefined, trail: undefined })}
          >
            <option value="">newest first</option>
            <option value="expiring">expiring soonest</option>
          </select>
        </div>
        <Button type="submit">Search</Button>
      </form>
      {sort ? (
        <p className="muted">
          Keys not revoked that have an expiry, the soonest first, expired ones included (search and status do
          not apply).
        </p>
      ) : null}
      {confirm.element}
      <ErrorNote error={list.error ?? failure} />
      <table className="cards">
        <caption className="sr-only">API keys of all members</caption>
        <thead>
          <tr>
            <th scope="col">Prefix</th>
            <th scope="col">Name</th>
            <th scope="col">Member (tier)</th>
            <th scope="col" className="wide">
              Created
            </th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">Allowed</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((k) => (
            <tr key={k.id}>
              <td className="mono" data-label="Prefix">
                {k.prefix}
              </td>
              <td className="name" data-label="Name">
                <Words text={k.name} />
              </td>
              <td data-label="Member (tier)">
                <span>
                  <Link to={`members/${encodeURIComponent(k.member.id)}`}>{k.member.name}</Link>{' '}
                  <small className="muted">({k.member.tier})</small>
                  {k.member.suspended ? <span className="badge danger">suspended</span> : null}
                </span>
              </td>
              <td className="wide" data-label="Created">
                {utc(k.created_at)}
              </td>
              <td data-label="Last used">{ago(k.last_used_at, now)}</td>
              <td data-label="Expires">
                <KeyExpiry expiresAt={k.expires_at} now={now} />
              </td>
              <td data-label="Allowed">
                <AllowLists apiKey={k} />
              </td>
              <td data-label="Status">
                <KeyStatus apiKey={k} now={now} />
              </td>
              <td data-label="Actions">
                <KeyActions
                  apiKey={k}
                  owner={k.member.name}
                  canWrite={canWrite}
                  open={key}
                  ask={confirm.ask}
                  onRotated={(minted) => {
                    setMinted(minted);
                    list.reload();
                  }}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && list.data.data.length === 0 ? <p>No keys match.</p> : null}
      <UrlPager params={props.params} nextAfter={list.data?.next_after} go={go} />
      {minting ? (
        <MintForMember
          onClose={() => setMinting(false)}
          onMinted={(k) => {
            setMinting(false);
            setMinted(k);
            list.reload();
          }}
        />
      ) : null}
      <OneTimeKeyDialog minted={minted} onClose={() => setMinted(null)} />
      {key.dialogs}
    </section>
  );
}

/** Mint from the Keys page: find the member (server-side search), name the key, mint. */
function MintForMember(props: { onClose: () => void; onMinted: (k: MintedKey) => void }) {
  const [search, setSearch] = useState('');
  const [asked, setAsked] = useState('');
  const [memberId, setMemberId] = useState('');
  const [name, setName] = useState('default');
  const [life, setLife] = useState(() => lifecycleOf());
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const members = useLoad(
    () =>
      asked
        ? api<{ data: AdminMember[] }>('GET', `/admin/members${query({ q: asked, limit: 10 })}`)
        : Promise.resolve({ data: [] as AdminMember[] }),
    asked,
  );
  const found = members.data?.data ?? [];
  const tier = found.find((m) => m.id === memberId)?.tier;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const { body, errors: errs } = lifecycleBody(life);
    if (!name.trim()) errs.name = ['Give the key a name.'];
    if (!memberId) errs.member = ['Choose a member.'];
    setErrors(errs);
    if (Object.keys(errs).length) return;
    try {
      props.onMinted(
        await api<MintedKey>('POST', `/admin/members/${encodeURIComponent(memberId)}/keys`, {
          name,
          ...body,
        }),
      );
    } catch (error) {
      setErrors(failureFields(error));
    }
  };
  return (
    <Dialog open title="Mint an API key" onClose={props.onClose}>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(search.trim());
          setMemberId('');
          setErrors({});
        }}
        noValidate
      >
        <Field label="Find member (name, email or id)" name="member-q" value={search} onChange={setSearch} />
        <div className="field">
          <Button type="submit">Find</Button>
        </div>
      </form>
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="mint-member">Member</label>
          <select
            id="mint-member"
            name="member"
            value={memberId}
            onChange={(e) => setMemberId(e.target.value)}
            aria-invalid={errors.member ? true : undefined}
            aria-describedby={errors.member ? 'mint-member-err' : 'mint-member-hint'}
          >
            <option value="">{found.length ? '(choose)' : '(search first)'}</option>
            {found.map((m) => (
              <option key={m.id} value={m.id}>
                {`${m.name} (${m.tier}${m.email ? `, ${m.email}` : ''})`}
              </option>
            ))}
          </select>
          {errors.member ? (
            <small id="mint-member-err" className="error" role="alert">
              {errors.member.join(' ')}
            </small>
          ) : (
            <small id="mint-member-hint">
              {asked && !members.loading
                ? `${found.length} member(s) match “${asked}”.`
                : 'Find the member first, then choose.'}
            </small>
          )}
        </div>
        <Field
          label="Key name"
          name="name"
          value={name}
          onChange={setName}
          error={errors.name?.join(' ')}
          required
        />
        {memberId ? <LifecycleFields value={life} onChange={setLife} tier={tier} errors={errors} /> : null}
        <FormProblems errors={errors} fields={['name', 'member']} />
        <ErrorNote error={members.error} />
        <div className="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button type="submit" kind="primary">
            Mint
          </Button>
        </div>
      </form>
    </Dialog>
  );
}
