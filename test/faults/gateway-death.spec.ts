/**
 * A gateway replica dies mid-stream (SIGKILL, a process of its own): the usage of the work the service
 * did still reaches the ledger, once. The service records every request it serves on the usage stream as
 * well (`source: 'service'`); the ledger writer writes that event only when the gateway's own event of
 * the request has not come within LEDGER_SERVICE_GRACE_MS, so a living gateway's request stays one row.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { LedgerWriter } from '../../apps/ledger-writer/src/app.js';
import { freePort } from '../../bench/support.js';
import { type Stack, startStack, startStackLedger } from '../integration/harness.js';
import { newKey, writeCatalog } from '../integration/limits-support.js';
import { waitForPort } from '../support/private-servers.js';

const GRACE_MS = 1500;
const OUTPUT = 40;

describe('a gateway that dies mid-stream: the service-side usage event reaches the ledger, once', () => {
  let stack: Stack;
  let ledger: LedgerWriter;
  let child: ChildProcess | undefined;

  const rows = async (keyId: string) =>
    (await stack.prisma.$queryRawUnsafe(
      'SELECT status, "completionTokens" AS c, "totalTokens" AS t FROM "UsageEvent" WHERE "keyId" = $1',
      keyId,
    )) as { status: number; c: number; t: number }[];
  const eventually = async <T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  before(async () => {
    // chat-F streams 40 tokens, one every 100 ms: 4 s, long enough to cut.
    const catalogFile = writeCatalog({ 'chat-F': { itl_ms: 100, default_output_tokens: OUTPUT } });
    stack = await startStack({ catalogFile });
    ledger = await startStackLedger(stack, { LEDGER_SERVICE_GRACE_MS: String(GRACE_MS) });
  });
  after(async () => {
    child?.kill('SIGKILL');
    await ledger?.stop();
    await stack?.close();
  });

  it('a living gateway: one row, its own (the service event is skipped after the grace)', async () => {
    const k = await newKey(stack, 'inference');
    const r = await k.client.chat.completions.create({
      model: 'chat-F',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    assert.equal(r.usage?.completion_tokens, 3);
    await eventually('the row is written', async () => ((await rows(k.keyId)).length ? true : undefined));
    // Past the grace and until the writer has had the service's event in hand: still one row.
    await new Promise((res) => setTimeout(res, GRACE_MS + 1500));
    await eventually('the stream is drained', async () =>
      (await ledger.pending()) === 0 ? true : undefined,
    );
    assert.deepEqual(
      (await rows(k.keyId)).map((x) => [x.status, x.c]),
      [[200, 3]],
    );
  });

  it('SIGKILL of the gateway mid-stream: exactly one ledger row, with the tokens the service produced', async () => {
    const port = await freePort();
    child = spawn(
      process.execPath,
      ['--conditions=source', '--import', './tools/ts-register.js', 'apps/gateway/src/main.ts'],
      {
        env: { ...stack.gatewayEnv, PORT: String(port) },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    await waitForPort(port, true, 60_000);
    const k = await newKey(stack, 'inference');
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-F', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/"content":"/g) ?? []).length < 5) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const received = (text.match(/"content":"/g) ?? []).length;
    assert.ok(received >= 5 && received < OUTPUT, `${received} chunks before the kill`);
    child.kill('SIGKILL');
    await reader.read().then(
      () => undefined,
      () => undefined,
    );
    const got = await eventually('the service-side event is written', async () => {
      const r = await rows(k.keyId);
      return r.length ? r : undefined;
    });
    assert.equal(got.length, 1);
    // The service finished the generation into the dead gateway's inbox: it bills what it produced.
    assert.equal(got[0]!.c, OUTPUT);
    assert.ok(got[0]!.c >= received);
    await new Promise((r) => setTimeout(r, GRACE_MS));
    await eventually('the stream is drained', async () =>
      (await ledger.pending()) === 0 ? true : undefined,
    );
    assert.equal((await rows(k.keyId)).length, 1, 'one row per request');
  });
});
