import { envBool, envInt, envList, ServiceEnvSchema } from '@infer/runtime';
import { z } from 'zod';
import type { MediaOptions } from './chat/media.js';
import { DEV_SEAL_KEYS, parseSealKeys, ReasoningSeal } from './responses/reasoning-seal.js';

/** The chat service's environment: the service basics plus the limits of image and audio input. */
export const ChatServiceEnvSchema = ServiceEnvSchema.extend({
  MEDIA_MAX_IMAGE_BYTES: envInt(20 * 1024 * 1024, 1).describe(
    'Largest image in a message (fetched URL or data: URI), bytes.',
  ),
  MEDIA_MAX_AUDIO_BYTES: envInt(25 * 1024 * 1024, 1).describe('Largest input_audio part, bytes.'),
  MEDIA_FETCH_TIMEOUT_MS: envInt(10_000, 100).describe('Longest wait for one image URL (ms).'),
  MEDIA_MAX_PARTS: envInt(32, 1).describe('Most image/audio parts in one request.'),
  MEDIA_FETCH_ALLOW_HOSTS: envList().describe(
    'Comma-separated host or host:port entries that image URLs may reach although they are not public ' +
      'addresses (an internal image store). Empty: only public addresses.',
  ),
  RESPONSES_SEAL_KEYS: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      if (!v) return;
      try {
        parseSealKeys(v);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
      }
    })
    .describe(
      'Keys that seal reasoning for stateless Responses clients (include reasoning.encrypted_content): ' +
        'comma-separated <id>:<base64 of 32 bytes>; the first seals, every one opens (rotation). Unset: a ' +
        'development key when ALLOW_INSECURE_HTTP is on, otherwise that include is a 400 naming include.',
    ),
  ALLOW_INSECURE_HTTP: envBool(false).describe(
    'Development mode, as on the gateway: allows the development reasoning seal key.',
  ),
});
export type ChatServiceEnv = z.output<typeof ChatServiceEnvSchema>;

export function mediaOptions(env: ChatServiceEnv): MediaOptions {
  return {
    maxImageBytes: env.MEDIA_MAX_IMAGE_BYTES,
    maxAudioBytes: env.MEDIA_MAX_AUDIO_BYTES,
    fetchTimeoutMs: env.MEDIA_FETCH_TIMEOUT_MS,
    maxParts: env.MEDIA_MAX_PARTS,
    allowHosts: env.MEDIA_FETCH_ALLOW_HOSTS,
  };
}

/** The reasoning seal, or null when no key is configured (see RESPONSES_SEAL_KEYS). */
export function reasoningSeal(env: ChatServiceEnv): ReasoningSeal | null {
  const spec = env.RESPONSES_SEAL_KEYS || (env.ALLOW_INSECURE_HTTP ? DEV_SEAL_KEYS : '');
  return spec ? new ReasoningSeal(parseSealKeys(spec)) : null;
}
