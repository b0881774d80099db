import type { SqlRunner } from './usage-partitions.js';

/** A stored /v1/responses answer (prisma model StoredResponse). */
export interface StoredResponse {
  id: string;
  memberId: string;
  model: string;
  createdAt: Date;
  expiresAt: Date;
  previousResponseId: string | null;
  response: Record<string, unknown>;
  /** Every input item the model saw, in order, each with an `id`. */
  inputItems: Array<Record<string, unknown>>;
}

interface Row {
  id: string;
  memberId: string;
  model: string;
  createdAt: Date | string;
  expiresAt: Date | string;
  previousResponseId: string | null;
  response: Record<string, unknown> | string;
  inputItems: Array<Record<string, unknown>> | string;
}

const json = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
const toStored = (r: Row): StoredResponse => ({
  id: r.id,
  memberId: r.memberId,
  model: r.model,
  createdAt: new Date(r.createdAt),
  expiresAt: new Date(r.expiresAt),
  previousResponseId: r.previousResponseId,
  response: json(r.response),
  inputItems: json(r.inputItems),
});

const COLUMNS = `"id", "memberId", "model", "createdAt", "expiresAt", "previousResponseId", "response", "inputItems"`;

/**
 * Stored responses, per member (raw SQL on a pg pool: the gateway never loads Prisma's client for
 * them). Every read is scoped by member and by `expiresAt > now`: another member's id or an expired
 * one is simply not found. Expired rows are deleted by `deleteExpired` (the retention job).
 */
export class StoredResponsesRepository {
  constructor(private readonly db: SqlRunner) {}

  async save(r: Omit<StoredResponse, 'createdAt'> & { createdAt?: Date }): Promise<void> {
    await this.db.query(
      `INSERT INTO "StoredResponse" (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)
       ON CONFLICT ("id") DO NOTHING`,
      [
        r.id,
        r.memberId,
        r.model,
        r.createdAt ?? new Date(),
        r.expiresAt,
        r.previousResponseId,
        JSON.stringify(r.response),
        JSON.stringify(r.inputItems),
      ],
    );
  }

  async find(memberId: string, id: string, now = new Date()): Promise<StoredResponse | null> {
    const { rows } = await this.db.query<Row & Record<string, unknown>>(
      `SELECT ${COLUMNS} FROM "StoredResponse" WHERE "id" = $1 AND "memberId" = $2 AND "expiresAt" > $3`,
      [id, memberId, now],
    );
    return rows[0] ? toStored(rows[0]) : null;
  }

  /** Deletes one of the member's responses; false when there was none (or it had expired). */
  async delete(memberId: string, id: string, now = new Date()): Promise<boolean> {
    const { rows } = await this.db.query(
      `DELETE FROM "StoredResponse" WHERE "id" = $1 AND "memberId" = $2 AND "expiresAt" > $3 RETURNING 1 AS "gone"`,
      [id, memberId, now],
    );
    return rows.length > 0;
  }

  /** The member's unexpired stored responses. */
  async count(memberId: string, now = new Date()): Promise<number> {
    const { rows } = await this.db.query<{ n: string | number }>(
      `SELECT count(*) AS "n" FROM "StoredResponse" WHERE "memberId" = $1 AND "expiresAt" > $2`,
      [memberId, now],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Deletes every stored response of the member (operators); returns how many. */
  async purgeMember(memberId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: string | number }>(
      `WITH gone AS (DELETE FROM "StoredResponse" WHERE "memberId" = $1 RETURNING 1) SELECT count(*) AS "n" FROM gone`,
      [memberId],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Deletes up to `batch` expired rows (oldest first); returns how many. Call until it returns < batch. */
  async deleteExpired(now = new Date(), batch = 1000): Promise<number> {
    const { rows } = await this.db.query<{ n: string | number }>(
      `WITH gone AS (DELETE FROM "StoredResponse" WHERE "id" IN (
         SELECT "id" FROM "StoredResponse" WHERE "expiresAt" <= $1 ORDER BY "expiresAt" LIMIT $2
       ) RETURNING 1) SELECT count(*) AS "n" FROM gone`,
      [now, batch],
    );
    return Number(rows[0]?.n ?? 0);
  }
}
