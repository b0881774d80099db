import type { Overview } from '@infer/contracts';
import { ago } from './format.js';
import { Words } from './ui.js';

type Instance = Overview['instances'][number];

const NAMES = { postgresql: 'PostgreSQL', redis: 'Redis', nats: 'NATS' } as const;
const STATE_ORDER = { down: 0, degraded: 1, up: 2 } as const;
/** Unix ms as `HH:MM:SS UTC`. */
export const clock = (ms: number) => `${new Date(ms).toISOString().slice(11, 19)} UTC`;
const bytes = (n: number) => `${Math.round(n / 1048576)} MB`;
const duration = (s: number) =>
  s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;

export function StateBadge(props: { state: 'up' | 'degraded' | 'down' | 'firing' | 'pending' }) {
  const cls =
    props.state === 'up'
      ? 'badge ok'
      : props.state === 'degraded' || props.state === 'pending'
        ? 'badge warn'
        : 'badge danger';
  return <span className={cls}>{props.state}</span>;
}

const HEADLINE = {
  healthy: 'The platform is healthy',
  degraded: 'The platform is degraded',
  down: 'The platform is down',
} as const;

/**
 * "Is the platform healthy": the verdict and its reasons (computed by the gateway: backing servers,
 * instances, firing alerts), the backing servers, the firing and pending alerts.
 */
export function HealthPanel(props: { o: Overview | undefined; now: number }) {
  const { o, now } = props;
  if (!o) return null;
  const firing = o.alerts.active.filter((a) => a.state === 'firing');
  const pending = o.alerts.active.filter((a) => a.state === 'pending');
  const up = o.instances.filter((i) => i.state === 'up').length;
  return (
    <>
      <section
        className={`panel health-${o.health.status}`}
        aria-labelledby="health-title"
        data-testid="health"
      >
        <h2 id="health-title">{HEADLINE[o.health.status]}</h2>
        {o.health.problems.length ? (
          <ul>
            {o.health.problems.map((p) => (
              <li key={p}>
                <Words text={p} />
              </li>
            ))}
          </ul>
        ) : (
          <p>
            PostgreSQL, Redis and NATS answer; {up} of {o.instances.length} instances up and ready; no alert
            firing.
          </p>
        )}
      </section>
      <h2>Backing servers</h2>
      <div className="cards">
        {o.backing.map((b) => (
          <div className="card" key={b.name} data-testid={`backing-${b.name}`}>
            <h3>
              {NAMES[b.name]} <StateBadge state={b.up ? 'up' : 'down'} />
            </h3>
            <p>
              {b.up ? `answered in ${b.latency_ms} ms` : b.reason}, checked {ago(b.checked_at, now)}
            </p>
            {b.failing_instances.length ? (
              <p>
                {b.failing_instances.length} instance{b.failing_instances.length === 1 ? '' : 's'} cannot
                reach it
              </p>
            ) : null}
          </div>
        ))}
      </div>
      <h2 id="alerts-title">Alerts</h2>
      <p data-testid="alerts-source">
        {o.alerts.source === 'alertmanager'
          ? 'From Alertmanager (ALERTMANAGER_URL).'
          : `The shipped PrometheusRule, evaluated by the gateways every 15 s.${
              o.alerts.not_evaluated.length
                ? ` Needs Prometheus, not evaluated here: ${o.alerts.not_evaluated.join(', ')}.`
                : ''
            }`}
        {o.alerts.error ? ` ${o.alerts.error}` : ''}
      </p>
      {o.alerts.active.length ? (
        <table className="cards" aria-labelledby="alerts-title" data-testid="alerts">
          <thead>
            <tr>
              <th scope="col">Alert</th>
              <th scope="col">Severity</th>
              <th scope="col">State</th>
              <th scope="col">Since</th>
              <th scope="col">Summary</th>
            </tr>
          </thead>
          <tbody>
            {[...firing, ...pending].map((a) => (
              <tr key={`${a.alert}${JSON.stringify(a.labels)}`}>
                <td className="mono" data-label="Alert">
                  {a.alert}
                </td>
                <td data-label="Severity">
                  {a.severity === 'critical' ? <span className="badge danger">critical</span> : 'warning'}
                </td>
                <td data-label="State">
                  <StateBadge state={a.state} />
                </td>
                <td data-label="Since">{a.since ? `${clock(a.since)} (${ago(a.since, now)})` : '-'}</td>
                <td data-label="Summary">
                  <span>
                    <Words text={a.summary} />
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p data-testid="no-alerts">No alert is firing or pending.</p>
      )}
    </>
  );
}

/** Every instance heard on NATS: its state from its readiness (what its /readyz says), problems first. */
export function InstancesTable(props: { o: Overview | undefined; now: number }) {
  const { o, now } = props;
  const list = [...(o?.instances ?? [])].sort(
    (a, b) => STATE_ORDER[a.state] - STATE_ORDER[b.state] || a.service.localeCompare(b.service),
  );
  const lastSeen = (i: Instance) => (o ? ago(o.at - i.last_seen_ms, now) : '-');
  return (
    <table className="cards" data-testid="instances">
      <caption className="sr-only">Service instances and their state</caption>
      <thead>
        <tr>
          <th scope="col">Service</th>
          <th scope="col">State</th>
          <th scope="col">Instance</th>
          <th scope="col">Version</th>
          <th scope="col">In flight</th>
          <th scope="col">Load</th>
          <th scope="col">Memory</th>
          <th scope="col">Up for</th>
          <th scope="col">Last seen</th>
        </tr>
      </thead>
      <tbody>
        {list.map((i) => (
          <tr key={i.instance} data-state={i.state} data-service={i.service}>
            <td className="nowrap" data-label="Service">
              {i.service}
            </td>
            <td data-label="State">
              <span>
                <StateBadge state={i.state} />
                {i.reason ? <Words text={` ${i.reason}, since ${clock(i.since)}`} /> : null}
              </span>
            </td>
            <td className="mono wide" data-label="Instance">
              {i.instance}
            </td>
            <td className="mono" data-label="Version">
              {i.version}
            </td>
            <td data-label="In flight">{i.inflight}</td>
            <td data-label="Load">{i.load.toFixed(2)}</td>
            <td className="wide" data-label="Memory">
              {bytes(i.rss)}
            </td>
            <td data-label="Up for">{duration(i.uptime_s)}</td>
            <td data-label="Last seen">{lastSeen(i)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
