import type { CatalogEntry, ImageInputRef, StoredImageRef, WireError } from '@infer/contracts';
import { ApiError } from '@infer/contracts';

/** Job name of the one job type: n images for one request (a generation or an edit). */
export const IMAGE_JOB = 'images';

/** What the api role puts in a job: everything a worker needs, without NATS or the database. */
export interface ImageJobData {
  requestId: string;
  /** The resolved catalog entry (the engine settings travel with the job). */
  model: CatalogEntry;
  operation: 'generation' | 'edit';
  prompt: string;
  n: number;
  width: number;
  height: number;
  /** Base seed; variant i uses seed + i. */
  seed: number;
  seedRequested: boolean;
  guidance: number | null;
  /** Stored input images (edits). */
  inputs: ImageInputRef[];
  /** Lifetime of the stored results. */
  ttlSeconds: number;
  /** Epoch ms: a worker that picks the job up later does not start it; a running one stops. */
  deadline: number;
}

/** A job's return value. Expected failures (bad input, upstream refusals, timeouts) are results, not throws. */
export type ImageJobResult = { ok: true; images: StoredImageRef[] } | { ok: false; error: WireError };

/** Redis pub/sub channel on which the api role names jobs to abort (workers listen). */
export function cancelChannel(prefix: string, queue: string): string {
  return `${prefix}:${queue}:cancel`;
}

export function toWire(e: unknown): WireError {
  return (e instanceof ApiError ? e : ApiError.internal()).toWire();
}
