// Monthly partitions of the usage ledger ("UsageEvent" is PARTITION BY RANGE ("createdAt"); see
// docs/adr/0002-usage-ledger.md). The work is done by the SQL function
// usage_event_ensure_partition(timestamptz) from the first migration, so any client (psql, cron,
// this code) creates partitions the same way: idempotent, serialised by an advisory lock, and moving
// rows of that month out of the default partition first.

/** Anything with pg's `query(text, values)` (a pg Client or Pool). */
export interface SqlRunner {
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[] }>;
}

/** First instant (UTC) of the month that holds `at`. */
export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** Partition table name for the month that holds `at`: UsageEvent_YYYY_MM (UTC). */
export function usagePartitionName(at: Date): string {
  const m = monthStart(at);
  return `UsageEvent_${m.getUTCFullYear()}_${String(m.getUTCMonth() + 1).padStart(2, '0')}`;
}

/**
 * Creates (if missing) the partitions for the month holding `month` and the `monthsAhead` following
 * months. Returns the partition names, in order.
 */
export async function ensureUsagePartitionsSql(
  db: SqlRunner,
  month: Date,
  monthsAhead = 0,
): Promise<string[]> {
  const names: string[] = [];
  const first = monthStart(month);
  for (let i = 0; i <= monthsAhead; i++) {
    const at = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + i, 1));
    const { rows } = await db.query<{ name: string }>(
      'SELECT usage_event_ensure_partition($1::timestamptz) AS name',
      [at.toISOString()],
    );
    names.push(rows[0]!.name);
  }
  return names;
}
