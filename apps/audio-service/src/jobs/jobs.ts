import {
  ApiError,
  type CatalogEntry,
  type TranscriptionUpload,
  type WireError,
  WireErrorSchema,
} from '@infer/contracts';
import type { Transcript } from '../transcription/engine.js';
import type { MergedTranscript } from '../transcription/format.js';

/** Job names in the `audio-transcriptions` queue. */
export const JobNames = {
  /** The parent: decode -> (one piece: transcribe) | (split -> children -> merge). */
  transcribe: 'transcribe',
  /** A child: one segment of at most 2 minutes. */
  segment: 'segment',
} as const;

export interface TranscribeJobData {
  requestId: string;
  model: CatalogEntry;
  upload: TranscriptionUpload;
  language?: string;
  prompt?: string;
  temperature?: number;
  /** Epoch ms after which the job gives up (524). */
  deadline: number;
  /** Where a parent is: `prepare` (decode, split) or `merge` (children done). */
  step: 'prepare' | 'merge';
  /** Set by the prepare step of a split file. */
  duration?: number;
  segmentKeys?: string[];
}

export interface SegmentJobData {
  /** Id of the parent transcribe job. */
  rootId: string;
  requestId: string;
  model: CatalogEntry;
  /** Redis key of the segment's 16 kHz mono WAV. */
  key: string;
  index: number;
  /** Seconds from the start of the file. */
  offset: number;
  duration: number;
  language?: string;
  prompt?: string;
  temperature?: number;
  deadline: number;
}

export type SegmentResult =
  | { index: number; offset: number; transcript: Transcript }
  | { index: number; error: WireError };

export type TranscribeResult = MergedTranscript;

/** Redis pub/sub channel on which api processes ask workers to abort a job (and its children). */
export function cancelChannel(prefix: string): string {
  return `${prefix}:audio:cancel`;
}

/**
 * ApiErrors cross BullMQ in a job's `failedReason` (a string) with this marker, so that the api role
 * answers the client with the same status, type, code and param the worker raised.
 */
const MARK = 'ApiError:';

export function encodeFailure(e: ApiError): string {
  return `${MARK}${JSON.stringify(e.toWire())}`;
}

export function decodeFailure(reason: string | undefined): ApiError | null {
  if (!reason?.startsWith(MARK)) return null;
  try {
    return ApiError.fromWire(WireErrorSchema.parse(JSON.parse(reason.slice(MARK.length))));
  } catch {
    return null;
  }
}

/** `child <prefix>:<queue>:<jobId> failed` (BullMQ's reason for a parent failed by a child) -> the child's id. */
export function failedChildId(reason: string | undefined): string | null {
  const m = /^child (.+) failed$/.exec(reason ?? '');
  return m ? (m[1]?.split(':').pop() ?? null) : null;
}
