import { randomUUID } from 'node:crypto';
import { EnginePoolSubjects } from '@infer/contracts';
import { learnMove, shareMoves } from '@infer/engine-pool';
import type { NatsConnection } from '@infer/rpc';

/**
 * Shares the engine pools' moves with this service's other replicas (ADR 0062): a conversation whose
 * first turn one replica placed off its ring endpoint (a long new document) has its later turns sent
 * there by every replica, whichever one the gateway's queue group hands them to. Core NATS, no queue
 * group; a message lost or malformed is a cache miss for one turn, never an error. Returns the stop.
 */
export function sharePoolMoves(
  nc: NatsConnection,
  prefix: string,
  origin: string = randomUUID(),
): () => void {
  const subject = `${prefix}${EnginePoolSubjects.moves}`;
  const sub = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      let m: { origin?: unknown; model?: unknown; key?: unknown; url?: unknown } | null;
      try {
        m = msg.json();
      } catch {
        return;
      }
      if (!m || typeof m !== 'object') return;
      if (m.origin === origin || typeof m.model !== 'string' || typeof m.url !== 'string') return;
      if (typeof m.key !== 'number' || !Number.isInteger(m.key)) return;
      learnMove(m.model, m.key, m.url);
    },
  });
  const stopSharing = shareMoves((model, key, url) => {
    if (!nc.isClosed() && !nc.isDraining()) nc.publish(subject, JSON.stringify({ origin, model, key, url }));
  });
  return () => {
    stopSharing();
    sub.unsubscribe();
  };
}
