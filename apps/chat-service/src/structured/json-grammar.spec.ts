import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { gbnfLiteral, intRange, jsonGrammar, toolCallGrammar } from './json-grammar.js';
import { checkJson, schemaProblem } from './json-schema.js';

/** The GBNF subset intRange writes is also a regular expression once the quotes are dropped. */
function gbnfToRegex(g: string): RegExp {
  const parts = g.split(/("(?:[^"\\]|\\.)*")/);
  const src = parts
    .map((p, i) =>
      i % 2
        ? p
            .slice(1, -1)
            .replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
            .replace(/[-[\]{}()*+?.\\^$|]/g, '\\$&')
        : p.replace(/\s+/g, ''),
    )
    .join('');
  return new RegExp(`^(?:${src})$`);
}

describe('intRange', () => {
  it('matches exactly the integers of the range, without leading zeros', () => {
    const ranges: Array<[number | undefined, number | undefined]> = [
      [0, 150],
      [1, 7],
      [-5, 5],
      [-20, -3],
      [95, 1234],
      [100, 100],
      [0, 0],
      [undefined, 10],
      [3, undefined],
      [-300, undefined],
      [undefined, undefined],
    ];
    for (const [lo, hi] of ranges) {
      const re = gbnfToRegex(intRange(lo, hi));
      for (let v = -400; v <= 1400; v++) {
        const inRange = (lo === undefined || v >= lo) && (hi === undefined || v <= hi);
        assert.equal(re.test(String(v)), inRange, `[${lo}, ${hi}] ${v}`);
      }
      assert.equal(re.test('007'), false, 'no leading zeros');
      assert.equal(re.test('1e3'), false, 'no exponents');
    }
  });
});

describe('jsonGrammar / toolCallGrammar', () => {
  it('writes GBNF literals with escapes', () => {
    assert.equal(gbnfLiteral('a"b\\c\nd'), '"a\\"b\\\\c\\nd"');
  });

  it('produces grammars llama.cpp accepts, for the schema keywords it covers', async () => {
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const schemas: Record<string, unknown>[] = [
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
      {
        type: 'object',
        properties: { a: { type: 'integer' }, b: { type: 'number' }, c: { type: 'boolean' } },
      },
      { type: 'object', properties: {}, additionalProperties: false },
      { type: 'object', additionalProperties: { type: 'integer' } },
      { type: 'array', items: { type: 'string', format: 'date' }, minItems: 1, maxItems: 3 },
      { anyOf: [{ type: 'string' }, { type: 'null' }] },
      { type: ['integer', 'null'], minimum: 0, maximum: 9 },
      { enum: ['x', 1, null, true] },
      { const: { fixed: [1, 2] } },
      {
        allOf: [
          { properties: { a: { type: 'string' } }, required: ['a'] },
          { properties: { b: { type: 'integer' } } },
        ],
      },
      {
        type: 'object',
        properties: { node: { $ref: '#/$defs/node' } },
        $defs: {
          node: {
            type: 'object',
            properties: { next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } },
          },
        },
      },
      { type: 'string', format: 'uuid' },
      { type: 'string', minLength: 2, maxLength: 1000 },
    ];
    for (const s of schemas) {
      const g = jsonGrammar(s);
      await assert.doesNotReject(llama.createGrammar({ grammar: g }), `${JSON.stringify(s)}\n${g}`);
      assert.equal(schemaProblem(s), null, JSON.stringify(s));
    }
    await assert.doesNotReject(llama.createGrammar({ grammar: jsonGrammar(null) }));
    const tools = [
      { name: 'a', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } },
      { name: 'b', parameters: { type: 'object', properties: {}, additionalProperties: false } },
    ];
    for (const format of ['hermes', 'mistral'] as const) {
      for (const multiple of [false, true]) {
        await assert.doesNotReject(
          llama.createGrammar({ grammar: toolCallGrammar(tools, format, multiple) }),
        );
      }
    }
  });

  it('keeps properties in order, required ones mandatory, optional ones skippable', () => {
    const g = jsonGrammar({
      type: 'object',
      properties: { a: { const: 1 }, b: { const: 2 }, c: { const: 3 } },
      required: ['b'],
    });
    // The object rule, flattened to a regex over the compact form (no whitespace) of the literals.
    const rules = new Map(
      g
        .trim()
        .split('\n')
        .map((l) => l.split(' ::= ') as [string, string]),
    );
    const expand = (expr: string, depth = 0): string =>
      depth > 20
        ? ''
        : expr.replace(/\b([a-z]+-\d+|ws|root)\b/g, (name) =>
            name === 'ws' ? '' : `(${expand(rules.get(name) ?? '', depth + 1)})`,
          );
    const re = gbnfToRegex(expand('root'));
    const ok = ['{"b":2}', '{"a":1,"b":2}', '{"b":2,"c":3}', '{"a":1,"b":2,"c":3}'];
    const bad = ['{}', '{"a":1}', '{"c":3}', '{"b":2,"a":1}', '{"a":1,"c":3}', '{"b":2,"b":2}'];
    for (const s of ok) assert.ok(re.test(s), s);
    for (const s of bad) assert.ok(!re.test(s), s);
  });
});

describe('checkJson', () => {
  it('parses and validates against the schema; json_object needs an object', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', maximum: 3 } }, required: ['n'] };
    assert.deepEqual(checkJson('{"n": 2}', schema), { ok: true, value: { n: 2 } });
    assert.equal(checkJson('{"n": 4}', schema).ok, false);
    assert.equal(checkJson('{"n": 1e0}', schema).ok, true, 'a validator reads 1e0 as an integer');
    assert.equal(checkJson('{"n":', schema).ok, false);
    assert.equal(checkJson('[1]', null).ok, false);
    assert.equal(checkJson('{"free": [1, "x"]}', null).ok, true);
    assert.equal(checkJson('{"s": "\u00e9\u00e9\u00e9"}', { properties: { s: { maxLength: 3 } } }).ok, true);
  });

  it('reports an invalid schema', () => {
    assert.match(schemaProblem({ type: 'wat' }) ?? '', /schema is invalid/);
    assert.match(schemaProblem({ $ref: '#/nope' }) ?? '', /resolve reference/);
    assert.equal(
      schemaProblem({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }),
      null,
    );
  });
});
