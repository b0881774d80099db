import { type ServiceStatus, ServiceStatusSchema } from '@infer/contracts';

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
}

/**
 * The instances heard on the status subjects (see StatusSubjects): the latest message of each,
 * forgotten after 3 missed intervals. Every gateway replica keeps its own copy from the same messages.
 */
export class InstanceRegistry {
  private readonly seen = new Map<string, { status: ServiceStatus; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** One message from the wire; anything that is not a ServiceStatus is ignored. Returns whether kept. */
  receive(payload: unknown): boolean {
    const parsed = ServiceStatusSchema.safeParse(payload);
    if (!parsed.success) return false;
    this.seen.set(parsed.data.instance, { status: parsed.data, at: this.now() });
    return true;
  }

  list(): InstanceView[] {
    const now = this.now();
    const out: InstanceView[] = [];
    for (const [id, { status, at }] of this.seen) {
      if (now - at > 3 * status.interval_ms) {
        this.seen.delete(id);
        continue;
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
      });
    }
    return out.sort((a, b) => a.service.localeCompare(b.service) || a.instance.localeCompare(b.instance));
  }
}
