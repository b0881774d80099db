import { connect, type NatsConnection } from '@nats-io/transport-node';

/** Connects to NATS with a name that shows up in the server's monitoring, retrying while it starts. */
export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: url.split(','),
    name,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
}
export type { NatsConnection };
