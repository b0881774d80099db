import { createInterface } from 'node:readline';
import {
  ApiError,
  BATCH_MAX_LISTED_ERRORS,
  type BatchError,
  type BatchOutputLine,
  BatchRequestLineSchema,
  batchLineRequestId,
  type CatalogEntry,
  type EndFrame,
  issueToError,
  modelEndpoints,
  parseOrThrow,
  type Tier,
} from '@infer/contracts';
import type { FileStore } from '@infer/image-store';
import type { Batch, Db, Prisma } from '@infer/persistence/lazy';
import type { Logger } from '@infer/telemetry';
import type { GovernedCall } from '../../call/governed-call.js';
import type { Call } from '../../call/outcome.js';
import type { CatalogSnapshot } from '../../catalog/catalog.js';
import type { LimitSubject } from '../../limits/limits.service.js';
import { type ModelRoute, Routes } from '../../openai/routes.js';
import type { BatchLane } from './lane.js';

/** The route of each batch endpoint: the same schema, models and subject as the interactive path. */
export const BATCH_ROUTES: Record<string, ModelRoute> = {
  '/v1/chat/completions': Routes.chatCompletions,
  '/v1/completions': Routes.completions,
  '/v1/embeddings': Routes.embeddings,
  '/v1/responses': Routes.responses,
};

export interface RunnerSettings {
  /** Prepended to every model subject (tests only, as the gateway's MODEL_SUBJECT_PREFIX). */
  subjectPrefix: string;
  lineTimeoutMs: number;
  /** Attempts of a line that gets 429/503 before it is written as an error line. */
  lineRetries: number;
  /** How often a running batch looks for a cancel, its expiry, and writes its progress. */
  checkMs: number;
  /** Retention of the output and error files. */
  fileRetentionMs: number;
}

export interface RunnerStats {
  /** Lines of the batches in hand that have no output or error line yet. */
  queued: number;
  running: number;
  done: { ok: number; error: number };
  batchesActive: number;
  finalized: Record<string, number>;
}

export interface RunnerDeps {
  db: Db;
  store: FileStore;
  /** The governed call (admission, dispatch, settlement and its usage observer) of the runner. */
  call: GovernedCall;
  /** NATS max_payload of the connection. */
  maxPayload: () => number;
  catalog: () => CatalogSnapshot;
  lane: BatchLane;
  settings: RunnerSettings;
  log: Logger;
  now?: () => number;
}

/** What the key was when the batch was created (Batch.subject). */
interface StoredSubject {
  tier: Tier;
  billingAnchor: string;
  overrides: Record<string, unknown> | null;
}

type StopReason = 'cancelled' | 'expired' | 'shutdown';

interface LineRow {
  batchId: string;
  line: number;
  ok: boolean;
  output: string;
}

const MODEL_LIMITS_OFF = { requests_per_minute: null, tokens_per_minute: null, concurrent: null };

/**
 * The key's limits for one batch line: its own overrides, with every per-minute and concurrency limit
 * lifted (batch lines do not consume them), so that LimitsService.admitModel checks and charges only
 * the token allowances and budgets of the model.
 */
export function batchLimitSubject(
  b: Pick<Batch, 'keyId' | 'memberId'>,
  s: StoredSubject,
  model: string,
): LimitSubject {
  const o = (s.overrides ?? {}) as { key?: object; models?: Record<string, object> };
  return {
    keyId: b.keyId,
    memberId: b.memberId,
    tier: s.tier,
    billingAnchor: new Date(s.billingAnchor),
    overrides: {
      ...o,
      key: { ...(o.key ?? {}), requests_per_minute: null, concurrent: null },
      models: { ...(o.models ?? {}), [model]: { ...(o.models?.[model] ?? {}), ...MODEL_LIMITS_OFF } },
    },
  };
}

/** The input file's lines, numbered from 1 (blank lines keep their number and are skipped). */
async function* numberedLines(stream: NodeJS.ReadableStream): AsyncGenerator<[number, string]> {
  const rl = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  try {
    for await (const text of rl) {
      n++;
      if (text.trim()) yield [n, text];
    }
  } finally {
    rl.close();
  }
}

const outputLineId = (batchId: string, line: number) => `batch_req_${batchId.replace(/^batch_/, '')}_${line}`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * Runs one batch from wherever it stands (a job re-run after a dead worker resumes from the
 * checkpoint): `validating` -> every line checked before any work, `in_progress` -> each line through
 * NATS to the same service as an interactive request, in the lane, one BatchLine row per line (the
 * checkpoint: a line with a row is never run again), then the output and error files.
 */
export class BatchRunner {
  readonly stats: RunnerStats = {
    queued: 0,
    running: 0,
    done: { ok: 0, error: 0 },
    batchesActive: 0,
    finalized: {},
  };
  private readonly now: () => number;

  constructor(private readonly deps: RunnerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Processes a batch job. `signal` aborts on worker shutdown: the job then goes back to the queue. */
  async process(batchId: string, signal?: AbortSignal): Promise<string> {
    const { db, log } = this.deps;
    let batch = await db.batch.findUnique({ where: { id: batchId } });
    if (!batch) return 'missing';
    if (['failed', 'completed', 'expired', 'cancelled'].includes(batch.status)) return batch.status;
    this.stats.batchesActive++;
    try {
      if (batch.status === 'validating') {
        const errors = await this.validate(batch);
        if (errors) {
          await db.batch.updateMany({
            where: { id: batch.id, status: { in: ['validating', 'cancelling'] } },
            data: {
              status: 'failed',
              failedAt: new Date(this.now()),
              errors: errors as unknown as Prisma.InputJsonValue,
            },
          });
          log.info({ batchId, errors: errors.length }, 'batch failed validation');
          return 'failed';
        }
        await db.batch.updateMany({
          where: { id: batch.id, status: 'validating' },
          data: { status: 'in_progress', inProgressAt: new Date(this.now()) },
        });
        batch = (await db.batch.findUnique({ where: { id: batchId } }))!;
      }
      let reason: StopReason | null = null;
      if (batch.status === 'in_progress') reason = await this.run(batch, signal);
      else if (batch.status === 'cancelling') reason = 'cancelled';
      if (reason === 'shutdown') throw new Error('batch runner shutting down');
      return await this.finalize(batch, reason);
    } finally {
      this.stats.batchesActive--;
    }
  }

  /** Every line checked before any work: returns the errors (null when the file is good). No tokens. */
  async validate(batch: Batch): Promise<BatchError[] | null> {
    const route = BATCH_ROUTES[batch.endpoint];
    const subject = batch.subject as unknown as StoredSubject;
    const errors: BatchError[] = [];
    let count = 0;
    const add = (line: number | null, code: string, message: string, param: string | null = null) => {
      count++;
      if (errors.length < BATCH_MAX_LISTED_ERRORS) errors.push({ code, message, param, line });
    };
    if (!route) {
      add(null, 'invalid_request', `The endpoint ${batch.endpoint} cannot be batched.`, 'endpoint');
      return errors;
    }
    const stream = await this.deps.store.get(batch.inputFileId);
    if (!stream) {
      add(
        null,
        'file_not_found',
        `The input file ${batch.inputFileId} is gone (deleted or expired).`,
        'input_file_id',
      );
      return errors;
    }
    const catalog = this.deps.catalog();
    const maxLine = this.deps.maxPayload() - 2048;
    const ids = new Set<string>();
    let lines = 0;
    for await (const [n, text] of numberedLines(stream)) {
      lines++;
      if (Buffer.byteLength(text) > maxLine) {
        add(
          n,
          'request_too_large',
          `Line ${n} is larger than one request to a model service may be (${maxLine} bytes).`,
        );
        continue;
      }
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        add(n, 'invalid_json_line', `Line ${n} is not valid JSON.`);
        continue;
      }
      const parsed = BatchRequestLineSchema.safeParse(raw);
      if (!parsed.success) {
        const e = issueToError(parsed.error.issues[0]);
        add(n, 'invalid_request', `Line ${n}: ${e.message}`, e.param);
        continue;
      }
      const req = parsed.data;
      if (ids.has(req.custom_id)) {
        add(
          n,
          'duplicate_custom_id',
          `Line ${n}: the custom_id '${req.custom_id}' is already used by an earlier line; each line needs its own.`,
          'custom_id',
        );
      } else {
        ids.add(req.custom_id);
      }
      if (req.url !== batch.endpoint) {
        add(
          n,
          'mismatched_url',
          `Line ${n}: the url '${req.url.slice(0, 100)}' is not the batch's endpoint ${batch.endpoint}.`,
          'url',
        );
        continue;
      }
      if (req.body.stream === true) {
        add(n, 'invalid_request', `Line ${n}: stream is not supported in a batch; remove it.`, 'body.stream');
        continue;
      }
      const body = route.schema.safeParse(req.body);
      if (!body.success) {
        const e = issueToError(body.error.issues[0]);
        add(n, 'invalid_request', `Line ${n}: ${e.message}`, e.param ? `body.${e.param}` : 'body');
        continue;
      }
      const modelId = body.data.model ?? route.defaultModel;
      if (!modelId) {
        add(n, 'invalid_request', `Line ${n}: missing required parameter: model.`, 'body.model');
        continue;
      }
      try {
        const entry = catalog.resolve(modelId, subject.tier, route.kinds, route.endpoint);
        if (!modelEndpoints(entry).includes(route.endpoint)) {
          throw ApiError.invalid(`The model '${modelId}' is not supported on ${route.endpoint}.`, 'model');
        }
      } catch (e) {
        const err = e instanceof ApiError ? e : ApiError.internal();
        add(n, err.code ?? 'invalid_request', `Line ${n}: ${err.message}`, 'body.model');
      }
    }
    if (lines === 0) add(null, 'empty_file', 'The input file has no request lines.', 'input_file_id');
    if (count > errors.length) {
      errors.push({
        code: 'too_many_errors',
        message: `${count} lines failed validation; the first ${BATCH_MAX_LISTED_ERRORS} are listed.`,
        param: null,
        line: null,
      });
    }
    return count ? errors : null;
  }

  /** Runs the lines that have no output line yet; returns why it stopped early (null: every line ran). */
  private async run(batch: Batch, signal?: AbortSignal): Promise<StopReason | null> {
    const { db, lane, settings, log } = this.deps;
    const route = BATCH_ROUTES[batch.endpoint]!;
    const subject = batch.subject as unknown as StoredSubject;
    const done = new Set<number>();
    let ok = 0;
    let failed = 0;
    for (const r of await db.batchLine.findMany({
      where: { batchId: batch.id },
      select: { line: true, ok: true },
    })) {
      done.add(r.line);
      if (r.ok) ok++;
      else failed++;
    }
    if (done.size) log.info({ batchId: batch.id, done: done.size }, 'resuming batch from its checkpoint');
    let queued = Math.max(0, batch.total - done.size);
    this.stats.queued += queued;
    let stop: StopReason | null = null;
    let written = { ok, failed };
    const check = async () => {
      if (signal?.aborted) stop ??= 'shutdown';
      const row = await db.batch.findUnique({
        where: { id: batch.id },
        select: { status: true, expiresAt: true },
      });
      if (row?.status === 'cancelling') stop ??= 'cancelled';
      if (this.now() >= +(row?.expiresAt ?? batch.expiresAt)) stop ??= 'expired';
      if (written.ok !== ok || written.failed !== failed) {
        written = { ok, failed };
        await db.batch.updateMany({
          where: { id: batch.id, status: { in: ['in_progress', 'cancelling'] } },
          data: { completed: ok, failed },
        });
      }
    };
    let checking = false;
    const timer = setInterval(() => {
      if (checking) return;
      checking = true;
      check()
        .catch((err) => log.warn({ err, batchId: batch.id }, 'batch status check failed'))
        .finally(() => {
          checking = false;
        });
    }, settings.checkMs);
    const onAbort = () => {
      stop ??= 'shutdown';
    };
    signal?.addEventListener('abort', onAbort);
    const inFlight = new Set<Promise<void>>();
    let failure: unknown = null;
    try {
      await check();
      const stream = await this.deps.store.get(batch.inputFileId);
      if (!stream) throw new Error(`input file ${batch.inputFileId} of ${batch.id} is gone`);
      for await (const [n, text] of numberedLines(stream)) {
        if (stop || failure) break;
        if (done.has(n)) continue;
        const line = BatchRequestLineSchema.parse(JSON.parse(text));
        const modelId = String((line.body as { model?: unknown }).model ?? route.defaultModel ?? '');
        if (!(await lane.acquire(modelId, () => stop !== null || failure !== null))) break;
        this.stats.running++;
        const p = this.runLine(batch, subject, route, n, line.custom_id, line.body)
          .then((isOk) => {
            if (isOk) ok++;
            else failed++;
          })
          .catch((e) => {
            failure ??= e;
          })
          .finally(() => {
            this.stats.running--;
            this.stats.queued--;
            queued--;
            lane.release(modelId);
            inFlight.delete(p);
          });
        inFlight.add(p);
      }
      await Promise.all(inFlight);
      if (failure) throw failure;
      await check();
      return stop;
    } finally {
      clearInterval(timer);
      signal?.removeEventListener('abort', onAbort);
      await Promise.allSettled(inFlight);
      this.stats.queued -= queued;
    }
  }

  /**
   * One line: model and allowance checked, sent to the service (retried with backoff on 429/503),
   * its usage published (batch-marked, id `<batch>:<line>`) and acknowledged by JetStream, and only
   * then its output line stored. A worker dying between the two re-runs the line: the usage event
   * has the same id, so the ledger keeps one; the row is written once.
   */
  private async runLine(
    batch: Batch,
    subject: StoredSubject,
    route: ModelRoute,
    n: number,
    customId: string,
    rawBody: Record<string, unknown>,
  ): Promise<boolean> {
    const { lane, settings, call: governed } = this.deps;
    const requestId = batchLineRequestId(batch.id, n);
    const id = outputLineId(batch.id, n);
    let output: string;
    let isOk = false;
    try {
      let body: { model?: string; stream?: boolean | null };
      let model: CatalogEntry;
      const caller = { keyId: batch.keyId, memberId: batch.memberId, tier: subject.tier };
      try {
        body = parseOrThrow(route.schema, rawBody);
        const modelId = (body.model ?? route.defaultModel)!;
        model = this.deps.catalog().resolve(modelId, subject.tier, route.kinds, route.endpoint);
      } catch (e) {
        governed.refused({ kind: 'model', requestId, ...caller, endpoint: route.endpoint, batch: true }, e);
        throw e;
      }
      // Admitted through the governed call: token allowances and budgets only (batchLimitSubject).
      const call = await governed.admitModel({
        kind: 'model',
        requestId,
        caller: batchLimitSubject(batch, subject, model.id),
        endpoint: route.endpoint,
        subject: settings.subjectPrefix + route.subject,
        model,
        body: { ...body, stream: false },
        stream: false,
        deadlineMs: settings.lineTimeoutMs,
        batch: true,
      });
      let end: EndFrame | null = null;
      let raw: string | null = null;
      let status = 200;
      let failure: unknown;
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            // A fresh envelope (deadline) per attempt.
            ({ end, raw } = await this.dispatchLine(call, route));
            lane.succeeded(model.id);
            break;
          } catch (e) {
            const st = e instanceof ApiError ? e.status : 500;
            if ((st === 429 || st === 503) && attempt < settings.lineRetries) {
              await sleep(lane.backoff(model.id));
              continue;
            }
            throw e;
          }
        }
      } catch (e) {
        status = e instanceof ApiError ? e.status : 500;
        failure = e;
        throw e;
      } finally {
        // The usage event (batch-marked, id `<batch>:<line>`) must be stored before the line's row.
        const stored = governed.settle(call, status, end, failure);
        if (stored) {
          await stored.catch((err) => {
            throw new InfrastructureError('usage events cannot be published', err);
          });
        }
      }
      output = `{"id":${JSON.stringify(id)},"custom_id":${JSON.stringify(customId)},"response":{"status_code":200,"request_id":${JSON.stringify(requestId)},"body":${raw}},"error":null}`;
      isOk = true;
    } catch (e) {
      if (!(e instanceof ApiError) && isInfrastructure(e)) throw e;
      const err = e instanceof ApiError ? e : ApiError.internal();
      if (err.status >= 500) this.deps.log.warn({ err: e, requestId }, 'batch line failed');
      const line: BatchOutputLine = {
        id,
        custom_id: customId,
        response: { status_code: err.status, request_id: requestId, body: err.toBody() },
        error: null,
      };
      output = JSON.stringify(line);
    }
    await this.writeLine({ batchId: batch.id, line: n, ok: isOk, output });
    if (isOk) this.stats.done.ok++;
    else this.stats.done.error++;
    return isOk;
  }

  private readonly pendingRows: { row: LineRow; done: (err?: unknown) => void }[] = [];
  private flushing = false;

  /**
   * Stores a line's checkpoint row; resolves once it is committed. Rows that arrive while a write is
   * under way go together in the next one (group commit: one INSERT per round trip under load, no
   * added wait when idle).
   */
  private writeLine(row: LineRow): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pendingRows.push({ row, done: (err) => (err ? reject(err) : resolve()) });
      if (!this.flushing) void this.flushRows();
    });
  }

  private async flushRows(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pendingRows.length) {
        const group = this.pendingRows.splice(0, 500);
        try {
          await this.deps.db.batchLine.createMany({ data: group.map((g) => g.row), skipDuplicates: true });
          for (const g of group) g.done();
        } catch (err) {
          for (const g of group)
            g.done(new InfrastructureError('a batch checkpoint could not be written', err));
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The service's answer as JSON text (the body of the output line). */
  private async dispatchLine(call: Call, route: ModelRoute): Promise<{ end: EndFrame; raw: string }> {
    const governed = this.deps.call;
    if (route.collect) {
      const c = await governed.collect(call, route.collect, () => undefined);
      return { end: c.end, raw: c.body.toString('utf8') };
    }
    const end = await governed.dispatch(call);
    return { end, raw: JSON.stringify(end.data ?? null) };
  }

  /**
   * Writes the output file (successful lines in input order) and the error file (failed lines, and
   * one `batch_cancelled` / `batch_expired` line for each line that never ran), then the final status.
   * Idempotent: a re-run after a crash writes the same files under the same ids.
   */
  private async finalize(batch: Batch, reason: StopReason | null): Promise<string> {
    const { db, store, settings } = this.deps;
    const status = reason === 'cancelled' ? 'cancelled' : reason === 'expired' ? 'expired' : 'completed';
    if (status === 'completed') {
      await db.batch.updateMany({
        where: { id: batch.id, status: 'in_progress' },
        data: { status: 'finalizing', finalizingAt: new Date(this.now()) },
      });
    }
    const outId = `file-${batch.id.replace(/^batch_/, '')}-output`;
    const errId = `file-${batch.id.replace(/^batch_/, '')}-errors`;
    const rows = (okOnly: boolean) => this.rowsInOrder(batch.id, okOnly);
    let okLines = 0;
    const outBytes = await store.put(
      outId,
      (async function* () {
        for await (const r of rows(true)) {
          okLines++;
          yield Buffer.from(`${r.output}\n`);
        }
      })(),
    );
    // Error lines: the failed rows, merged in input order with the lines that never ran.
    let errLines = 0;
    const input = await store.get(batch.inputFileId);
    const notRun = (n: number, customId: string) =>
      JSON.stringify({
        id: outputLineId(batch.id, n),
        custom_id: customId,
        response: null,
        error: {
          code: status === 'expired' ? 'batch_expired' : 'batch_cancelled',
          message:
            status === 'expired'
              ? 'This request could not be executed before the completion window expired.'
              : status === 'cancelled'
                ? 'The batch was cancelled before this request ran.'
                : 'This request was not run.',
        },
      } satisfies BatchOutputLine);
    const errBytes = await store.put(
      errId,
      (async function* () {
        const it = rows(false)[Symbol.asyncIterator]();
        let next = await it.next();
        if (input) {
          for await (const [n, text] of numberedLines(input)) {
            while (!next.done && next.value.line < n) next = await it.next();
            if (!next.done && next.value.line === n) {
              if (!next.value.ok) {
                errLines++;
                yield Buffer.from(`${next.value.output}\n`);
              }
              continue;
            }
            let customId = '';
            try {
              customId = String((JSON.parse(text) as { custom_id?: unknown }).custom_id ?? '');
            } catch {
              // validated before the run: cannot happen
            }
            errLines++;
            yield Buffer.from(`${notRun(n, customId)}\n`);
          }
        }
      })(),
    );
    const retention = new Date(this.now() + settings.fileRetentionMs);
    const fileRow = async (id: string, bytes: number, lines: number, name: string) => {
      if (lines === 0) {
        await store.delete(id);
        await db.file.deleteMany({ where: { id } });
        return null;
      }
      const data = {
        memberId: batch.memberId,
        purpose: 'batch_output',
        filename: `${batch.id}_${name}.jsonl`,
        bytes: BigInt(bytes),
        lines,
        storageKey: id,
        expiresAt: retention,
      };
      await db.file.upsert({ where: { id }, create: { id, ...data }, update: data });
      return id;
    };
    const outputFileId = await fileRow(outId, outBytes, okLines, 'output');
    const errorFileId = await fileRow(errId, errBytes, errLines, 'error');
    const at = new Date(this.now());
    await db.batch.update({
      where: { id: batch.id },
      data: {
        status,
        outputFileId,
        errorFileId,
        completed: okLines,
        failed: errLines,
        ...(status === 'completed'
          ? { completedAt: at }
          : status === 'expired'
            ? { expiredAt: at }
            : { cancelledAt: at }),
      },
    });
    // The checkpoint rows are in the files now.
    await db.batchLine.deleteMany({ where: { batchId: batch.id } });
    this.stats.finalized[status] = (this.stats.finalized[status] ?? 0) + 1;
    this.deps.log.info({ batchId: batch.id, status, ok: okLines, errors: errLines }, 'batch finalized');
    return status;
  }

  /** The checkpoint rows of a batch in line order, read in pages (never all in memory). */
  private async *rowsInOrder(batchId: string, okOnly: boolean) {
    let after = 0;
    for (;;) {
      const page = await this.deps.db.batchLine.findMany({
        where: { batchId, line: { gt: after }, ...(okOnly ? { ok: true } : {}) },
        orderBy: { line: 'asc' },
        take: 500,
      });
      if (!page.length) return;
      yield* page;
      after = page.at(-1)!.line;
    }
  }
}

/** A failure of the runner's own infrastructure: the line is not written, the job is retried. */
export class InfrastructureError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'InfrastructureError';
  }
}

/** Failures of the runner's own infrastructure (PostgreSQL, the file store, JetStream): the job is retried. */
function isInfrastructure(e: unknown): boolean {
  if (e instanceof InfrastructureError) return true;
  const name = (e as { name?: string; constructor?: { name?: string } })?.constructor?.name ?? '';
  return /^Prisma/.test(name) || /^S3 /.test(String((e as Error)?.message ?? ''));
}
