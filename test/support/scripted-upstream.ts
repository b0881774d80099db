/**
 * SCRIPTED ENGINE (a test double, not a model): a tiny OpenAI-compatible chat completions server on
 * 127.0.0.1 whose replies a test scripts turn by turn. The catalog serves a model from it through the
 * real `openai` upstream engine (`engine: {type: 'openai', base_url: up.url, model: '<script name>'}`),
 * so everything between the client and the engine runs for real: gateway, front door translation
 * (Responses, chat, Messages), NATS, the chat-service, the upstream client and its parsers.
 *
 * A script is keyed by the upstream model name the catalog sends (`engine.model`); each request to it
 * takes the next turn of the queue. A turn is either fixed or a function of the request (to answer
 * from what the client sent, e.g. the tool output). A request to a script with no turn left gets the
 * script's `fallback` turn, or an HTTP 500 naming the script (a test that sent more turns than it
 * scripted fails loudly).
 *
 * A turn can carry reasoning (`reasoning_content` deltas), text and tool calls (function name and
 * JSON arguments, streamed in pieces like a real server), and a usage. `stream: true` answers as SSE
 * chunks (with a usage chunk when `stream_options.include_usage`), `stream: false` as one
 * ChatCompletion. Every request is recorded (`requests`, `requestsFor(name)`), so a test can check
 * what the client sent back (tool outputs, reasoning, tools offered).
 *
 * Control over HTTP too, for a stack in another process: `PUT /__script/<name>` with a JSON array of
 * (fixed) turns replaces that script; `GET /__requests/<name>` returns its recorded requests.
 *
 *   const up = await startScriptedUpstream();
 *   up.script('agent', [
 *     { tool_calls: [{ name: 'exec_command', arguments: { cmd: 'echo hi > out.txt' } }] },
 *     (req) => ({ text: `done: ${lastToolOutput(req)}` }),
 *   ]);
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedToolCall {
  name: string;
  /** JSON arguments: an object (serialized) or a ready string (sent as is, even when not JSON). */
  arguments: Record<string, unknown> | string;
  /** Call id; default `call_<script>_<n>`. */
  id?: string;
}

export interface ScriptedTurn {
  reasoning?: string;
  text?: string;
  tool_calls?: ScriptedToolCall[];
  /** Default: `tool_calls` when the turn has tool calls, else `stop`. */
  finish_reason?: 'stop' | 'length' | 'tool_calls';
  /** Default: prompt 10 tokens, completion = one token per 4 characters produced (at least 1). */
  usage?: { prompt_tokens: number; completion_tokens: number; reasoning_tokens?: number };
  /** Characters per streamed piece (default 6): text, reasoning and arguments arrive in pieces. */
  piece?: number;
}

export interface ScriptedRequest {
  script: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> & { messages?: Array<Record<string, unknown>> };
}

export type TurnSource = ScriptedTurn | ((req: ScriptedRequest) => ScriptedTurn);

export interface ScriptedUpstream {
  /** Base URL ending in /v1 (the catalog's `engine.base_url`). */
  url: string;
  port: number;
  /** Every chat request received, in order. */
  requests: ScriptedRequest[];
  /** Replaces the turns of script `name` (the catalog's `engine.model`); `fallback` answers when they run out. */
  script(name: string, turns: TurnSource[], fallback?: TurnSource): void;
  /** Requests received for script `name`. */
  requestsFor(name: string): ScriptedRequest[];
  /** Turns of script `name` not yet taken. */
  remaining(name: string): number;
  close(): Promise<void>;
}

/** The `content` of the last `tool` message of a recorded request (what the client sent back). */
export function lastToolOutput(req: ScriptedRequest): string | undefined {
  const tools = (req.body.messages ?? []).filter((m) => m.role === 'tool');
  const c = tools.at(-1)?.content;
  return typeof c === 'string' ? c : c === undefined ? undefined : JSON.stringify(c);
}

const sseLine = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;

function pieces(s: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const scripts = new Map<string, { turns: TurnSource[]; fallback?: TurnSource; calls: number }>();
  const requests: ScriptedRequest[] = [];

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => {
        raw += d;
      });
      req.on('end', () => resolve(raw));
      req.on('error', reject);
    });
  const json = (res: ServerResponse, status: number, payload: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { message: String(e) } });
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = req.url ?? '';
    const control = /^\/__(script|requests)\/([^/?]+)/.exec(url);
    if (control) {
      const name = decodeURIComponent(control[2] ?? '');
      if (control[1] === 'script' && req.method === 'PUT') {
        const turns = JSON.parse(raw) as ScriptedTurn[];
        if (!Array.isArray(turns)) return json(res, 400, { error: { message: 'a JSON array of turns' } });
        api.script(name, turns);
        return json(res, 200, { script: name, turns: turns.length });
      }
      return json(res, 200, api.requestsFor(name));
    }
    if (req.method === 'GET' && url.endsWith('/models')) {
      return json(res, 200, {
        object: 'list',
        data: [...scripts.keys()].map((id) => ({ id, object: 'model' })),
      });
    }
    if (req.method !== 'POST' || !url.endsWith('/chat/completions')) {
      return json(res, 404, { error: { message: `no route ${req.method} ${url} on the scripted upstream` } });
    }
    let body: ScriptedRequest['body'];
    try {
      body = JSON.parse(raw);
    } catch {
      return json(res, 400, { error: { message: 'bad json' } });
    }
    const name = String(body.model ?? '');
    const rec: ScriptedRequest = { script: name, path: url, headers: req.headers, body };
    requests.push(rec);
    const s = scripts.get(name);
    if (!s) return json(res, 404, { error: { message: `The model '${name}' does not exist (no script).` } });
    const source = s.turns.shift() ?? s.fallback;
    const n = s.calls++;
    if (!source) {
      return json(res, 500, { error: { message: `scripted upstream: script '${name}' has no turn left` } });
    }
    const turn = typeof source === 'function' ? source(rec) : source;
    reply(res, name, n, turn, body);
  }

  function reply(
    res: ServerResponse,
    name: string,
    n: number,
    turn: ScriptedTurn,
    body: ScriptedRequest['body'],
  ): void {
    const id = `chatcmpl-scripted-${name}-${n}`;
    const created = Math.floor(Date.now() / 1000);
    const calls = (turn.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${name}_${n}_${i}`,
      type: 'function' as const,
      function: {
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
      },
    }));
    const finish = turn.finish_reason ?? (calls.length ? 'tool_calls' : 'stop');
    const produced =
      (turn.reasoning?.length ?? 0) +
      (turn.text?.length ?? 0) +
      calls.reduce((a, c) => a + c.function.name.length + c.function.arguments.length, 0);
    const u = turn.usage ?? { prompt_tokens: 10, completion_tokens: Math.max(1, Math.ceil(produced / 4)) };
    const usage = {
      prompt_tokens: u.prompt_tokens,
      completion_tokens: u.completion_tokens,
      total_tokens: u.prompt_tokens + u.completion_tokens,
      ...(turn.reasoning
        ? {
            completion_tokens_details: {
              reasoning_tokens: u.reasoning_tokens ?? Math.max(1, Math.ceil(turn.reasoning.length / 4)),
            },
          }
        : {}),
    };
    if (body.stream !== true) {
      const message: Record<string, unknown> = { role: 'assistant', content: turn.text ?? null };
      if (turn.reasoning) message.reasoning_content = turn.reasoning;
      if (calls.length) message.tool_calls = calls;
      json(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: name,
        choices: [{ index: 0, message, finish_reason: finish }],
        usage,
      });
      return;
    }
    const size = Math.max(1, turn.piece ?? 6);
    const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
      sseLine({
        id,
        object: 'chat.completion.chunk',
        created,
        model: name,
        choices: [{ index: 0, delta, finish_reason }],
      });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const p of pieces(turn.reasoning ?? '', size)) res.write(chunk({ reasoning_content: p }));
    for (const p of pieces(turn.text ?? '', size)) res.write(chunk({ content: p }));
    calls.forEach((c, index) => {
      res.write(
        chunk({
          tool_calls: [
            { index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } },
          ],
        }),
      );
      for (const p of pieces(c.function.arguments, size))
        res.write(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
    });
    res.write(chunk({}, finish));
    const opts = body.stream_options as { include_usage?: boolean } | undefined;
    if (opts?.include_usage)
      res.write(sseLine({ id, object: 'chat.completion.chunk', created, model: name, choices: [], usage }));
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const api: ScriptedUpstream = {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    script(name, turns, fallback) {
      scripts.set(name, { turns: [...turns], fallback, calls: 0 });
    },
    requestsFor: (name) => requests.filter((r) => r.script === name),
    remaining: (name) => scripts.get(name)?.turns.length ?? 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return api;
}

/** A catalog entry serving `id` from script `script` of `up` through the real `openai` engine. */
export function scriptedModel(
  up: Pick<ScriptedUpstream, 'url'>,
  id: string,
  script: string,
  opts: {
    reasoning?: 'none' | 'default_on' | 'default_off' | 'effort';
    tiers?: string[];
    context_window?: number;
  } = {},
): Record<string, unknown> {
  return {
    id,
    kind: 'chat',
    rank: 10,
    tiers: opts.tiers ?? ['community', 'inference', 'premium'],
    context_window: opts.context_window ?? 131072,
    capabilities: {
      streaming: true,
      tools: true,
      vision: false,
      response_format: true,
      completions: false,
      responses: true,
      reasoning: opts.reasoning ?? 'none',
    },
    engine: { type: 'openai', base_url: up.url, model: script, timeout_ms: 30_000 },
  };
}
