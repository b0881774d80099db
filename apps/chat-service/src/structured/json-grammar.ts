/**
 * JSON Schema -> GBNF (llama.cpp's grammar format), for grammar-constrained structured output and
 * forced tool calls on the embedded engine.
 *
 * The grammar bounds the STRUCTURE: object properties (only the declared ones, in declared order,
 * required ones always present), arrays (items, minItems/maxItems), enum/const, strings (length in
 * code points), integers and numbers, booleans, null, anyOf/oneOf/type lists, allOf of objects, local
 * `$ref`s (`#/$defs/...`, `#/definitions/...`, `#`), recursive ones included. Two choices keep the
 * text and the validator in agreement (node-llama-cpp's own converter fails both, see docs/platform-notes.md):
 * numbers never use exponents (`1e5` is not an integer to a validator), and strings never use `\u`
 * escapes (so one grammar character is one code point, as `maxLength` counts). Keywords a grammar
 * cannot express (minimum/maximum beyond the sign and digit count, pattern, formats, uniqueItems ...)
 * are left to the validator (`json-schema.ts`): the engine checks every constrained output against
 * the schema before returning it.
 */
type Schema = Record<string, unknown>;

const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Repetition bounds above this are written as open-ended (`{m,}`) and left to the validator. */
const MAX_BOUNDED_REPEAT = 256;

/** A GBNF string literal for `s`. */
export function gbnfLiteral(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

const PRIMITIVES: Record<string, string> = {
  ws: '| " " | "\\n" [ \\t]{0,20}',
  char: '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" ["\\\\/bfnrt]',
  string: '"\\"" char* "\\"" ws',
  number: '"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,15})? ws',
  integer: '"-"? ("0" | [1-9] [0-9]{0,15}) ws',
  boolean: '("true" | "false") ws',
  null: '"null" ws',
  value: 'object | array | string | number | boolean | null',
  object: '"{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? "}" ws',
  array: '"[" ws ( value ( "," ws value )* )? "]" ws',
};
const PRIMITIVE_DEPS: Record<string, string[]> = {
  string: ['char', 'ws'],
  number: ['ws'],
  integer: ['ws'],
  boolean: ['ws'],
  null: ['ws'],
  value: ['object', 'array', 'string', 'number', 'boolean', 'null'],
  object: ['ws', 'string', 'value'],
  array: ['ws', 'value'],
};

export class GbnfBuilder {
  private readonly rules = new Map<string, string>();
  private readonly byBody = new Map<string, string>();
  private readonly refs = new Map<string, string>();
  private seq = 0;
  private rootId = 0;

  constructor(private rootSchema: Schema = {}) {}

  /** Rules for `schema` whose `$ref`s resolve against `schema` itself (one tool's parameters). */
  scoped(schema: Schema): string {
    const prev = [this.rootSchema, this.rootId] as const;
    this.rootSchema = schema;
    this.rootId = ++this.seq;
    try {
      return this.schema(schema);
    } finally {
      [this.rootSchema, this.rootId] = prev;
    }
  }

  /** Uses a primitive rule (and the ones it needs); returns its name. */
  prim(name: keyof typeof PRIMITIVES): string {
    if (!this.rules.has(name)) {
      this.rules.set(name, PRIMITIVES[name] as string);
      for (const d of PRIMITIVE_DEPS[name] ?? []) this.prim(d as keyof typeof PRIMITIVES);
    }
    return name;
  }

  /** Adds a rule with `body` (deduplicated); returns its name. */
  rule(hint: string, body: string): string {
    const same = this.byBody.get(body);
    if (same) return same;
    const name = `${hint.replace(/[^a-zA-Z0-9]/g, '').slice(0, 20) || 'r'}-${++this.seq}`;
    this.rules.set(name, body);
    this.byBody.set(body, name);
    return name;
  }

  /** The finished grammar with `root ::= rootExpr`. */
  build(rootExpr: string): string {
    const lines = [`root ::= ${rootExpr}`];
    for (const [name, body] of this.rules) lines.push(`${name} ::= ${body}`);
    return `${lines.join('\n')}\n`;
  }

  /** A rule expression for values of `schema`; every value rule consumes its trailing whitespace. */
  schema(s: unknown): string {
    if (s === true || s === undefined || (isObj(s) && Object.keys(s).length === 0)) return this.prim('value');
    if (!isObj(s)) return this.prim('value');
    if (typeof s.$ref === 'string') return this.ref(s.$ref);
    if ('const' in s) return `${gbnfLiteral(JSON.stringify(s.const))} ${this.prim('ws')}`;
    if (Array.isArray(s.enum) && s.enum.length) {
      return `(${s.enum.map((v) => gbnfLiteral(JSON.stringify(v))).join(' | ')}) ${this.prim('ws')}`;
    }
    for (const k of ['anyOf', 'oneOf'] as const) {
      const branches = s[k];
      if (Array.isArray(branches) && branches.length) {
        const { [k]: _drop, ...rest } = s;
        const alts = branches.map((b) => this.schema(isObj(b) ? { ...rest, ...b } : b));
        return `(${[...new Set(alts)].join(' | ')})`;
      }
    }
    if (Array.isArray(s.allOf) && s.allOf.length) {
      const { allOf, ...rest } = s;
      return this.schema(mergeAll([rest, ...allOf.filter(isObj)]));
    }
    let type = s.type;
    if (Array.isArray(type)) {
      const alts = type.map((t) => this.schema({ ...s, type: t }));
      return `(${[...new Set(alts)].join(' | ')})`;
    }
    if (s.nullable === true) {
      const { nullable: _n, ...rest } = s;
      return `(${this.schema(rest)} | ${this.prim('null')})`;
    }
    if (type === undefined) {
      if (isObj(s.properties)) type = 'object';
      else if (s.items !== undefined) type = 'array';
      else return this.prim('value');
    }
    switch (type) {
      case 'object':
        return this.object(s);
      case 'array':
        return this.array(s);
      case 'string':
        return this.string(s);
      case 'integer':
        return this.integer(s);
      case 'number':
        return this.prim('number');
      case 'boolean':
        return this.prim('boolean');
      case 'null':
        return this.prim('null');
      default:
        return this.prim('value');
    }
  }

  private ref(ref: string): string {
    const key = `${this.rootId}:${ref}`;
    const known = this.refs.get(key);
    if (known) return known;
    const target = resolveRef(this.rootSchema, ref);
    if (target === undefined) return this.prim('value');
    const name = `ref-${++this.seq}`;
    this.refs.set(key, name);
    this.rules.set(name, '""'); // placeholder: recursive refs resolve to the name
    this.rules.set(name, this.schema(target));
    return name;
  }

  private object(s: Schema): string {
    const ws = this.prim('ws');
    const props = isObj(s.properties) ? Object.entries(s.properties) : [];
    if (!props.length) {
      if (isObj(s.properties) && s.additionalProperties === false)
        return this.rule('empty', `"{" ${ws} "}" ${ws}`);
      if (isObj(s.additionalProperties) && Object.keys(s.additionalProperties).length) {
        const v = this.schema(s.additionalProperties);
        const str = this.prim('string');
        return this.rule(
          'map',
          `"{" ${ws} ( ${str} ":" ${ws} ${v} ( "," ${ws} ${str} ":" ${ws} ${v} )* )? "}" ${ws}`,
        );
      }
      return this.prim('object');
    }
    const required = new Set(
      Array.isArray(s.required) ? s.required.filter((k) => typeof k === 'string') : [],
    );
    const kv = props.map(([k, v]) => `${gbnfLiteral(JSON.stringify(k))} ${ws} ":" ${ws} ${this.schema(v)}`);
    // follow[i]: what may come once property i was written. Properties keep their declared order; an
    // optional one may be skipped, a required one may not. '' = nothing more.
    const follow: string[] = [];
    let start = '';
    for (let i = props.length - 1; i >= -1; i--) {
      const alts: string[] = [];
      let blocked = false;
      for (let j = i + 1; j < props.length; j++) {
        const sep = i < 0 ? '' : `"," ${ws} `;
        alts.push(`${sep}${kv[j]}${follow[j] ? ` ${follow[j]}` : ''}`);
        if (required.has(props[j]?.[0] as string)) {
          blocked = true;
          break;
        }
      }
      const body = alts.length ? `( ${alts.join(' | ')} )${blocked ? '' : '?'}` : '';
      const name = body ? this.rule(i < 0 ? 'objstart' : 'objnext', body) : '';
      if (i >= 0) follow[i] = name;
      else start = name;
    }
    return this.rule('object', `"{" ${ws} ${start ? `${start} ` : ''}"}" ${ws}`);
  }

  private array(s: Schema): string {
    const ws = this.prim('ws');
    const item = this.schema(s.items);
    const min = Math.max(0, Math.floor(num(s.minItems) ?? 0));
    const maxRaw = num(s.maxItems);
    const max = maxRaw === undefined ? undefined : Math.floor(maxRaw);
    if (max !== undefined && max <= 0) return this.rule('array', `"[" ${ws} "]" ${ws}`);
    const rest = `( "," ${ws} ${item} )${repeat(Math.max(0, min - 1), max === undefined ? undefined : max - 1)}`;
    const body = min >= 1 ? `${item} ${rest}` : `( ${item} ${rest} )?`;
    return this.rule('array', `"[" ${ws} ${body} "]" ${ws}`);
  }

  private string(s: Schema): string {
    const min = Math.max(0, Math.floor(num(s.minLength) ?? 0));
    const max = num(s.maxLength);
    const fmt = typeof s.format === 'string' ? FORMATS[s.format] : undefined;
    if (fmt && min === 0 && max === undefined)
      return this.rule(`fmt${s.format}`, `"\\"" ${fmt} "\\"" ${this.prim('ws')}`);
    if (min === 0 && max === undefined) return this.prim('string');
    this.prim('char');
    const body = `"\\"" char${repeat(min, max === undefined ? undefined : Math.floor(max))} "\\"" ${this.prim('ws')}`;
    return this.rule('string', body);
  }

  private integer(s: Schema): string {
    const exMin = num(s.exclusiveMinimum);
    const exMax = num(s.exclusiveMaximum);
    const lo = maxOf(
      num(s.minimum) === undefined ? undefined : Math.ceil(num(s.minimum) as number),
      exMin === undefined ? undefined : Math.floor(exMin) + 1,
    );
    const hi = minOf(
      num(s.maximum) === undefined ? undefined : Math.floor(num(s.maximum) as number),
      exMax === undefined ? undefined : Math.ceil(exMax) - 1,
    );
    return this.rule('int', `(${intRange(lo, hi)}) ${this.prim('ws')}`);
  }
}

const maxOf = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.max(a, b);
const minOf = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/** Integers beyond this magnitude are not enumerated digit by digit. */
const MAX_EXACT_INT = 1e15;

/**
 * GBNF for the integers in [lo, hi] (either bound open), written without leading zeros or exponents,
 * so that bounded integers are exact in the grammar, not only in the validator.
 */
export function intRange(lo: number | undefined, hi: number | undefined): string {
  const big = (v: number | undefined) => v !== undefined && Math.abs(v) > MAX_EXACT_INT;
  if (big(lo) || big(hi)) return '"-"? ("0" | [1-9] [0-9]{0,15})';
  if (lo !== undefined && hi !== undefined && lo > hi) return '"0"'; // empty range: the validator reports it
  const alts: string[] = [];
  // Negative part: magnitudes in [max(1, -hi), -lo].
  if (lo === undefined || lo < 0) {
    const magLo = hi !== undefined && hi < 0 ? -hi : 1;
    alts.push(`"-" (${natRange(magLo, lo === undefined ? undefined : -lo)})`);
  }
  // Non-negative part: [max(0, lo), hi].
  if (hi === undefined || hi >= 0) alts.push(natRange(Math.max(0, lo ?? 0), hi));
  return alts.join(' | ');
}

/** Natural numbers in [lo, hi] (hi open when undefined). */
function natRange(lo: number, hi: number | undefined): string {
  const maxDigits = 16;
  const alts: string[] = [];
  const loLen = String(lo).length;
  const hiLen = hi === undefined ? maxDigits : String(hi).length;
  for (let len = loLen; len <= hiLen; len++) {
    const from = len === loLen ? lo : 10 ** (len - 1);
    const to = hi !== undefined && len === hiLen ? hi : 10 ** len - 1;
    if (hi === undefined && len > loLen) {
      // Every longer number: one alternative for all lengths.
      alts.push(`[1-9] [0-9]{${len - 1},${maxDigits - 1}}`);
      break;
    }
    alts.push(sameLength(String(from), String(to)));
  }
  return alts.join(' | ');
}

/** Numbers from `lo` to `hi`, both strings of the same length (digit-by-digit range expansion). */
function sameLength(lo: string, hi: string): string {
  if (!lo.length) return '""';
  if (lo === hi) return `"${lo}"`;
  const a = Number(lo[0]);
  const b = Number(hi[0]);
  const restLen = lo.length - 1;
  if (a === b) return `"${a}" (${sameLength(lo.slice(1), hi.slice(1))})`;
  const alts: string[] = [];
  const nines = '9'.repeat(restLen);
  const zeros = '0'.repeat(restLen);
  alts.push(restLen ? `"${a}" (${sameLength(lo.slice(1), nines)})` : `"${a}"`);
  if (b - a > 1) alts.push(`[${a + 1}-${b - 1}]${restLen ? ` [0-9]{${restLen}}` : ''}`);
  alts.push(restLen ? `"${b}" (${sameLength(zeros, hi.slice(1))})` : `"${b}"`);
  return alts.join(' | ');
}

/** GBNF for the string formats whose shape a grammar can pin down. */
const FORMATS: Record<string, string> = {
  date: '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])',
  time: '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] "Z"',
  'date-time':
    '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) "T" ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] "Z"',
  uuid: '[0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}',
};

function repeat(min: number, max: number | undefined): string {
  if (max !== undefined && max < min) return `{${min}}`;
  if (max === undefined || max > MAX_BOUNDED_REPEAT) return min === 0 ? '*' : `{${min},}`;
  return `{${min},${max}}`;
}

function resolveRef(root: Schema, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

/** allOf of object schemas: properties and required merged (other keywords: the first wins). */
function mergeAll(parts: Schema[]): Schema {
  const out: Schema = {};
  const props: Schema = {};
  const required: string[] = [];
  for (const p of parts) {
    for (const [k, v] of Object.entries(p)) {
      if (k === 'properties' && isObj(v)) Object.assign(props, v);
      else if (k === 'required' && Array.isArray(v)) required.push(...v.filter((x) => typeof x === 'string'));
      else if (!(k in out)) out[k] = v;
    }
  }
  if (Object.keys(props).length) {
    out.properties = props;
    out.type ??= 'object';
  }
  if (required.length) out.required = [...new Set(required)];
  return out;
}

/** Grammar for one JSON value of `schema` (json_schema), or any JSON object when schema is null. */
export function jsonGrammar(schema: Record<string, unknown> | null): string {
  const b = new GbnfBuilder(schema ?? {});
  const root = schema ? b.schema(schema) : b.prim('object');
  return b.build(root);
}

export interface ToolGrammarSpec {
  name: string;
  parameters: Record<string, unknown> | undefined;
}

/**
 * Grammar for tool calls in the model's own format: `hermes` writes each call as
 * `<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>`, `mistral` as
 * `[TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]`. One call, or 1..maxCalls when `multiple`.
 */
export function toolCallGrammar(
  tools: ToolGrammarSpec[],
  format: 'hermes' | 'mistral',
  multiple: boolean,
  maxCalls = 4,
): string {
  const b = new GbnfBuilder();
  const alts = tools.map((t) => {
    const args = b.scoped(t.parameters ?? { type: 'object' });
    return `${gbnfLiteral(`{"name": ${JSON.stringify(t.name)}, "arguments": `)} ${args} "}"`;
  });
  const call = b.rule('call', alts.join(' | '));
  const more = multiple ? `{0,${Math.max(0, maxCalls - 1)}}` : '{0}';
  if (format === 'mistral') {
    return b.build(`"[TOOL_CALLS][" ${call} ( ", " ${call} )${more} "]"`);
  }
  const one = b.rule('toolcall', `"<tool_call>\\n" ${call} "\\n</tool_call>"`);
  return b.build(`${one} ( "\\n" ${one} )${more}`);
}
