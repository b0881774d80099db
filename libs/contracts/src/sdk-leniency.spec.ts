/**
 * Leniency as the OpenAI SDK's own request types define it, not as our schema does: every optional
 * field of `ResponseCreateParamsBase` (responses.d.ts) and `ChatCompletionCreateParamsBase`
 * (chat/completions.d.ts) is read with the TypeScript checker, and for each one the values that ask
 * for nothing are generated from its declared type (null where it is nullable, `[]` for arrays, `false`
 * for booleans, `{}` for objects whose members are all optional) plus the defaults and hints of the
 * table below. Each must pass our request schema alone. A field the SDK gains later fails the first
 * test until it gets a row here (a decision: accepted, or refused naming it).
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { ChatCompletionRequestSchema } from './chat.js';
import { ResponseRequestSchema } from './responses.js';

const require = createRequire(import.meta.url);
const sdkRoot = dirname(require.resolve('openai'));

interface Field {
  name: string;
  /** Generated from the declared type. */
  nothing: unknown[];
}

const FILES = {
  responses: join(sdkRoot, 'resources/responses/responses.d.ts'),
  chat: join(sdkRoot, 'resources/chat/completions/completions.d.ts'),
};
/** One checker for both files (building it is the slow part). */
let program: ts.Program | undefined;

/** The optional fields of `iface` in `file` and their generated "asks for nothing" values. */
function sdkFields(file: string, iface: string): Field[] {
  program ??= ts.createProgram(Object.values(FILES), { strict: true, noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const sf = program.getSourceFile(file);
  assert.ok(sf, file);
  let decl: ts.InterfaceDeclaration | undefined;
  ts.forEachChild(sf, (n) => {
    if (ts.isInterfaceDeclaration(n) && n.name.text === iface) decl = n;
  });
  assert.ok(decl, `${iface} in ${file}`);
  const type = checker.getTypeAtLocation(decl);
  return type.getProperties().map((p) => {
    const pt = checker.getTypeOfSymbolAtLocation(p, decl as ts.Node);
    const members = pt.isUnion() ? pt.types : [pt];
    const nothing: unknown[] = [];
    const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
    for (const m of members) {
      if (m.flags & ts.TypeFlags.Null) nothing.push(null);
      else if (m.flags & ts.TypeFlags.BooleanLiteral && checker.typeToString(m) === 'false')
        nothing.push(false);
      else if (checker.isArrayType(m)) nothing.push([]);
      else if (
        m.flags & ts.TypeFlags.Object &&
        !checker.isArrayType(m) &&
        m.getCallSignatures().length === 0
      ) {
        const props = m.getProperties();
        if (props.length && props.every((q) => (q.flags & ts.SymbolFlags.Optional) !== 0)) nothing.push({});
      }
    }
    return {
      name: p.name,
      nothing: optional ? [...new Set(nothing.map((v) => JSON.stringify(v)))].map((v) => JSON.parse(v)) : [],
    };
  });
}

/**
 * Every SDK field, with the values beyond the generated ones that ask for nothing (defaults, hints).
 * `required`: a field our API requires (not part of the leniency table). `asks`: generated values that
 * do ask for something (must be a 400 naming the field).
 */
type Row = { extra?: unknown[]; required?: true; asks?: unknown[] };
const RESPONSES: Record<string, Row> = {
  model: { required: true },
  input: { required: true },
  background: {},
  context_management: {},
  conversation: {},
  include: { extra: [['reasoning.encrypted_content'], ['web_search_call.action.sources']] },
  instructions: { extra: ['You are terse.'] },
  max_output_tokens: { extra: [1024] },
  metadata: { extra: [{ run: '1' }] },
  moderation: {},
  parallel_tool_calls: { extra: [true] },
  previous_response_id: {},
  prompt: {},
  prompt_cache_key: { extra: ['session-42'] },
  prompt_cache_options: { extra: [{ mode: 'implicit' }] },
  prompt_cache_retention: { extra: ['in_memory', '24h'] },
  reasoning: {
    extra: [{ summary: 'auto' }, { effort: null, summary: 'detailed' }, { generate_summary: null }],
  },
  safety_identifier: { extra: ['user-hash-1'] },
  service_tier: { extra: ['auto', 'default', 'flex', 'priority'] },
  store: { extra: [true] },
  stream: {},
  stream_options: { extra: [{ include_obfuscation: false }] },
  temperature: { extra: [0.6] },
  text: { extra: [{ verbosity: 'medium' }, { format: { type: 'text' } }, { format: null, verbosity: null }] },
  tool_choice: { extra: ['auto', 'none'] },
  tools: {},
  top_logprobs: { extra: [0] },
  top_p: { extra: [0.95] },
  truncation: { extra: ['disabled'] },
  user: { extra: ['end-user-1'] },
};

const CHAT: Record<string, Row> = {
  model: { required: true },
  messages: { required: true },
  audio: {},
  frequency_penalty: { extra: [0] },
  function_call: { extra: ['none', 'auto'] },
  functions: {},
  logit_bias: { extra: [{}] },
  logprobs: {},
  max_completion_tokens: { extra: [100] },
  max_tokens: { extra: [100] },
  metadata: { extra: [{ a: 'b' }] },
  modalities: { extra: [['text']] },
  moderation: {},
  n: { extra: [1] },
  parallel_tool_calls: { extra: [true] },
  prediction: {},
  presence_penalty: { extra: [0] },
  prompt_cache_key: { extra: ['k'] },
  prompt_cache_options: { extra: [{ mode: 'implicit' }] },
  prompt_cache_retention: { extra: ['24h'] },
  reasoning_effort: {},
  response_format: { extra: [{ type: 'text' }] },
  safety_identifier: { extra: ['s'] },
  seed: { extra: [7] },
  service_tier: { extra: ['auto', 'default', 'flex', 'scale', 'priority'] },
  stop: { extra: ['\n\n'] },
  store: { extra: [true] },
  stream: {},
  stream_options: { extra: [{ include_usage: true }] },
  temperature: { extra: [1] },
  tool_choice: { extra: ['none', 'auto'] },
  tools: {},
  top_logprobs: { extra: [0] },
  top_p: { extra: [1] },
  user: { extra: ['u'] },
  verbosity: { extra: ['low', 'medium', 'high'] },
  // `{}` turns search on in OpenAI's API.
  web_search_options: { asks: [{}] },
};

function table(
  file: string,
  iface: string,
  rows: Record<string, Row>,
  base: Record<string, unknown>,
  schema: typeof ResponseRequestSchema | typeof ChatCompletionRequestSchema,
): void {
  const fields = sdkFields(file, iface);

  it(`has a row for every field of the SDK's ${iface}, and no row for a field it lacks`, () => {
    const sdk = fields.map((f) => f.name).sort();
    assert.deepEqual(sdk, Object.keys(rows).sort());
  });

  it(`accepts every "asks for nothing" value of ${iface} (generated from the SDK's types)`, () => {
    let count = 0;
    const failures: string[] = [];
    for (const f of fields) {
      const row = rows[f.name];
      if (!row || row.required) continue;
      const asks = new Set((row.asks ?? []).map((v) => JSON.stringify(v)));
      for (const v of [...f.nothing, ...(row.extra ?? [])]) {
        count++;
        const r = schema.safeParse({ ...base, [f.name]: v });
        if (asks.has(JSON.stringify(v))) {
          const param = r.success ? null : r.error.issues[0]?.path.join('.');
          if (param !== f.name)
            failures.push(`${f.name}: ${JSON.stringify(v)} asks for something and passed`);
        } else if (!r.success) {
          failures.push(`${f.name}: ${JSON.stringify(v)} -> ${r.error.issues[0]?.message}`);
        }
      }
    }
    assert.deepEqual(failures, []);
    assert.ok(count > 60, `only ${count} values were tried`);
  });
}

describe('leniency from the OpenAI SDK types: Responses', () => {
  table(
    FILES.responses,
    'ResponseCreateParamsBase',
    RESPONSES,
    { model: 'chat-E', input: 'hi' },
    ResponseRequestSchema,
  );
});

describe('leniency from the OpenAI SDK types: chat completions', () => {
  table(
    FILES.chat,
    'ChatCompletionCreateParamsBase',
    CHAT,
    { model: 'chat-E', messages: [{ role: 'user', content: 'hi' }] },
    ChatCompletionRequestSchema,
  );
});
