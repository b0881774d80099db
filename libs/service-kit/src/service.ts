import { z } from 'zod';
import { NatsUrlSchema, parseConfig } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { connectNats, type NatsConnection } from './nats.js';
import { type RpcHandler, RpcServer } from './rpc.js';

export const ServiceEnvSchema = z.object({
  NATS_URL: NatsUrlSchema,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface RunningService {
  nc: NatsConnection;
  rpc: RpcServer;
  log: Logger;
  stop(): Promise<void>;
}

/**
 * Starts a NATS-facing service: validated env, logger, connection, one queue group, handlers.
 * Stops cleanly on SIGTERM/SIGINT (in-flight work is aborted, the connection drained).
 */
export async function startService(opts: {
  name: string;
  queue: string;
  handlers: Record<string, RpcHandler<never>>;
  env?: NodeJS.ProcessEnv;
  installSignalHandlers?: boolean;
}): Promise<RunningService> {
  const env = parseConfig(opts.name, ServiceEnvSchema, opts.env);
  const log = createLogger(opts.name, env.LOG_LEVEL);
  const nc = await connectNats(env.NATS_URL, opts.name);
  const rpc = new RpcServer(nc, opts.queue, log);
  for (const [subject, handler] of Object.entries(opts.handlers)) rpc.handle(subject, handler as RpcHandler);
  await nc.flush();
  log.info({ subjects: Object.keys(opts.handlers), queue: opts.queue }, 'service ready');
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await rpc.close();
      await nc.drain();
      log.info('service stopped');
    })();
    return stopping;
  };
  if (opts.installSignalHandlers !== false) {
    for (const sig of ['SIGTERM', 'SIGINT'] as const)
      process.once(sig, () => void stop().then(() => process.exit(0)));
  }
  return { nc, rpc, log, stop };
}
