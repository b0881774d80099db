// "Why refused" on the member page: per limit that refused the member in the last day, how often
// (last hour, last day), when last, the limit's live state on the key it last refused, and when it
// resets; a link to those refusals in the Logs page.
import type { KeyLimitsState, MemberRefusals } from '@infer/contracts';
import { api, query } from './api.js';
import { ago } from './format.js';
import { useLoad, useNow } from './hooks.js';
import { limitTitle, resetSentence, stateSentence } from './limits-explain.js';
import { Link } from './router.js';
import { ErrorNote } from './ui.js';

export function RefusalsPanel(props: { memberId: string }) {
  const refusals = useLoad(
    () => api<MemberRefusals>('GET', `/admin/members/${encodeURIComponent(props.memberId)}/refusals`),
    props.memberId,
    15_000,
  );
  const keyIds = [...new Set((refusals.data?.data ?? []).map((r) => r.last_key_id))].sort();
  // The live state of every key that was refused (a member has a handful of keys).
  const states = useLoad(
    async () =>
      Promise.all(
        keyIds.map((id) =>
          api<KeyLimitsState>('GET', `/admin/keys/${encodeURIComponent(id)}/limits`).catch(() => null),
        ),
      ),
    keyIds.join(','),
    15_000,
  );
  const now = useNow(5000);
  const rows = refusals.data?.data ?? [];
  return (
    <section aria-labelledby="refusals-title" data-testid="refusals">
      <h2 id="refusals-title">Why refused, last 24 hours</h2>
      <ErrorNote error={refusals.error} />
      {refusals.data && rows.length === 0 ? <p>No request of this member was refused by a limit.</p> : null}
      {rows.length ? (
        <table className="cards">
          <caption className="sr-only">Limits that refused this member's requests</caption>
          <thead>
            <tr>
              <th scope="col">Limit</th>
              <th scope="col">Refused</th>
              <th scope="col">Last</th>
              <th scope="col">Now</th>
              <th scope="col">Resets</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => {
              const state = states.data
                ?.find((s) => s?.key.id === r.last_key_id)
                ?.limits.find((l) => l.name === r.limit);
              return (
                <tr key={`${r.limit}|${r.error_code}`}>
                  <td data-label="Limit">
                    <span>
                      {limitTitle(r.limit)} <span className="mono">({r.limit})</span>
                    </span>
                  </td>
                  <td data-label="Refused">
                    {r.last_hour.toLocaleString('en')} in the last hour, {r.last_day.toLocaleString('en')} in
                    the last day
                  </td>
                  <td data-label="Last">
                    <Link
                      to={`logs${query({ member: props.memberId, key: r.last_key_id, code: r.error_code })}`}
                    >
                      {ago(r.last_at, now)}
                    </Link>
                  </td>
                  <td data-label="Now">{state ? stateSentence(state) : '-'}</td>
                  <td data-label="Resets">{resetSentence(r.limit, state, now)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
