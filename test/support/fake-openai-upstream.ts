/**
 * A FAKE OpenAI-compatible upstream server for tests of the `openai` chat engine: it speaks the chat
 * completions and completions HTTP API (JSON and SSE streaming) on 127.0.0.1 at a random port, and
 * picks its behaviour from the request's `model`, which the test catalog sets per scenario:
 *
 *   plain          streams "Hello from the upstream." word by word, usage in a last chunk
 *   think-inline   `<think>...</think>` inside `content`, tags split across chunks (no reasoning field)
 *   think-native   `reasoning_content` deltas, then content
 *   tools-native   `tool_calls` deltas (arguments streamed in pieces), finish_reason tool_calls
 *   tools-hermes   a Hermes `<tool_call>{...}</tool_call>` inside `content`, finish_reason stop
 *   length         finish_reason length after 3 words
 *   vllm-stop      applies the request's `stop` to "Hello from the upstream." as vLLM does: the text cut
 *                  before the earliest match, the matched string in the finish chunk's `stop_reason`
 *                  (null when none matched)
 *   sglang-stop    the same, the matched string in `matched_stop` (SGLang's name)
 *   json-only      ignores `stream` and answers one plain JSON ChatCompletion
 *   no-usage       streams without a usage chunk
 *   bad-request    400 `{"error": {"message", "param"}}` (vLLM/OpenAI style)
 *   bad-detail     422 `{"detail": [{"msg"}]}` (FastAPI style)
 *   server-error   500
 *   busy           429
 *   unauthorized   401
 *   mid-error      two chunks, then an SSE `{"error": ...}` event
 *   cut            two chunks, then the connection ends without finish_reason or [DONE]
 *   hang           never answers (for timeouts)
 *   slow           a chunk every 20 ms for 30 s (for aborts: `closed` counts requests whose client left)
 *   echo           answers with the JSON of the request body it received, as content
 *
 * `POST /v1/completions` streams `text` chunks (`plain`) the same way. Every request is recorded.
 * A test double, not a model.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface FakeUpstream {
  /** Base URL ending in /v1. */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Requests whose client closed the connection before the answer ended. */
  closed: number;
  /** TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests). */
  connections: number;
  close(): Promise<void>;
}

const enc = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const state = { closed: 0, connections: 0 };
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
        return;
      }
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      void serve(req, res, body);
    });
  });

  const later = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(() => {
        timers.delete(t);
        r();
      }, ms);
      timers.add(t);
    });

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    body: Record<string, unknown>,
  ): Promise<void> {
    const scenario = String(body.model ?? 'plain');
    const legacy = (req.url ?? '').endsWith('/completions') && !(req.url ?? '').endsWith('/chat/completions');
    const id = 'up-1';
    const created = 1_700_000_000;
    const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
    const sse = () => res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      legacy
        ? {
            id,
            object: 'text_completion',
            created,
            model: scenario,
            choices: [{ index: 0, text: delta.content ?? '', finish_reason: finish }],
          }
        : {
            id,
            object: 'chat.completion.chunk',
            created,
            model: scenario,
            choices: [{ index: 0, delta, finish_reason: finish }],
          };
    const words = (text: string) => text.match(/\S+\s*/g) ?? [];
    const send = (s: string) => {
      if (!res.writableEnded) res.write(s);
    };
    const streamText = async (
      pieces: string[],
      finish = 'stop',
      withUsage = true,
      finishExtra: Record<string, unknown> = {},
    ) => {
      sse();
      send(enc(chunk({ role: 'assistant', content: '' })));
      for (const p of pieces) {
        await later(1);
        send(enc(chunk({ content: p })));
      }
      const end = chunk({}, finish);
      Object.assign(end.choices[0] ?? {}, finishExtra);
      send(enc(end));
      if (withUsage)
        send(enc({ id, object: 'chat.completion.chunk', created, model: scenario, choices: [], usage }));
      send('data: [DONE]\n\n');
      res.end();
    };
    const fail = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    };
    switch (scenario) {
      case 'plain':
        return streamText(words('Hello from the upstream.'));
      case 'echo':
        return streamText([JSON.stringify(body)]);
      case 'vllm-stop':
      case 'sglang-stop': {
        const text = 'Hello from the upstream.';
        const stops = (Array.isArray(body.stop) ? body.stop : [body.stop]).filter(
          (x): x is string => typeof x === 'string' && x.length > 0,
        );
        let cut = text.length;
        let hit: string | null = null;
        for (const st of stops) {
          const i = text.indexOf(st);
          if (i >= 0 && i < cut) {
            cut = i;
            hit = st;
          }
        }
        const field = scenario === 'vllm-stop' ? 'stop_reason' : 'matched_stop';
        return streamText(words(text.slice(0, cut)), 'stop', true, { [field]: hit });
      }
      case 'think-inline':
        return streamText(['<thi', 'nk>Let me ', 'think.</th', 'ink>\n\n', 'The answer', ' is 4.']);
      case 'think-native': {
        sse();
        for (const r of ['Pondering', ' deeply.']) send(enc(chunk({ reasoning_content: r })));
        for (const c of ['Four', '.']) send(enc(chunk({ content: c })));
        send(enc(chunk({}, 'stop')));
        send(
          enc({
            id,
            object: 'chat.completion.chunk',
            created,
            model: scenario,
            choices: [],
            usage: { ...usage, completion_tokens_details: { reasoning_tokens: 3 } },
          }),
        );
        send('data: [DONE]\n\n');
        res.end();
        return;
      }
      case 'tools-native': {
        sse();
        send(enc(chunk({ role: 'assistant', content: null })));
        send(
          enc(
            chunk({
              tool_calls: [
                {
                  index: 0,
                  id: 'call_up_1',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '' },
                },
              ],
            }),
          ),
        );
        for (const a of ['{"city":', ' "Par', 'is"}'])
          send(enc(chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] })));
        send(enc(chunk({}, 'tool_calls')));
        send(enc({ id, object: 'chat.completion.chunk', created, model: scenario, choices: [], usage }));
        send('data: [DONE]\n\n');
        res.end();
        return;
      }
      case 'tools-hermes':
        return streamText([
          'Checking. <tool_',
          'call>\n{"name": "get_weather", ',
          '"arguments": {"city": "Paris"}}\n</tool_call>',
        ]);
      case 'length':
        return streamText(words('One two three'), 'length');
      case 'no-usage':
        return streamText(words('No usage here.'), 'stop', false);
      case 'json-only':
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: scenario,
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'Plain JSON answer.' },
                finish_reason: 'stop',
              },
            ],
            usage,
          }),
        );
        return;
      case 'bad-request':
        return fail(400, {
          error: {
            message: "This model's maximum context length is 4096 tokens.",
            type: 'BadRequestError',
            param: 'max_tokens',
            code: 400,
          },
        });
      case 'bad-detail':
        return fail(422, { detail: [{ loc: ['body', 'temperature'], msg: 'temperature must be <= 2' }] });
      case 'server-error':
        return fail(500, { error: { message: 'CUDA out of memory at /opt/secret/path' } });
      case 'busy':
        return fail(429, { error: { message: 'queue full' } });
      case 'unauthorized':
        return fail(401, { error: { message: 'bad key' } });
      case 'mid-error':
        sse();
        send(enc(chunk({ content: 'Half' })));
        send(enc(chunk({ content: ' an' })));
        send(enc({ error: { message: 'engine crashed', code: 500 } }));
        res.end();
        return;
      case 'cut':
        sse();
        send(enc(chunk({ content: 'Half' })));
        send(enc(chunk({ content: ' an' })));
        res.end();
        return;
      case 'hang':
        res.on('close', () => undefined);
        return; // never answers
      case 'slow': {
        sse();
        let open = true;
        res.on('close', () => {
          if (!res.writableFinished) state.closed++;
          open = false;
        });
        for (let i = 0; i < 1500 && open; i++) {
          send(enc(chunk({ content: `w${i} ` })));
          await later(20);
        }
        if (open) {
          send(enc(chunk({}, 'stop')));
          send('data: [DONE]\n\n');
          res.end();
        }
        return;
      }
      default:
        return fail(404, { error: { message: `The model '${scenario}' does not exist.` } });
    }
  }

  server.on('connection', () => {
    state.connections++;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    get closed() {
      return state.closed;
    },
    get connections() {
      return state.connections;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
