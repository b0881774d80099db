import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseObjectSchema } from '@infer/contracts';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import type { ResponseStreamEvent as SdkEvent } from 'openai/resources/responses/responses';
import { ResponseAssembler, type ResponseHead, type ResponseStreamEvent } from './responses-events.js';

const head: ResponseHead = {
  id: 'resp_1',
  object: 'response',
  created_at: 1,
  model: 'chat-E',
  instructions: null,
  max_output_tokens: 100,
  temperature: 0.6,
  top_p: 0.95,
  error: null,
  tools: [],
  tool_choice: 'none',
  parallel_tool_calls: true,
  metadata: {},
  text: { format: { type: 'text' } },
  store: false,
};
const usage = { input_tokens: 3, output_tokens: 4, total_tokens: 7 };

function run(reasons: boolean, feed: (a: ResponseAssembler) => void, cut = false) {
  const events: ResponseStreamEvent[] = [];
  const a = new ResponseAssembler(head, (e) => events.push(e));
  a.start(reasons);
  feed(a);
  const response = a.finish(cut, usage);
  // The same deltas without emitting build the same output (the unary reply).
  const quiet = new ResponseAssembler(head, null);
  quiet.start(reasons);
  feed(quiet);
  const unary = quiet.finish(cut, usage);
  assert.deepEqual(
    unary.output.map((o) => [o.type, JSON.stringify({ ...o, id: '' }).length]),
    response.output.map((o) => [o.type, JSON.stringify({ ...o, id: '' }).length]),
  );
  return { events, response };
}

/** Replays the events through the openai SDK's own accumulator (what responses.stream() does). */
function sdkSnapshot(events: ResponseStreamEvent[]) {
  let snap: ReturnType<typeof accumulateResponse> | undefined;
  for (const e of events) {
    if (e.type === 'response.completed') break;
    snap = accumulateResponse(e as unknown as SdkEvent, snap);
  }
  return snap;
}

describe('ResponseAssembler (the Responses event sequence)', () => {
  it('reasoning then text: the full OpenAI sequence, numbered from 0, ending with the whole response', () => {
    const { events, response } = run(true, (a) => {
      a.delta({ reasoning_content: 'Let me ' });
      a.delta({ reasoning_content: 'think.' });
      a.delta({ content: 'Hello' });
      a.delta({ content: ' world' });
    });
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.reasoning_text.delta',
        'response.reasoning_text.delta',
        'response.reasoning_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const created = events[0] as unknown as { response: { status: string; output: unknown[] } };
    assert.equal(created.response.status, 'in_progress');
    assert.deepEqual(created.response.output, []);
    const done = events.find((e) => e.type === 'response.output_text.done') as unknown as { text: string };
    assert.equal(done.text, 'Hello world');
    ResponseObjectSchema.parse(response);
    assert.equal(response.status, 'completed');
    assert.deepEqual(
      response.output.map((o) => o.type),
      ['reasoning', 'message'],
    );
    const last = events.at(-1) as unknown as { response: typeof response };
    assert.deepEqual(last.response, response);
    // The SDK's accumulator rebuilds the same output from the incremental events alone.
    const snap = sdkSnapshot(events);
    assert.equal(snap?.output_text, 'Hello world');
    assert.deepEqual(JSON.parse(JSON.stringify(snap?.output)), JSON.parse(JSON.stringify(response.output)));
  });

  it('function calls: one item per call, arguments streamed, closed at the end', () => {
    const { events, response } = run(false, (a) => {
      a.delta({
        tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '' } }],
      });
      a.delta({
        tool_calls: [
          { index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{"x"' } },
        ],
      });
      a.delta({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] });
      a.delta({ tool_calls: [{ index: 1, function: { arguments: ':2}' } }] });
    });
    ResponseObjectSchema.parse(response);
    assert.deepEqual(
      response.output.map((o) =>
        o.type === 'function_call' ? [o.call_id, o.name, o.arguments, o.status] : o.type,
      ),
      [
        ['call_a', 'f', '{"a":1}', 'completed'],
        ['call_b', 'g', '{"x":2}', 'completed'],
      ],
    );
    const dones = events.filter((e) => e.type === 'response.function_call_arguments.done');
    assert.deepEqual(
      dones.map((e) => e.arguments),
      ['{"a":1}', '{"x":2}'],
    );
    const snap = sdkSnapshot(events);
    assert.deepEqual(JSON.parse(JSON.stringify(snap?.output)), JSON.parse(JSON.stringify(response.output)));
  });

  it('an empty answer is one empty message; a cut answer is incomplete', () => {
    const empty = run(false, () => undefined).response;
    assert.deepEqual(
      empty.output.map((o) => o.type),
      ['message'],
    );
    const cut = run(true, (a) => a.delta({ reasoning_content: 'long' }), true).response;
    assert.equal(cut.status, 'incomplete');
    assert.equal(cut.incomplete_details?.reason, 'max_output_tokens');
    assert.deepEqual(
      cut.output.map((o) => (o.type === 'message' ? o.status : o.type)),
      ['reasoning', 'incomplete'],
    );
  });
});
