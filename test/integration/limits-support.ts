// Helpers of the limits integration tests: a test catalog with slow simulator models, keys with
// their own limit overrides, the gateway's injectable limits clock, raw requests for load.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeysRepository, MembersRepository } from '@infer/persistence';
import OpenAI from 'openai';
import { parse, stringify } from 'yaml';
import type { RunningGateway } from '../../apps/gateway/src/app.js';
import { LimitsService } from '../../apps/gateway/src/limits/limits.service.js';
import type { Stack, TierName } from './harness.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/**
 * config/models.yaml with some simulator engines (test doubles) slowed down:
 * `{'chat-F': {ttft_ms: 3000}}` makes every chat-F request take 3 s before its first token.
 */
export function writeCatalog(engines: Record<string, Record<string, unknown>>): string {
  const catalog = parse(readFileSync('config/models.yaml', 'utf8')) as {
    models: Array<Record<string, unknown>>;
  };
  for (const m of catalog.models) {
    const e = engines[m.id as string];
    if (e) m.engine = { type: 'simulator', ttft_ms: 0, itl_ms: 0, ...e };
  }
  const file = join(mkdtempSync(join(tmpdir(), 'infer-limits-')), 'catalog.yaml');
  writeFileSync(file, stringify(catalog));
  return file;
}

export function writeLimitsFile(limits: Record<string, unknown>): string {
  const file = join(mkdtempSync(join(tmpdir(), 'infer-limits-')), 'limits.yaml');
  writeFileSync(file, stringify(limits));
  return file;
}

export interface TestKey {
  key: string;
  keyId: string;
  memberId: string;
  client: OpenAI;
}

/** A new member and key, with the key's own limit overrides (set before its first use). */
export async function newKey(
  stack: Stack,
  tier: TierName,
  overrides: Record<string, unknown> | null = null,
  opts: { billingPeriodAnchor?: Date; baseURL?: string } = {},
): Promise<TestKey> {
  const member = await new MembersRepository(stack.prisma).create({
    name: `limits-${tier}`,
    tier,
    ...(opts.billingPeriodAnchor ? { billingPeriodAnchor: opts.billingPeriodAnchor } : {}),
  });
  const keys = new ApiKeysRepository(stack.prisma);
  const { key, record } = await keys.mint(member.id, 'limits-test');
  if (overrides) await keys.setLimits(record.id, overrides);
  return {
    key,
    keyId: record.id,
    memberId: member.id,
    client: new OpenAI({ baseURL: opts.baseURL ?? stack.baseURL, apiKey: key, maxRetries: 0 }),
  };
}

/** A clock shared by the gateways of a test: fixed until the test moves it. */
export class TestClock {
  constructor(public now: number) {}
  readonly read = () => this.now;
  install(...gateways: RunningGateway[]): void {
    for (const g of gateways) g.app.get(LimitsService).setClock(this.read);
  }
}

export interface RawResult {
  status: number;
  headers: Headers;
  body: string;
}

/** POST /v1/chat/completions with fetch (for load: hundreds at once). */
export async function rawChat(
  baseURL: string,
  key: string,
  body: Record<string, unknown>,
): Promise<RawResult> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

export function countBy<T>(xs: T[], f: (x: T) => string | number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) {
    const k = String(f(x));
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}
