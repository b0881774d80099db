/**
 * Fuzz test of the Anthropic Messages front door: generated malformed requests (from a fixed seed) to
 * POST /v1/messages (with and without ?beta=true, streamed and not), /v1/messages/count_tokens, paths
 * below /v1/messages and GET /v1/models with `anthropic-version`, against the real stack (gateway and
 * chat-service in-process on the machine's PostgreSQL, Redis and NATS). For every answer: no 5xx,
 * every error body in Anthropic's shape (`{type: 'error', error: {type, message}}`) with a
 * `request-id` header, no stack trace, no hang; a stream that starts keeps Anthropic's event grammar
 * (every event valid, message_stop or an error event last). Afterwards the stack still answers.
 *
 * FUZZ_SEED and FUZZ_COUNT override the seed (default 34) and the number of requests (default 1500).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AnthropicErrorBodySchema, AnthropicStreamEventSchema } from '@infer/contracts';
import { type Stack, startStack } from '../integration/harness.js';
import {
  type Answer,
  type Case,
  jsonBodyCase,
  runCases,
  statusLine,
  weirdString,
} from '../support/fuzz-support.js';
import { mulberry32, type Rng } from '../support/rng.js';

const SEED = Number(process.env.FUZZ_SEED ?? 34);
const COUNT = Number(process.env.FUZZ_COUNT ?? 1500);
const PARALLEL = 8;

const PNG_1PX =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const tools = [
  {
    name: 'get_weather',
    description: 'Weather of a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

const BASES: Array<{ path: string; body: Record<string, unknown> }> = [
  {
    path: '/v1/messages',
    body: {
      model: 'chat-E',
      max_tokens: 8,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'look it up', signature: 'x' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [{ type: 'text', text: 'sunny' }],
              is_error: false,
            },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1PX } },
          ],
        },
      ],
      tools,
      tool_choice: { type: 'auto' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      temperature: 0.5,
      top_k: 20,
      stop_sequences: ['END'],
      metadata: { user_id: 'fuzz' },
    },
  },
  {
    path: '/v1/messages?beta=true',
    body: {
      model: 'claude-opus-5-5',
      max_tokens: 8,
      stream: true,
      messages: [
        { role: 'user', content: 'Hello' },
        { role: 'system', content: 'env' },
      ],
      thinking: { type: 'adaptive', display: 'omitted' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'medium' },
      tools,
    },
  },
  {
    path: '/v1/messages/count_tokens',
    body: { model: 'chat-F', system: 'x', messages: [{ role: 'user', content: 'count me' }], tools },
  },
];

const PATHS = [
  '/v1/messages',
  '/v1/messages?beta=true',
  '/v1/messages/count_tokens',
  '/v1/messages/batches',
  '/v1/messages/%zz',
  `/v1/messages/${'m'.repeat(3000)}`,
  '/v1/models',
  '/v1/models/claude-opus-5-5',
  '/v1/models/nope',
];

const HEADERS = (key: string) => ({
  'x-api-key': key,
  'anthropic-version': '2023-06-01',
  'content-type': 'application/json',
});

const bodyCase = (r: Rng, key: string): Case =>
  jsonBodyCase(
    r,
    BASES,
    () => HEADERS(key),
    ['', 'null', '[]', '"x"', '{"model": "chat-E"}}', '{'.repeat(5000), '{"messages": {}}'],
    ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''],
  );

function headerCase(r: Rng, key: string): Case {
  const base = r.pick(BASES);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
  };
  switch (r.int(5)) {
    case 0:
      headers['x-api-key'] =
        weirdString(r)
          .slice(0, 300)
          .replace(/[^\x20-\x7e]/g, '') || 'x';
      break;
    case 1:
      headers.authorization = r.pick(['Bearer', 'Basic eDp5', `Bearer ${key} extra`]);
      headers['x-api-key'] = key;
      break;
    case 2:
      headers['x-api-key'] = key;
      headers['anthropic-beta'] = r.pick(['', 'nope', 'a,'.repeat(500), 'context-1m-2025-08-07']);
      headers['anthropic-version'] = r.pick(['', '1999-01-01', 'x'.repeat(300)]);
      break;
    case 3:
      break; // no key at all
    default:
      headers['x-api-key'] = `${key}x`;
  }
  return {
    name: `${base.path} headers`,
    method: 'POST',
    path: base.path,
    headers,
    body: JSON.stringify(base.body),
  };
}

function routeCase(r: Rng, key: string): Case {
  const path = r.pick(PATHS);
  const method = r.pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
  const headers: Record<string, string> = { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
  if (method !== 'GET') headers['content-type'] = 'application/json';
  return {
    name: `${method} ${path.slice(0, 40)}`,
    method,
    path,
    headers,
    body: method === 'GET' ? undefined : '{}',
  };
}

function* generate(seed: number, count: number, key: string): Generator<Case> {
  const r = mulberry32(seed);
  for (let i = 0; i < count; i++) {
    const k = r.int(10);
    if (k < 7) yield bodyCase(r, key);
    else if (k < 9) yield headerCase(r, key);
    else yield routeCase(r, key);
  }
}

/** What is wrong with an answer, or null. */
function judge(_c: Case, a: Answer | 'closed'): string | null {
  if (a === 'closed') return 'connection closed without an answer';
  if (a.status >= 500) return `${a.status}: ${a.body.toString().slice(0, 300)}`;
  const text = a.body.toString();
  if (/\n\s+at .+:\d+:\d+\)?/.test(text)) return `a stack trace in the body: ${text.slice(0, 300)}`;
  if (a.status < 400) {
    if (!/event-stream/.test(a.contentType)) return null;
    // A stream: every event valid, and it ends with message_stop or an error event.
    const frames = text.split('\n\n').filter(Boolean);
    let last = '';
    for (const f of frames) {
      const data = f.split('\n').find((l) => l.startsWith('data: '));
      if (!data) return `a stream frame without data: ${f.slice(0, 200)}`;
      const e = AnthropicStreamEventSchema.safeParse(JSON.parse(data.slice(6)));
      if (!e.success) return `an invalid stream event: ${data.slice(0, 200)}`;
      last = e.data.type;
      if (last === 'error' && e.data.type === 'error' && e.data.error.type === 'api_error')
        return `a 500 in the stream: ${data}`;
    }
    return last === 'message_stop' || last === 'error' ? null : `a stream ending with '${last}'`;
  }
  if (!/json/.test(a.contentType))
    return `${a.status} with Content-Type '${a.contentType}': ${text.slice(0, 200)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return `${a.status} body is not JSON: ${text.slice(0, 200)}`;
  }
  // Every path here is Anthropic-shaped except GET /v1/models without anthropic-version (none sent).
  const env = AnthropicErrorBodySchema.safeParse(parsed);
  if (!env.success) return `${a.status} body is not Anthropic's error shape: ${text.slice(0, 200)}`;
  if (!a.requestId) return `${a.status} without a request-id header`;
  return null;
}

describe('fuzz: malformed requests to the Anthropic Messages front door', { timeout: 600_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.close();
  });

  it(`answers ${COUNT} generated malformed requests (seed ${SEED}) in Anthropic's shape, never a 5xx or a hang`, async () => {
    const url = new URL(stack.url);
    const run = await runCases(url, generate(SEED, COUNT, stack.keys.premium), PARALLEL, judge);
    console.log(`fuzz-messages: ${run.sent} requests; statuses ${statusLine(run.statuses)}`);
    assert.equal(run.sent, COUNT);
    assert.deepEqual(run.bad, [], `${run.bad.length} kinds of bad answer`);
    const statuses = run.statuses;
    // Some bodies the fuzzer left valid were served (the test reaches the model, not only the validator).
    assert.ok((statuses.get(200) ?? 0) > 0, 'no request was served at all');
    const ok = await fetch(`${stack.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': stack.keys.premium,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({
        model: 'chat-E',
        max_tokens: 4,
        messages: [{ role: 'user', content: 'still there?' }],
      }),
    });
    assert.equal(ok.status, 200);
  });
});
