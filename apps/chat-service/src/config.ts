import { envInt, envList, ServiceEnvSchema } from '@infer/service-kit';
import { z } from 'zod';
import type { MediaOptions } from './chat/media.js';

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
