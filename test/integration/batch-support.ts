/**
 * Shared pieces of the batch tests: a catalog with a slow simulated chat model (`chat-slow`, a test
 * double with 150 ms to its first token) so that a test can act while a batch runs, JSONL helpers, and
 * the environment of a batch runner that matches a test stack.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { Stack } from './harness.js';

export function batchCatalog(dir: string, ttftMs = 150): string {
  const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as { models: unknown[] };
  catalog.models.push({
    id: 'chat-slow',
    kind: 'chat',
    rank: 300,
    tiers: ['community', 'inference', 'premium'],
    capabilities: { streaming: true },
    engine: { type: 'simulator', ttft_ms: ttftMs, itl_ms: 0, default_output_tokens: 4 },
  });
  const file = join(dir, 'models.yaml');
  writeFileSync(file, stringify(catalog));
  return file;
}

export function batchDirs() {
  const dir = mkdtempSync(join(tmpdir(), 'batch-it-'));
  return { dir, files: join(dir, 'files') };
}

export const jsonl = (lines: unknown[]) =>
  `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;

export const chatLine = (id: string, model = 'chat-A', content = `hello ${id}`) => ({
  custom_id: id,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model, messages: [{ role: 'user', content }], max_tokens: 4 },
});

/** Environment of a batch runner serving `stack` (same database, queues, subjects, usage stream, files). */
export function runnerEnv(stack: Stack, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const c = stack.gateway.config;
  return {
    ...process.env,
    DATABASE_URL: stack.databaseUrl,
    LOG_LEVEL: 'silent',
    BULLMQ_PREFIX: c.BULLMQ_PREFIX,
    MODEL_SUBJECT_PREFIX: c.MODEL_SUBJECT_PREFIX,
    USAGE_STREAM: c.USAGE_STREAM,
    USAGE_SUBJECT_ROOT: c.USAGE_SUBJECT_ROOT,
    FILE_STORE: 'fs',
    FILE_STORE_DIR: c.FILE_STORE_DIR,
    LIMITS_ENABLED: c.LIMITS_ENABLED ? '1' : '0',
    LIMITS_REDIS_PREFIX: c.LIMITS_REDIS_PREFIX,
    BATCH_CHECK_MS: '100',
    BATCH_LOCK_MS: '2000',
    FILE_SWEEP_MS: '0',
    ...extra,
  };
}
