import { type ServiceStatus, ServiceStatusSchema } from '@infer/contracts';

/** up: ready (or an older instance that does not say); degraded: answering, a readiness check fails; down: gone. */
export type InstanceState = 'up' | 'degraded' | 'down';

export interface InstanceView {
  instance: string;
  service: string;
  version: string;
  host: string;
  inflight: number;
  load: number;
  rss: number;
  uptime_s: number;
  last_seen_ms: number;
  state: InstanceState;
  /** Why it is degraded or down; null when up. */
  reason: string | null;
  /** Its readiness checks as its last message gave them (empty when it did not say). */
  checks: Record<string, boolean>;
  /** Unix ms since when it has been in this state (first message, first failing check, last message). */
  since: number;
}

/** A stopped instance stays listed (down) this long; one that went silent, this long. */
export const STOPPED_KEEP_MS = 5 * 60_000;
export const LOST_KEEP_MS = 15 * 60_000;

interface Seen {
  status: ServiceStatus;
  at: number;
  first: number;
  notReadySince: number | null;
}

const failing = (checks: Record<string, boolean> | undefined) =>
  Object.entries(checks ?? {})
    .filter(([, ok]) => !ok)
    .map(([name]) => name);

/**
 * The instances heard on the status subjects (see StatusSubjects): the latest message of each, with
 * its state. Not ready (a readiness check fails): degraded. Silent for 3 intervals: down (lost), kept
 * 15 minutes; a last message marked `stopping`: down (stopped), kept 5 minutes. Every gateway replica
 * keeps its own copy from the same messages.
 */
export class InstanceRegistry {
  private readonly seen = new Map<string, Seen>();

  constructor(private readonly now: () => number = Date.now) {}

  /** One message from the wire; anything that is not a ServiceStatus is ignored. Returns whether kept. */
  receive(payload: unknown): boolean {
    const parsed = ServiceStatusSchema.safeParse(payload);
    if (!parsed.success) return false;
    const now = this.now();
    const status = parsed.data;
    const prev = this.seen.get(status.instance);
    const notReady = status.ready === false && !status.stopping;
    this.seen.set(status.instance, {
      status,
      at: now,
      first: prev?.first ?? now,
      notReadySince: notReady ? (prev?.notReadySince ?? now) : null,
    });
    return true;
  }

  list(): InstanceView[] {
    const now = this.now();
    const out: InstanceView[] = [];
    for (const [id, s] of this.seen) {
      const { status, at } = s;
      const silent = now - at > 3 * status.interval_ms;
      if (
        (status.stopping && now - at > STOPPED_KEEP_MS) ||
        (silent && now - at > LOST_KEEP_MS + 3 * status.interval_ms)
      ) {
        this.seen.delete(id);
        continue;
      }
      let state: InstanceState = 'up';
      let reason: string | null = null;
      let since = s.first;
      if (status.stopping) {
        state = 'down';
        reason = 'stopped: it shut down cleanly';
        since = at;
      } else if (silent) {
        state = 'down';
        reason = `no status for ${Math.round((now - at) / 1000)} s: stopped answering (crashed, killed or cut off from NATS)`;
        since = at;
      } else if (s.notReadySince !== null) {
        state = 'degraded';
        const f = failing(status.checks);
        reason = `not ready: ${f.length ? `${f.join(', ')} failing` : 'shutting down'}`;
        since = s.notReadySince;
      }
      out.push({
        instance: status.instance,
        service: status.service,
        version: status.version,
        host: status.host,
        inflight: status.inflight,
        load: status.load,
        rss: status.rss,
        uptime_s: Math.max(0, Math.floor((status.at - status.started_at) / 1000)),
        last_seen_ms: now - at,
        state,
        reason,
        checks: status.checks ?? {},
        since,
      });
    }
    return out.sort((a, b) => a.service.localeCompare(b.service) || a.instance.localeCompare(b.instance));
  }
}
