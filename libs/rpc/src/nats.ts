import { connect, type NatsConnection } from '@nats-io/transport-node';

/**
 * Connects to NATS with a name that shows up in the server's monitoring, retrying while it starts.
 * `noAsyncTraces`: the client would otherwise capture a stack trace (an Error object) for every request
 * and subscription, on the success path too, only to append it to an error that rarely comes.
 */
export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: url.split(','),
    name,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    noAsyncTraces: true,
  });
}
export type { NatsConnection };
