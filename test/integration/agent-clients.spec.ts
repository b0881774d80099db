/**
 * Real agent clients against the real stack, on the scripted engine (test/support/scripted-upstream.ts,
 * a test double) so that the model's side of the loop is known:
 * - Codex CLI (`codex exec`, pinned in package.json) with a provider whose base_url is the gateway
 *   (wire_api "responses"): the engine tells it to run a shell command, Codex runs it and sends the
 *   output back, the engine answers done; the test checks the file Codex made. Codex reaches no other
 *   host (a closed proxy for everything but loopback, update checks and analytics off).
 * - The OpenAI Agents SDK on its default Responses path, tracing off: a function tool, streaming,
 *   structured output, a handoff.
 * - LlamaIndex `OpenAIResponses` (it sends null `include`, `truncation`, `previous_response_id`).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { OpenAIResponses } from '@llamaindex/openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import {
  lastToolOutput,
  type ScriptedRequest,
  type ScriptedUpstream,
  scriptedModel,
} from '../support/scripted-upstream.js';
import { runProcess as run, type ScriptedStack, startScriptedStack } from './agent-support.js';
import type { Stack } from './harness.js';

const require = createRequire(import.meta.url);

/** The shell tool Codex offered (its name as the model sees it) and arguments that run `command`. */
function shellCall(
  req: ScriptedRequest,
  command: string,
): { name: string; arguments: Record<string, unknown> } {
  const tools = (req.body.tools ?? []) as Array<{
    function: { name: string; parameters?: { properties?: Record<string, unknown> } };
  }>;
  const names = tools.map((t) => t.function.name);
  const exec = tools.find((t) => /(^|__)exec_command$/.test(t.function.name));
  if (exec) return { name: exec.function.name, arguments: { cmd: command } };
  const shell = tools.find((t) => /(^|__)(shell|shell_command|local_shell)$/.test(t.function.name));
  if (!shell) throw new Error(`Codex offered no shell tool: ${names.join(', ')}`);
  const props = shell.function.parameters?.properties ?? {};
  return {
    name: shell.function.name,
    arguments:
      Array.isArray((props.command as { type?: string })?.type) ||
      (props.command as { type?: string })?.type === 'array'
        ? { command: ['bash', '-lc', command] }
        : { command },
  };
}

describe('agent clients through the gateway (scripted engine)', () => {
  let up: ScriptedUpstream;
  let stack: Stack;
  let dir: string;
  let scripted: ScriptedStack;

  before(async () => {
    scripted = await startScriptedStack(
      'agent-clients',
      (u) => [
        scriptedModel(u, 'codex-model', 'codex', { reasoning: 'default_on' }),
        scriptedModel(u, 'agents-model', 'agents'),
        scriptedModel(u, 'llama-model', 'llama'),
      ],
      { stack: { env: { ALLOW_INSECURE_HTTP: '1' } } },
    );
    ({ up, stack, dir } = scripted);
  });
  after(async () => {
    await scripted?.close();
  });

  it('Codex CLI runs a scripted task to the end: tool call, output sent back, final answer', async () => {
    const home = join(dir, 'codex-home');
    const work = join(dir, 'work');
    mkdirSync(home, { recursive: true });
    mkdirSync(work, { recursive: true });
    writeFileSync(
      join(home, 'config.toml'),
      [
        'model = "codex-model"',
        'model_provider = "infer"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        'check_for_update_on_startup = false',
        'web_search = "live"',
        '',
        '[analytics]',
        'enabled = false',
        '',
        '[model_providers.infer]',
        'name = "infer"',
        `base_url = "${stack.baseURL}"`,
        'env_key = "INFER_API_KEY"',
        'wire_api = "responses"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
      ].join('\n'),
    );
    up.script('codex', [
      (req) => ({ reasoning: 'I will write the file.', tool_calls: [shellCall(req, 'echo hi > out.txt')] }),
      (req) => ({ text: `done (${(lastToolOutput(req) ?? '').length} characters of output)` }),
    ]);
    const bin = join(dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      CODEX_HOME: home,
      INFER_API_KEY: stack.keys.inference,
      // Anything but loopback goes to a closed port: Codex reaches no other host.
      HTTPS_PROXY: 'http://127.0.0.1:9',
      HTTP_PROXY: 'http://127.0.0.1:9',
      ALL_PROXY: 'http://127.0.0.1:9',
      NO_PROXY: '127.0.0.1,localhost',
      RUST_LOG: 'error',
    };
    const r = await run(
      process.execPath,
      [bin, 'exec', '--skip-git-repo-check', '--color', 'never', 'Write hi into out.txt'],
      { cwd: work, env, timeoutMs: 120_000 },
    );
    const seen = up.requestsFor('codex');
    const detail = () =>
      `exit ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-3000)}\ntools: ${JSON.stringify(
        ((seen[0]?.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name),
      )}`;
    assert.equal(r.code, 0, detail());
    assert.ok(existsSync(join(work, 'out.txt')), detail());
    assert.equal(readFileSync(join(work, 'out.txt'), 'utf8').trim(), 'hi');
    assert.equal(seen.length, 2, detail());
    // Codex offers the hosted web_search tool (web_search = "live"): the model is offered it as a function.
    assert.ok(
      ((seen[0]?.body.tools ?? []) as Array<{ function: { name: string } }>).some(
        (t) => t.function.name === 'web_search',
      ),
      detail(),
    );
    // The second turn carries the tool output Codex sent back, and the first turn's reasoning.
    const second = seen[1]?.body.messages ?? [];
    assert.ok(
      second.some((m) => m.role === 'tool'),
      detail(),
    );
    assert.match(r.stdout + r.stderr, /done \(/);
  });

  describe('OpenAI Agents SDK (default Responses path, tracing off)', () => {
    let runner: Runner;
    const sent: Array<Record<string, unknown>> = [];
    before(() => {
      setTracingDisabled(true);
      const client = new OpenAI({
        baseURL: stack.baseURL,
        apiKey: stack.keys.inference,
        maxRetries: 0,
        fetch: async (url, init) => {
          if (String(url).endsWith('/responses') && typeof init?.body === 'string')
            sent.push(JSON.parse(init.body));
          return fetch(url, init);
        },
      });
      runner = new Runner({
        modelProvider: new OpenAIProvider({ openAIClient: client as never, useResponses: true }),
      });
    });

    const weather = tool({
      name: 'get_weather',
      description: 'Weather of a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => `sunny in ${city}`,
    });

    it('runs a function tool and answers from its output (requests with include: [] pass)', async () => {
      up.script('agents', [
        { tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
        (req) => ({ text: `Report: ${lastToolOutput(req)}` }),
      ]);
      const agent = new Agent({
        name: 'Assistant',
        instructions: 'Help.',
        model: 'agents-model',
        tools: [weather],
      });
      const result = await runner.run(agent, 'Weather in Paris?');
      assert.equal(result.finalOutput, 'Report: sunny in Paris');
      assert.ok(sent.length >= 2);
      assert.ok(
        sent.some((b) => Array.isArray(b.include)),
        'the SDK sent include',
      );
    });

    it('streams', async () => {
      up.script('agents', [{ text: 'Streaming words arrive one by one.', piece: 4 }]);
      const agent = new Agent({ name: 'Assistant', instructions: 'Help.', model: 'agents-model' });
      const stream = await runner.run(agent, 'Say something', { stream: true });
      let text = '';
      for await (const chunk of stream.toTextStream()) text += chunk;
      await stream.completed;
      assert.equal(text, 'Streaming words arrive one by one.');
      assert.equal(stream.finalOutput, 'Streaming words arrive one by one.');
    });

    it('returns structured output (text.format json_schema)', async () => {
      up.script('agents', [{ text: '{"city":"Paris","temperature_c":21}' }]);
      const agent = new Agent({
        name: 'Extractor',
        instructions: 'Extract.',
        model: 'agents-model',
        outputType: z.object({ city: z.string(), temperature_c: z.number() }),
      });
      const result = await runner.run(agent, 'Paris is 21 degrees.');
      assert.deepEqual(result.finalOutput, { city: 'Paris', temperature_c: 21 });
      const format = (up.requestsFor('agents').at(-1)?.body.response_format ?? {}) as { type?: string };
      assert.equal(format.type, 'json_schema');
    });

    it('hands off to another agent', async () => {
      const specialist = new Agent({
        name: 'Specialist',
        instructions: 'Answer billing questions.',
        model: 'agents-model',
      });
      const triage = new Agent({
        name: 'Triage',
        instructions: 'Route.',
        model: 'agents-model',
        handoffs: [specialist],
      });
      up.script('agents', [
        (req) => {
          const names = ((req.body.tools ?? []) as Array<{ function: { name: string } }>).map(
            (t) => t.function.name,
          );
          const handoff = names.find((n) => n.startsWith('transfer_to_'));
          if (!handoff) throw new Error(`no handoff tool among ${names.join(', ')}`);
          return { tool_calls: [{ name: handoff, arguments: {} }] };
        },
        { text: 'Specialist here: your invoice is paid.' },
      ]);
      const result = await runner.run(triage, 'Is my invoice paid?');
      assert.equal(result.lastAgent?.name, 'Specialist');
      assert.equal(result.finalOutput, 'Specialist here: your invoice is paid.');
    });
  });

  it('LlamaIndex OpenAIResponses chats and streams', async () => {
    up.script('llama', [{ text: 'Hello from llama.' }, { text: 'Streamed hello.', piece: 3 }]);
    const llm = new OpenAIResponses({
      model: 'llama-model',
      apiKey: stack.keys.inference,
      baseURL: stack.baseURL,
      maxRetries: 0,
    });
    const r = await llm.chat({ messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.message.content, 'Hello from llama.');
    let text = '';
    for await (const chunk of await llm.chat({ messages: [{ role: 'user', content: 'hi' }], stream: true })) {
      // LlamaIndex 0.4 yields a chunk per event and repeats the last delta on the others (its own
      // stream state is never reset, against OpenAI too): text comes from the text delta events.
      if ((chunk.raw as { type?: string } | null)?.type === 'response.output_text.delta') text += chunk.delta;
    }
    assert.equal(text, 'Streamed hello.');
  });
});
