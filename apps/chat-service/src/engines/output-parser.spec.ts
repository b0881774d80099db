import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutputParser, type OutputParserOptions, type ParsedPiece } from './output-parser.js';
import { sseData } from './sse-reader.js';

/** Feeds `text` in every possible two-way split and in single characters; all must agree. */
function parseAllSplits(text: string, opts: OutputParserOptions): ParsedPiece[] {
  const run = (chunks: string[]) => {
    const p = new OutputParser(opts);
    const out = [...chunks.flatMap((c) => p.push(c)), ...p.end()];
    return merge(out);
  };
  const whole = run([text]);
  for (let i = 1; i < text.length; i++)
    assert.deepEqual(run([text.slice(0, i), text.slice(i)]), whole, `split at ${i}`);
  assert.deepEqual(run([...text]), whole, 'one character at a time');
  return whole;
}

/** Adjacent pieces of the same text kind merged, so that chunking does not matter. */
function merge(pieces: ParsedPiece[]): ParsedPiece[] {
  const out: ParsedPiece[] = [];
  for (const p of pieces) {
    const last = out.at(-1);
    if (last && last.type === p.type && p.type !== 'tool_call' && last.type !== 'tool_call') {
      (last as { text: string }).text += (p as { text: string }).text;
    } else out.push({ ...p });
  }
  return out;
}

describe('OutputParser', () => {
  it('splits a leading <think> block from the answer, whatever the chunking', () => {
    assert.deepEqual(
      parseAllSplits('  <think>a < b, so</think>\n\nThe answer.', { think: true, tools: null }),
      [
        { type: 'reasoning', text: 'a < b, so' },
        { type: 'content', text: 'The answer.' },
      ],
    );
  });

  it('leaves text alone when no <think> opens it, and <think> later in the text too', () => {
    assert.deepEqual(parseAllSplits('Plain <think>x</think>', { think: true, tools: null }), [
      { type: 'content', text: 'Plain <think>x</think>' },
    ]);
  });

  it('starts inside the block when the template opened it; an unclosed block is all reasoning', () => {
    assert.deepEqual(
      parseAllSplits('thinking</think>done', { think: true, startInThink: true, tools: null }),
      [
        { type: 'reasoning', text: 'thinking' },
        { type: 'content', text: 'done' },
      ],
    );
    assert.deepEqual(parseAllSplits('still thinking', { think: true, startInThink: true, tools: null }), [
      { type: 'reasoning', text: 'still thinking' },
    ]);
  });

  it('parses Hermes tool calls, several of them, arguments as a JSON string', () => {
    const text =
      'Let me look.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>{"name":"b","arguments":"{\\"y\\":2}"}</tool_call>';
    assert.deepEqual(parseAllSplits(text, { think: true, tools: 'hermes' }), [
      { type: 'content', text: 'Let me look.\n' },
      { type: 'tool_call', name: 'a', arguments: '{"x":1}' },
      { type: 'tool_call', name: 'b', arguments: '{"y":2}' },
    ]);
  });

  it('keeps a malformed call as text, and accepts a call missing its closing tag at the end', () => {
    assert.deepEqual(
      parseAllSplits('<tool_call>{"name": oops}</tool_call>', { think: false, tools: 'hermes' }),
      [{ type: 'content', text: '<tool_call>{"name": oops}</tool_call>' }],
    );
    assert.deepEqual(
      parseAllSplits('<tool_call>{"name": "f", "parameters": {}}', { think: false, tools: 'hermes' }),
      [{ type: 'tool_call', name: 'f', arguments: '{}' }],
    );
  });

  it('parses Mistral [TOOL_CALLS] lists', () => {
    assert.deepEqual(
      parseAllSplits('[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]', {
        think: false,
        tools: 'mistral',
      }),
      [
        { type: 'tool_call', name: 'f', arguments: '{"a":1}' },
        { type: 'tool_call', name: 'g', arguments: '{}' },
      ],
    );
  });
});

describe('sseData', () => {
  async function* chunks(...parts: string[]) {
    for (const p of parts) yield new TextEncoder().encode(p);
  }
  const all = async (it: AsyncIterable<string>) => {
    const out: string[] = [];
    for await (const x of it) out.push(x);
    return out;
  };

  it('yields each event data, across any chunk boundary and line ending', async () => {
    const text = ': comment\r\nevent: x\r\ndata: {"a":1}\r\n\r\ndata: line1\ndata: line2\n\ndata:[DONE]\n\n';
    const whole = await all(sseData(chunks(text)));
    assert.deepEqual(whole, ['{"a":1}', 'line1\nline2', '[DONE]']);
    for (let i = 1; i < text.length; i++) {
      assert.deepEqual(await all(sseData(chunks(text.slice(0, i), text.slice(i)))), whole, `split at ${i}`);
    }
  });

  it('decodes UTF-8 split inside a character, and yields a last event without a blank line', async () => {
    const bytes = new TextEncoder().encode('data: héllo\n\ndata: end');
    const out: string[] = [];
    async function* split() {
      yield bytes.subarray(0, 8);
      yield bytes.subarray(8);
    }
    for await (const x of sseData(split())) out.push(x);
    assert.deepEqual(out, ['héllo', 'end']);
  });
});
