import type { ModelEndpoint, ModelPools } from '@infer/contracts';
import { api } from '../api.js';
import { useConfirm } from '../confirm.js';
import { ago, utc } from '../format.js';
import { useLoad } from '../hooks.js';
import { READ_ONLY_REASON, useCanWrite } from '../session.js';
import { Button, ErrorNote } from '../ui.js';

interface AdminModel {
  id: string;
  kind: string;
  rank: number;
  tiers: string[];
  enabled: boolean;
  capabilities: Record<string, unknown>;
  engine: string | null;
  context_window: number | null;
  log_bodies: boolean;
  updated_at: number;
}

const STATE_BADGE: Record<ModelEndpoint['state'], string> = {
  up: 'badge ok',
  recovering: 'badge warn',
  cooling: 'badge danger',
};
/** An ISO time as `14:20:05 UTC` (cooldowns last seconds). */
const clock = (iso: string) => `${iso.slice(11, 19)} UTC`;
/** A 0..1 share as `62.5 %`. */
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const CACHE_TITLE =
  "Prefix-cache hit rate the engine reports on its /metrics (vLLM): the share of prompt tokens served from its cache over about the last minute. KV: its KV cache in use; waiting: requests queued in the engine. 'not reported' when the engine gives no such metrics.";

/** The engine's own figures from its /metrics, or "not reported". */
function EngineFigures({ e }: { e: ModelEndpoint }) {
  const extra = [
    e.kv_cache_usage !== null ? `KV ${pct(e.kv_cache_usage)}` : null,
    e.requests_waiting !== null ? `${e.requests_waiting} waiting` : null,
  ].filter((x) => x !== null);
  return (
    <>
      {e.cache_hit_rate !== null ? (
        <span data-testid="cache-hit">{pct(e.cache_hit_rate)}</span>
      ) : (
        <span className="muted">not reported</span>
      )}
      {extra.length > 0 && <small className="block muted">{extra.join(', ')}</small>}
    </>
  );
}

/** Each model's engine endpoints as the service replicas route to them (GET /admin/models/pools). */
function EnginePools() {
  const pools = useLoad(() => api<ModelPools>('GET', '/admin/models/pools'), 'model-pools', 5_000);
  const data = pools.data?.data ?? [];
  return (
    <section aria-labelledby="pools-title" data-testid="engine-pools">
      <h2 id="pools-title">Engine endpoints</h2>
      <p>
        Each model's endpoints as the service replicas that answered ({pools.data?.replicas ?? 0}) route to
        them: in flight and capacity summed, the worst state, the latest cooldown. Refreshed every 5 s. Cache
        hit is the prefix-cache hit rate the engine itself reports on its metrics (vLLM), over about the last
        minute, with its KV cache use and waiting requests; other engines show "not reported".
      </p>
      <ErrorNote error={pools.error} />
      {pools.data && data.length === 0 && <p>No service replica holds an engine pool.</p>}
      {data.map((p) => (
        <div key={p.model} data-testid={`pool-${p.model}`}>
          <h3>
            <span className="mono">{p.model}</span> ({p.routing.replace(/_/g, ' ')}
            {p.queued > 0 ? `, ${p.queued} queued` : ''})
          </h3>
          <table className="cards">
            <caption className="sr-only">Endpoints of {p.model}</caption>
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">State</th>
                <th scope="col">In flight</th>
                <th scope="col" title={CACHE_TITLE}>
                  Cache hit
                </th>
                <th scope="col">Cooldown until</th>
                <th scope="col">Last error</th>
                <th scope="col">Requests</th>
                <th scope="col">Errors</th>
              </tr>
            </thead>
            <tbody>
              {p.endpoints.map((e) => (
                <tr key={e.url}>
                  <td className="mono" data-label="Endpoint">
                    {e.url}
                  </td>
                  <td data-label="State">
                    <span className={STATE_BADGE[e.state]}>{e.state}</span>
                    {e.consecutive_failures > 0 ? ` ${e.consecutive_failures} failed in a row` : ''}
                  </td>
                  <td data-label="In flight">
                    {e.inflight} / {e.capacity}
                  </td>
                  <td data-label="Cache hit" title={CACHE_TITLE}>
                    <EngineFigures e={e} />
                  </td>
                  <td data-label="Cooldown until">{e.cooldown_until ? clock(e.cooldown_until) : '-'}</td>
                  <td data-label="Last error">
                    {e.last_error ? (
                      <>
                        <span className="mono">{e.last_error}</span>
                        {e.last_error_at ? ` (${ago(Date.parse(e.last_error_at))})` : ''}
                      </>
                    ) : (
                      '-'
                    )}
                  </td>
                  <td data-label="Requests">{e.requests}</td>
                  <td data-label="Errors">{e.errors}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}

export function ModelsPage() {
  const canWrite = useCanWrite();
  const list = useLoad(() => api<{ data: AdminModel[] }>('GET', '/admin/models'), 'models');
  const confirm = useConfirm();
  const toggle = (m: AdminModel) =>
    confirm.ask(
      m.enabled
        ? {
            title: `Disable ${m.id}?`,
            body: (
              <p>
                Requests for <span className="mono">{m.id}</span> from every tier ({m.tiers.join(', ')}) are
                refused with 404 model_not_found at once on this gateway, and on the others within the catalog
                refresh. Running requests finish.
              </p>
            ),
            confirmLabel: `Disable ${m.id}`,
            danger: true,
            action: () => api('PATCH', `/admin/models/${encodeURIComponent(m.id)}`, { enabled: false }),
            done: `${m.id} is disabled.`,
            onDone: list.reload,
          }
        : {
            title: `Enable ${m.id}?`,
            body: (
              <p>
                <span className="mono">{m.id}</span> is offered again to the {m.tiers.join(', ')} tiers.
              </p>
            ),
            confirmLabel: `Enable ${m.id}`,
            action: () => api('PATCH', `/admin/models/${encodeURIComponent(m.id)}`, { enabled: true }),
            done: `${m.id} is enabled.`,
            onDone: list.reload,
          },
    );
  const bodies = (m: AdminModel) =>
    confirm.ask(
      m.log_bodies
        ? {
            title: `Stop logging ${m.id}'s bodies?`,
            body: (
              <p>
                New requests for {m.id} are logged without their bodies (unless their member's are logged).
              </p>
            ),
            confirmLabel: 'Stop logging bodies',
            action: () => api('PATCH', `/admin/models/${encodeURIComponent(m.id)}`, { log_bodies: false }),
            done: `${m.id}'s bodies are no longer logged.`,
            onDone: list.reload,
          }
        : {
            title: `Log the bodies of ${m.id}'s requests?`,
            body: (
              <p>
                The request and response bodies of every member's requests for{' '}
                <span className="mono">{m.id}</span> are kept, secrets redacted and each body capped, for a
                few days, and shown in the request log to operators.
              </p>
            ),
            confirmLabel: 'Log bodies',
            action: () => api('PATCH', `/admin/models/${encodeURIComponent(m.id)}`, { log_bodies: true }),
            done: `${m.id}'s bodies are logged.`,
            onDone: list.reload,
          },
    );
  return (
    <section>
      <h1>Models</h1>
      <p>
        Enabling or disabling a model applies at once on this gateway and within the catalog refresh on
        others.
      </p>
      <ErrorNote error={list.error} />
      {confirm.element}
      <table className="cards">
        <caption className="sr-only">Model catalog</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col" className="wide">
              Kind
            </th>
            <th scope="col">Tiers</th>
            <th scope="col" className="wide">
              Capabilities
            </th>
            <th scope="col">Engine</th>
            <th scope="col" className="wide">
              Updated
            </th>
            <th scope="col">Status</th>
            <th scope="col">Bodies</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((m) => (
            <tr key={m.id}>
              <td className="mono" data-label="Model">
                {m.id}
              </td>
              <td className="wide" data-label="Kind">
                {m.kind}
              </td>
              <td data-label="Tiers">{m.tiers.join(', ')}</td>
              <td className="wide" data-label="Capabilities">
                {Object.entries(m.capabilities ?? {})
                  .filter(([, v]) => v === true)
                  .map(([k]) => k)
                  .join(', ') || '-'}
              </td>
              <td className="mono" data-label="Engine">
                {m.engine ?? '-'}
              </td>
              <td className="wide" data-label="Updated">
                {utc(m.updated_at)}
              </td>
              <td data-label="Status">
                <div className="actions">
                  {m.enabled ? 'enabled' : <span className="badge danger">disabled</span>}
                  <Button
                    kind={m.enabled ? 'plain' : 'primary'}
                    disabled={!canWrite}
                    reason={READ_ONLY_REASON}
                    onClick={() => toggle(m)}
                    label={m.enabled ? `Disable ${m.id}` : `Enable ${m.id}`}
                  >
                    {m.enabled ? 'Disable' : 'Enable'}
                  </Button>
                </div>
              </td>
              <td data-label="Bodies">
                <div className="actions">
                  {m.log_bodies ? <span className="badge">logged</span> : 'not logged'}
                  <Button
                    disabled={!canWrite}
                    reason={READ_ONLY_REASON}
                    onClick={() => bodies(m)}
                    label={m.log_bodies ? `Stop logging ${m.id}'s bodies` : `Log ${m.id}'s bodies`}
                  >
                    {m.log_bodies ? 'Stop' : 'Log'}
                  </Button>
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <EnginePools />
    </section>
  );
}
