/**
 * The hosted `web_search` tool of /v1/responses, through the `openai` SDK and the real stack: gateway,
 * chat-service, search-service (its local index, seeded with the project documentation), ledger writer,
 * limits on. The model's side is the scripted engine (test/support/scripted-upstream.ts, a test double):
 * it calls `web_search`, the platform runs the search through the gateway's search path (admitted
 * against the member's search budget, metered), gives the model the results and runs it again, all
 * inside one /v1/responses call, unary and streamed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { type SearchService, startSearchService } from '../../apps/search-service/src/app.js';
import {
  lastToolOutput,
  type ScriptedUpstream,
  scriptedModel,
  startScriptedUpstream,
} from '../support/scripted-upstream.js';
import { waitFor } from '../support/wait-for.js';
import { type Stack, startStack, startStackLedger } from './harness.js';

const QUERY = 'setup.sh installs PostgreSQL Redis NATS';
/** Dollars per search (WEB_SEARCH_PRICE): 5,000,000 nano-dollars in the ledger. */
const SEARCH_PRICE = '0.005';
const SEARCH_NANOS = 5_000_000n;

describe('hosted web_search in /v1/responses (scripted engine, real search path)', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let search: SearchService;
  let ledger: LedgerWriter;
  let dir: string;
  const prefix = `test.${randomUUID()}.`;

  before(async () => {
    up = await startScriptedUpstream();
    dir = mkdtempSync(join(tmpdir(), 'web-search-'));
    const catalogFile = join(dir, 'models.json');
    writeFileSync(catalogFile, JSON.stringify({ models: [scriptedModel(up, 'search-model', 'search')] }));
    const limits = join(dir, 'limits.yaml');
    // Room on the inference key; one search a day for the community tier (the quota test).
    writeFileSync(
      limits,
      'tiers:\n  inference: {search: {requests_per_minute: 1000, concurrent: 20, requests_per_day: 100000}}\n' +
        '  community: {search: {requests_per_day: 1}}\n',
    );
    stack = await startStack({
      catalogFile,
      // Each search costs half a cent (the web-search entry's pricing.per_search).
      env: {
        SEARCH_SUBJECT_PREFIX: prefix,
        LIMITS_ENABLED: '1',
        LIMITS_FILE: limits,
        WEB_SEARCH_PRICE: SEARCH_PRICE,
      },
    });
    search = await startSearchService({
      env: {
        ...process.env,
        DATABASE_URL: stack.databaseUrl,
        LOG_LEVEL: 'silent',
        SEARCH_CACHE_PREFIX: `test:web-search:${randomUUID()}`,
        SEARCH_DOCS_DIR: process.cwd(),
      },
      subjectPrefix: prefix,
    });
    ledger = await startStackLedger(stack);
  });
  after(async () => {
    await ledger?.stop();
    await search?.stop();
    await stack?.close();
    await up?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const searchThenAnswer = () =>
    up.script('search', [
      { text: 'Let me look.', tool_calls: [{ name: 'web_search', arguments: { query: QUERY } }] },
      (req) => {
        const out = lastToolOutput(req) ?? '';
        return {
          text: `Found ${(out.match(/^URL: /gm) ?? []).length} results; first: ${/URL: (\S+)/.exec(out)?.[1]}`,
        };
      },
    ]);

  /** The member of a tier's key (the harness names them `it-<tier>`). */
  async function memberOf(tier: 'inference' | 'community'): Promise<string> {
    const m = await stack.prisma.member.findFirst({ where: { name: `it-${tier}` } });
    assert.ok(m);
    return m.id;
  }

  it('runs the search inside one call: web_search_call item, results to the model, final answer (unary)', async () => {
    searchThenAnswer();
    const client = stack.client('inference');
    const r = await client.responses.create({
      model: 'search-model',
      input: 'How is the platform set up?',
      tools: [{ type: 'web_search' }],
      include: ['web_search_call.action.sources'],
    });
    assert.equal(r.status, 'completed');
    const types = r.output.map((o) => o.type);
    assert.deepEqual(types, ['message', 'web_search_call', 'message'], JSON.stringify(r.output));
    const ws = r.output[1];
    assert.ok(ws?.type === 'web_search_call');
    assert.equal(ws.status, 'completed');
    assert.deepEqual(
      { type: ws.action.type, query: (ws.action as { query: string }).query },
      {
        type: 'search',
        query: QUERY,
      },
    );
    const sources = (ws.action as { sources?: Array<{ url: string }> }).sources ?? [];
    assert.ok(sources.length >= 1, 'sources included when asked for');
    assert.match(r.output_text, /^Let me look\.Found [1-5] results; first: docs:\/README\.md/);
    // The model was offered one `web_search` function and read the results as its tool output.
    const seen = up.requestsFor('search').slice(-2);
    const offered = (seen[0]?.body.tools ?? []) as Array<{ function: { name: string } }>;
    assert.deepEqual(
      offered.map((t) => t.function.name),
      ['web_search'],
    );
    assert.match(lastToolOutput(seen[1]!) ?? '', /Web results for "setup\.sh/);
    // Both model rounds are in the usage (10 prompt tokens each from the scripted engine).
    assert.equal(r.usage?.input_tokens, 20);
    assert.equal(r.usage?.total_tokens, (r.usage?.input_tokens ?? 0) + (r.usage?.output_tokens ?? 0));
    // Usage rows: the model call (both rounds' tokens) and the search (model web-search, same endpoint).
    const memberId = await memberOf('inference');
    const rows = await waitFor(
      'the usage rows of the call and its search',
      async () => {
        const all = await stack.prisma.usageEvent.findMany({
          where: { memberId, endpoint: '/v1/responses' },
        });
        return all.some((u) => u.model === 'web-search') && all.some((u) => u.model === 'search-model')
          ? all
          : null;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
    const model = rows.filter((u) => u.model === 'search-model');
    assert.equal(model.length, 1);
    assert.equal(model[0]?.totalTokens, r.usage?.total_tokens);
    const searches = rows.filter((u) => u.model === 'web-search');
    assert.equal(searches.length, 1);
    // The search is priced per search; the scripted model has no prices.
    assert.equal(searches[0]?.cost, SEARCH_NANOS);
    assert.equal(model[0]?.cost, 0n);
  });

  it('prices POST /v1/search per search: its ledger row carries the cost', async () => {
    const memberId = await memberOf('inference');
    const before = await stack.prisma.usageEvent.count({ where: { memberId, endpoint: '/v1/search' } });
    const res = await fetch(`${stack.baseURL}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.keys.inference}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: QUERY, count: 3 }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.json();
    const rows = await waitFor(
      'the usage row of the search',
      async () => {
        const all = await stack.prisma.usageEvent.findMany({ where: { memberId, endpoint: '/v1/search' } });
        return all.length > before ? all : null;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
    assert.deepEqual(
      rows.map((u) => [u.model, u.status, u.cost]),
      [['web-search', 200, SEARCH_NANOS]],
    );
  });

  it('streams the search events: output_item.added, web_search_call in_progress/searching/completed, output_item.done', async () => {
    searchThenAnswer();
    const client = stack.client('inference');
    const stream = await client.responses.create({
      model: 'search-model',
      input: 'How is the platform set up?',
      tools: [{ type: 'web_search_preview' }],
      stream: true,
    });
    const events: Array<{ type: string; sequence_number: number } & Record<string, unknown>> = [];
    for await (const e of stream) events.push(e as never);
    const seqs = events.map((e) => e.sequence_number);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i),
      'numbered in order from 0',
    );
    const ws = events
      .filter(
        (e) =>
          e.type.startsWith('response.web_search_call.') ||
          ((e.type === 'response.output_item.added' || e.type === 'response.output_item.done') &&
            (e.item as { type: string }).type === 'web_search_call'),
      )
      .map((e) => e.type);
    assert.deepEqual(ws, [
      'response.output_item.added',
      'response.web_search_call.in_progress',
      'response.web_search_call.searching',
      'response.web_search_call.completed',
      'response.output_item.done',
    ]);
    const done = events.at(-1);
    assert.equal(done?.type, 'response.completed');
    const response = done?.response as OpenAI.Responses.Response;
    assert.deepEqual(
      response.output.map((o) => o.type),
      ['message', 'web_search_call', 'message'],
    );
    assert.match(response.output_text ?? textOf(response), /Found [1-5] results/);
    // The search's item is completed before the second round's text starts.
    const completedAt = events.findIndex((e) => e.type === 'response.web_search_call.completed');
    const secondText = events.findIndex(
      (e) => e.type === 'response.output_text.delta' && e.output_index === 2,
    );
    assert.ok(completedAt > 0 && secondText > completedAt);
  });

  it('a search the member has no quota for is a clear 429, not a 500; the model tokens are still metered', async () => {
    const client = stack.client('community');
    // The community tier has one search a day: the first call uses it.
    searchThenAnswer();
    const first = await client.responses.create({
      model: 'search-model',
      input: 'first',
      tools: [{ type: 'web_search' }],
    });
    assert.equal(first.status, 'completed');
    searchThenAnswer();
    const err = await client.responses
      .create({ model: 'search-model', input: 'second', tools: [{ type: 'web_search' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 429);
    assert.equal((err.error as { code?: string }).code, 'insufficient_quota');
    assert.match(err.message, /search/i);
    // Streamed: the failure after the stream started is an error event with the same code.
    searchThenAnswer();
    const stream = await client.responses.create({
      model: 'search-model',
      input: 'third',
      tools: [{ type: 'web_search' }],
      stream: true,
    });
    const failed = await (async () => {
      try {
        for await (const _ of stream) {
          // drain
        }
        return null;
      } catch (e) {
        return e;
      }
    })();
    assert.ok(failed instanceof Error, 'the stream ends with an error');
    assert.match(String((failed as Error).message), /search/i);
    // The refused calls' first round is metered (status 429, tokens > 0); only one search ran.
    const memberId = await memberOf('community');
    const rows = await waitFor(
      'the usage rows of the three calls',
      async () => {
        const all = await stack.prisma.usageEvent.findMany({ where: { memberId } });
        return all.filter((u) => u.model === 'search-model').length >= 3 ? all : null;
      },
      { timeoutMs: 20_000, everyMs: 100 },
    );
    const refused = rows.filter((u) => u.model === 'search-model' && u.status === 429);
    assert.ok(
      refused.length >= 1,
      JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
    );
    for (const u of refused) assert.ok(u.totalTokens > 0, 'the first round is metered');
    assert.equal(rows.filter((u) => u.model === 'web-search').length, 1);
  });

  it('bounds the loop: after the last searching round the model answers without the tool', async () => {
    const turns = Array.from({ length: 4 }, (_, i) => ({
      tool_calls: [{ name: 'web_search', arguments: { query: `wombat burrows ${i}` } }],
    }));
    up.script('search', [
      ...turns,
      (req) => ({ text: `tools offered: ${((req.body.tools ?? []) as unknown[]).length}` }),
    ]);
    const r = await stack.client('inference').responses.create({
      model: 'search-model',
      input: 'Search a lot',
      tools: [{ type: 'web_search' }],
    });
    assert.equal(r.output.filter((o) => o.type === 'web_search_call').length, 4);
    assert.equal(r.output_text, 'tools offered: 0');
  });
});

function textOf(r: OpenAI.Responses.Response): string {
  return r.output
    .flatMap((o) => (o.type === 'message' ? o.content : []))
    .map((c) => (c.type === 'output_text' ? c.text : ''))
    .join('');
}
