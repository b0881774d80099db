import { z } from 'zod';

/**
 * Service discovery for the operator console: every process (gateway replicas, NATS services, the
 * ledger writer) publishes a small status message on `infer.status.<service>` every few seconds and
 * at once when someone publishes on `infer.status.ping` (a gateway that just started). Gateways
 * subscribe without a queue group, so every replica sees every instance.
 */
export const StatusSubjects = {
  /** `infer.status.<service>`: one ServiceStatus message. */
  status: (service: string) => `infer.status.${service.replace(/[^A-Za-z0-9_-]/g, '_')}`,
  all: 'infer.status.*',
  /** Empty payload: every instance publishes its status now. */
  ping: 'infer.ping.status',
  /**
   * `infer.ops.status.<name>`: a request (empty payload) that every instance holding the ops status
   * document `<name>` (the same as its ops server's `GET /status/<name>`, e.g. `engine-pools`) answers
   * with one OpsStatusReply; the gateway collects the replies for a short window.
   */
  opsStatus: (name: string) => `infer.ops.status.${name.replace(/[^A-Za-z0-9_-]/g, '_')}`,
  opsStatusAll: 'infer.ops.status.*',
} as const;

/** One instance's answer to an ops status request (StatusSubjects.opsStatus). */
export interface OpsStatusReply {
  instance: string;
  /** `host:pid`: a document is per process, and one process may run several announcing services. */
  process: string;
  service: string;
  status: unknown;
}

export const ServiceStatusSchema = z
  .object({
    /** Unique per process (host, pid and a random tag). */
    instance: z.string().min(1).max(200),
    service: z.string().min(1).max(100),
    version: z.string().max(100),
    host: z.string().max(200),
    pid: z.number().int(),
    /** Requests (or jobs, or pending events) this instance is working on now. */
    inflight: z.number().int().min(0),
    /** One-minute load average of its machine, divided by its CPU count (0..1+). */
    load: z.number().min(0),
    /** Resident memory in bytes. */
    rss: z.number().int().min(0),
    started_at: z.number().int().describe('Unix milliseconds'),
    at: z.number().int().describe('Unix milliseconds of this message'),
    /** Milliseconds until the next message; an instance silent for 3 intervals is gone. */
    interval_ms: z.number().int().min(100),
    /** What the instance's /readyz says now: every readiness check passes (absent: an older instance). */
    ready: z.boolean().optional(),
    /** Each readiness check by name (nats, engines, stores ...): true when it passes. */
    checks: z.record(z.string().max(100), z.boolean()).optional(),
    /** The last message of an instance that is shutting down cleanly. */
    stopping: z.boolean().optional(),
  })
  .meta({ id: 'ServiceStatus' });
export type ServiceStatus = z.infer<typeof ServiceStatusSchema>;
