/**
 * Child process of air-gap.spec.ts (not a spec): starts every app of the platform in this one process
 * with the integration harness (gateway, chat, embedding, audio, image and search services, ledger
 * writer, batch runner), each on the stack's own subjects and prefixes, and records every TCP
 * connection attempt this process makes to an address that is not loopback (`net.client.socket`
 * diagnostics channel). Its environment (HTTP(S)_PROXY / ALL_PROXY at the recording proxy, HOME in a
 * temporary folder, NODE_USE_ENV_PROXY) is set by the spec.
 *
 * Protocol on stdout / stdin, one JSON line each: it prints `{ready: {url, keys}}` once started; `stop`
 * stops every app and prints `{outbound: [...]}`.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { startAudioService } from '../../apps/audio-service/src/app.js';
import { startEmbeddingService } from '../../apps/embedding-service/src/app.js';
import { startBatchRunner } from '../../apps/gateway/src/batch/runner/app.js';
import { startImageService } from '../../apps/image-service/src/app.js';
import { startSearchService } from '../../apps/search-service/src/app.js';
import { runnerEnv } from './batch-support.js';
import { startStack, startStackLedger } from './harness.js';

const outbound: string[] = [];
const loopback = (ip: string) => /^(127\.|::1$|::ffff:127\.|localhost$)/.test(ip);
subscribe('net.client.socket', (message) => {
  const socket = (message as { socket: Socket }).socket;
  socket.on('connectionAttempt', (ip: string, port: number) => {
    if (!loopback(ip)) outbound.push(`${ip}:${port}`);
  });
  socket.on('lookup', (_err: Error | null, address: string, _family: unknown, host: string) => {
    if (address && !loopback(address)) outbound.push(`${host} -> ${address}`);
  });
});

const print = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);

const stack = await startStack({
  services: [
    (env) => startEmbeddingService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
    (env) => startAudioService({ env, role: 'all', subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
    (env) => startImageService({ env, subjectPrefix: env.MODEL_SUBJECT_PREFIX }),
    (env) =>
      startSearchService({
        env,
        subjectPrefix: env.SEARCH_SUBJECT_PREFIX,
        embeddingSubjectPrefix: env.MODEL_SUBJECT_PREFIX,
      }),
  ],
});
const ledger = await startStackLedger(stack);
const runner = await startBatchRunner({ env: runnerEnv(stack, { OPS_PORT: '0', OPS_HOST: '127.0.0.1' }) });
print({ ready: { url: stack.url, keys: stack.keys } });

for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'stop') {
    await runner.stop();
    await ledger.stop();
    await stack.close();
    print({ outbound });
    break;
  }
}
process.exit(0);
