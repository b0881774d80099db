import type { SqlRunner } from '@infer/persistence/lazy';
import type { Logger } from '@infer/telemetry';
import type { ThresholdReached } from './limits.store.js';

/**
 * Records the thresholds of budgets and token allowances the limits engine sees reached
 * (LimitsEngineOptions.on.threshold) as AlertEvent rows: one row per (counter subject, limit, period,
 * threshold), however many gateway replicas see it (a unique index and ON CONFLICT DO NOTHING), so an
 * alert is raised exactly once. The ledger writer delivers the rows to the webhook (alert-deliverer.ts).
 * Off the request path: the insert is fire and forget; a failed one is logged and rejects, and the
 * engine forgets it, so the next request that sees the threshold tries again.
 */
export class AlertRecorder {
  constructor(
    private readonly db: SqlRunner,
    private readonly log: Logger,
  ) {}

  record(t: ThresholdReached): Promise<void> {
    const subjectId = t.scope === 'member' ? t.memberId : t.keyId;
    return this.db
      .query(
        `INSERT INTO "AlertEvent" ("scope", "memberId", "keyId", "subjectId", "limitName", "unit", "periodId",
                                   "periodStart", "periodEnd", "threshold", "used", "limitValue")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT ("subjectId", "limitName", "periodId", "threshold") DO NOTHING`,
        [
          t.scope,
          t.memberId,
          t.scope === 'key' ? t.keyId : null,
          subjectId,
          t.name,
          t.unit,
          t.periodId,
          new Date(t.periodStart),
          new Date(t.periodEnd),
          t.threshold,
          Math.round(t.used),
          Math.round(t.limit),
        ],
      )
      .then(
        () => undefined,
        (err: unknown) => {
          this.log.error({ err, limit: t.name, threshold: t.threshold }, 'could not record an alert');
          throw err;
        },
      );
  }
}
