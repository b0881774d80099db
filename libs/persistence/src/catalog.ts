import { readFile } from 'node:fs/promises';
import { type CatalogEntry, CatalogEntrySchema, type CatalogFile, CatalogFileSchema } from '@infer/contracts';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Db } from './db.js';
import { InvalidInputError } from './errors.js';
import type { Prisma } from './prisma.js';
import { prismaRunner } from './queries.js';
import type { SqlRunner } from './usage-partitions.js';

/**
 * Reads and validates a catalog file (YAML, or JSON which is YAML too) with CatalogFileSchema.
 * Throws an InvalidInputError that names the file and every problem.
 */
export async function loadCatalogFile(path: string): Promise<CatalogFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new InvalidInputError(`cannot read catalog file ${path}: ${(error as Error).message}`);
  }
  return parseCatalog(text, path);
}

/** Parses and validates catalog text; `source` names it in error messages. */
export function parseCatalog(text: string, source = 'catalog'): CatalogFile {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new InvalidInputError(`${source} is not valid YAML: ${(error as Error).message}`);
  }
  const parsed = CatalogFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new InvalidInputError(`${source} is not a valid catalog:\n${z.prettifyError(parsed.error)}`);
  const seen = new Set<string>();
  for (const m of parsed.data.models) {
    if (seen.has(m.id)) throw new InvalidInputError(`${source}: model id ${m.id} appears twice`);
    seen.add(m.id);
  }
  // An alias names one model: never another model's id, nor an alias of two models.
  for (const m of parsed.data.models) {
    for (const a of m.aliases) {
      if (seen.has(a))
        throw new InvalidInputError(`${source}: alias ${a} of model ${m.id} is already a model id or alias`);
      seen.add(a);
    }
  }
  return parsed.data;
}

type ModelData = Omit<Prisma.ModelCreateInput, 'createdAt' | 'updatedAt'>;

/** Catalog entry -> table row. */
export function entryToRow(entry: CatalogEntry): ModelData {
  return {
    id: entry.id,
    kind: entry.kind,
    rank: entry.rank,
    ownedBy: entry.owned_by,
    created: entry.created,
    description: entry.description,
    aliases: entry.aliases,
    tiers: entry.tiers,
    contextWindow: entry.context_window ?? null,
    allowanceTokens: entry.allowance ? BigInt(entry.allowance.tokens) : null,
    allowancePeriod: entry.allowance?.period ?? null,
    capabilities: entry.capabilities as Prisma.InputJsonValue,
    engine: entry.engine as Prisma.InputJsonValue,
    dimensions: entry.dimensions ?? null,
    defaultMaxOutputTokens: entry.default_max_output_tokens ?? null,
    batchPriceFactor: entry.batch_price_factor,
    pricing: entry.pricing as Prisma.InputJsonValue,
    fallbacks: entry.fallbacks,
    enabled: true,
  };
}

/**
 * What rowToEntry reads of a "Model" row: a row of Prisma's client, or of a raw query on pg or through
 * Prisma (queries.ts), where `tiers` and `allowancePeriod` are cast to text and `allowanceTokens` (bigint)
 * is a string (pg) or a BigInt (Prisma).
 */
export interface CatalogRow {
  id: string;
  kind: string;
  rank: number;
  ownedBy: string;
  created: number;
  description: string;
  aliases: string[];
  tiers: string[];
  contextWindow: number | null;
  allowanceTokens: bigint | string | number | null;
  allowancePeriod: string | null;
  capabilities: unknown;
  engine: unknown;
  dimensions: number | null;
  defaultMaxOutputTokens: number | null;
  batchPriceFactor: number;
  /** Absent in rows read before the column existed. */
  pricing?: unknown;
  /** Absent in rows read before the column existed. */
  fallbacks?: string[] | null;
  /** Absent in rows read before the column existed. */
  logBodies?: boolean;
}

/** Table row -> catalog entry, validated again with CatalogEntrySchema. */
export function rowToEntry(row: CatalogRow): CatalogEntry {
  const input = {
    id: row.id,
    kind: row.kind,
    owned_by: row.ownedBy,
    created: row.created,
    rank: row.rank,
    description: row.description,
    aliases: row.aliases,
    tiers: row.tiers,
    ...(row.contextWindow !== null ? { context_window: row.contextWindow } : {}),
    allowance:
      row.allowanceTokens !== null && row.allowancePeriod !== null
        ? { tokens: Number(row.allowanceTokens), period: row.allowancePeriod }
        : null,
    capabilities: row.capabilities,
    ...(row.dimensions !== null ? { dimensions: row.dimensions } : {}),
    ...(row.defaultMaxOutputTokens !== null ? { default_max_output_tokens: row.defaultMaxOutputTokens } : {}),
    batch_price_factor: row.batchPriceFactor,
    pricing: row.pricing ?? {},
    fallbacks: row.fallbacks ?? [],
    engine: row.engine,
    ...(row.logBodies ? { log_bodies: true } : {}),
  };
  const parsed = CatalogEntrySchema.safeParse(input);
  if (!parsed.success)
    throw new Error(`model ${row.id} in the database is not a valid catalog entry: ${parsed.error.message}`);
  return parsed.data;
}

// Enum columns come back from pg as text ('{community,inference}' for an enum array: pg knows no parser
// for the enum's type): cast to text and text[], which both drivers return as string / string[].
const ENABLED_MODELS_SQL = `SELECT "id", "kind", "rank", "ownedBy", "created", "description", "aliases", "tiers"::text[] AS "tiers",
       "contextWindow", "allowanceTokens", "allowancePeriod"::text AS "allowancePeriod", "capabilities",
       "engine", "dimensions", "defaultMaxOutputTokens", "batchPriceFactor",
       "fallbacks", "pricing", "logBodies"
  FROM "Model"
 WHERE "enabled"
 ORDER BY "rank" ASC, "id" ASC`;

/**
 * Enabled models, most capable first (rank, then id), as catalog entries (validated again): on pg
 * directly (the gateway) or through Prisma (`prismaRunner`, CatalogRepository.listEnabled).
 */
export async function listEnabledModels(db: SqlRunner): Promise<CatalogEntry[]> {
  const { rows } = await db.query<CatalogRow & Record<string, unknown>>(ENABLED_MODELS_SQL);
  return rows.map(rowToEntry);
}

export interface CatalogSyncResult {
  /** Ids written from the file (created or updated, enabled). */
  upserted: string[];
  /** Ids in the database but not in the file, now disabled. */
  disabled: string[];
}

export interface CatalogModel {
  entry: CatalogEntry;
  enabled: boolean;
  updatedAt: Date;
}

/**
 * Time limits of the sync's interactive transaction. Prisma's defaults (2 s to get a connection, 5 s
 * for the whole transaction) are too tight for one upsert round trip per model on a busy machine: a
 * start then failed with "Transaction already closed". The sync runs once at start (and on an admin
 * reload), so waiting longer is harmless; a real outage still fails it, after these limits.
 */
export const SYNC_TRANSACTION = { maxWait: 30_000, timeout: 120_000 } as const;

export class CatalogRepository {
  constructor(private readonly db: Db) {}

  /** Loads a catalog file and makes the table match it (see syncEntries). */
  async syncFromFile(path: string): Promise<CatalogSyncResult> {
    return this.syncEntries((await loadCatalogFile(path)).models);
  }

  /** Upserts every entry (enabled) and disables models absent from `entries`, in one transaction. */
  async syncEntries(entries: CatalogEntry[]): Promise<CatalogSyncResult> {
    const { models } = CatalogFileSchema.parse({ models: entries });
    const ids = models.map((m) => m.id);
    return this.db.$transaction(async (tx) => {
      for (const entry of models) {
        const data = entryToRow(entry);
        await tx.model.upsert({ where: { id: entry.id }, create: data, update: data });
      }
      const gone = await tx.model.findMany({
        where: { id: { notIn: ids }, enabled: true },
        select: { id: true },
        orderBy: { id: 'asc' },
      });
      if (gone.length)
        await tx.model.updateMany({ where: { id: { in: gone.map((g) => g.id) } }, data: { enabled: false } });
      return { upserted: ids, disabled: gone.map((g) => g.id) };
    }, SYNC_TRANSACTION);
  }

  /** Enabled models, most capable first (rank, then id). */
  listEnabled(): Promise<CatalogEntry[]> {
    return listEnabledModels(prismaRunner(this.db));
  }

  /** Every model, disabled ones included. */
  async listAll(): Promise<CatalogModel[]> {
    const rows = await this.db.model.findMany({
      orderBy: [{ enabled: 'desc' }, { rank: 'asc' }, { id: 'asc' }],
    });
    return rows.map((row) => ({ entry: rowToEntry(row), enabled: row.enabled, updatedAt: row.updatedAt }));
  }

  async get(id: string): Promise<CatalogModel | null> {
    const row = await this.db.model.findUnique({ where: { id } });
    return row ? { entry: rowToEntry(row), enabled: row.enabled, updatedAt: row.updatedAt } : null;
  }
}
