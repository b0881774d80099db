import { createHmac } from 'node:crypto';
import { formatMoney } from '@infer/contracts';
import type { Db } from '@infer/persistence';
import type { Logger } from '@infer/telemetry';

export interface AlertDelivererOptions {
  db: Db;
  log: Logger;
  /** Where alerts are POSTed (null: rows are marked `unsent`, the console still shows them). */
  url: string | null;
  /** HMAC-SHA256 key of the signature header (required with a url). */
  secret: string;
  /** How often pending alerts are looked for (ms). */
  pollMs: number;
  /** Attempts before an alert is given up (`failed`). */
  maxAttempts: number;
  /** First retry delay (ms); doubled per attempt, capped at 1 hour, with up to 20 % jitter. */
  backoffMs: number;
  /** One attempt's timeout (ms). */
  timeoutMs: number;
  /** Alerts claimed per poll. */
  batch?: number;
}

interface AlertRow {
  id: bigint;
  createdAt: Date;
  scope: string;
  memberId: string;
  keyId: string | null;
  limitName: string;
  unit: string;
  periodId: string;
  periodStart: Date;
  periodEnd: Date;
  threshold: number;
  used: bigint;
  limitValue: bigint;
  attempts: number;
}

/**
 * The webhook body of one alert. `id` is stable across retries (receivers de-duplicate by it); amounts of
 * a budget are decimal strings of dollars, of an allowance whole tokens.
 */
export function alertPayload(a: AlertRow): Record<string, unknown> {
  const money = a.unit === 'nano_usd';
  return {
    id: `alert_${a.id}`,
    object: 'alert',
    type: a.limitName.endsWith('budget_per_month') ? 'budget.threshold' : 'allowance.threshold',
    created_at: Math.floor(+a.createdAt / 1000),
    scope: a.scope,
    member_id: a.memberId,
    key_id: a.keyId,
    limit: a.limitName,
    threshold_percent: a.threshold,
    unit: money ? 'usd' : 'tokens',
    used: money ? formatMoney(a.used) : Number(a.used),
    limit_value: money ? formatMoney(a.limitValue) : Number(a.limitValue),
    period: {
      id: a.periodId,
      start: Math.floor(+a.periodStart / 1000),
      end: Math.floor(+a.periodEnd / 1000),
    },
  };
}

/**
 * The signature header of a webhook body: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (the
 * Stripe scheme: a receiver checks the HMAC with the shared secret and refuses an old `t`, so a captured
 * delivery cannot be replayed later).
 */
export function signAlert(secret: string, body: string, t: number): string {
  const mac = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${mac}`;
}

/** Delay before attempt `attempt + 1`: backoffMs doubled per attempt, capped at 1 h, 0-20 % jitter. */
export function retryDelay(backoffMs: number, attempt: number): number {
  const base = Math.min(3_600_000, backoffMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 + Math.random() * 0.2));
}

/**
 * Delivers the alerts the gateways recorded (AlertEvent, pending) to the webhook: each claimed by one
 * ledger writer at a time (FOR UPDATE SKIP LOCKED in a short transaction that pushes its next attempt
 * out first, so a writer that dies mid-delivery leaves it to be tried again), POSTed with an HMAC
 * signature, retried with exponential backoff until a 2xx or `maxAttempts`; every attempt is written
 * to AlertDelivery (the console's delivery log). At-least-once towards the receiver, with a stable id.
 */
export class AlertDeliverer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly o: AlertDelivererOptions) {}

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.poll()
        .then(() => undefined)
        .catch((err: unknown) => this.o.log.warn({ err: String(err) }, 'alert delivery failed'))
        .finally(() => {
          this.running = null;
          if (!this.stopped) this.timer = setTimeout(tick, this.o.pollMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One round: claims due alerts and tries each once. */
  async poll(): Promise<number> {
    const { db } = this.o;
    if (!this.o.url) {
      await db.$executeRaw`UPDATE "AlertEvent" SET "status" = 'unsent' WHERE "status" = 'pending'`;
      return 0;
    }
    const lease = new Date(Date.now() + this.o.timeoutMs * 2 + 5_000);
    const claimed = await db.$queryRaw<AlertRow[]>`
      UPDATE "AlertEvent" a SET "nextAttemptAt" = ${lease}, "attempts" = a."attempts" + 1
       WHERE a."id" IN (SELECT "id" FROM "AlertEvent"
                         WHERE "status" = 'pending' AND "nextAttemptAt" <= now()
                         ORDER BY "nextAttemptAt" LIMIT ${this.o.batch ?? 20}
                         FOR UPDATE SKIP LOCKED)
      RETURNING a."id", a."createdAt", a."scope", a."memberId", a."keyId", a."limitName", a."unit", a."periodId",
                a."periodStart", a."periodEnd", a."threshold", a."used", a."limitValue", a."attempts"`;
    await Promise.all(claimed.map((a) => this.deliver(a)));
    return claimed.length;
  }

  private async deliver(a: AlertRow): Promise<void> {
    const url = this.o.url!;
    const body = JSON.stringify(alertPayload(a));
    const t = Math.floor(Date.now() / 1000);
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'infer-alerts/1',
          'x-infer-alert-id': `alert_${a.id}`,
          'x-infer-signature': signAlert(this.o.secret, body, t),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      status = res.status;
      await res.body?.cancel().catch(() => undefined);
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (err) {
      error = String((err as Error)?.message ?? err).slice(0, 500);
    }
    const durationMs = Math.round(performance.now() - started);
    const ok = error === null;
    const gaveUp = !ok && a.attempts >= this.o.maxAttempts;
    const next = new Date(Date.now() + retryDelay(this.o.backoffMs, a.attempts));
    await this.o.db.$transaction([
      this.o.db
        .$executeRaw`INSERT INTO "AlertDelivery" ("alertId", "attempt", "url", "status", "error", "durationMs")
                            VALUES (${a.id}, ${a.attempts}, ${url}, ${status}, ${error}, ${durationMs})`,
      ok
        ? this.o.db
            .$executeRaw`UPDATE "AlertEvent" SET "status" = 'delivered', "deliveredAt" = now() WHERE "id" = ${a.id}`
        : gaveUp
          ? this.o.db.$executeRaw`UPDATE "AlertEvent" SET "status" = 'failed' WHERE "id" = ${a.id}`
          : this.o.db.$executeRaw`UPDATE "AlertEvent" SET "nextAttemptAt" = ${next} WHERE "id" = ${a.id}`,
    ]);
    if (!ok)
      this.o.log.warn({ alert: String(a.id), attempt: a.attempts, error, gaveUp }, 'alert not delivered');
  }
}
