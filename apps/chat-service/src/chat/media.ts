import { ApiError, type CatalogEntry, type ContentPart } from '@infer/contracts';
import { SafeFetchError, safeFetch } from '@infer/runtime';
import type { EngineMessage } from '../engines/engine.js';

/**
 * Image and audio parts of a request, checked and made self-contained before any engine runs:
 *
 * - capability: `image_url` parts need the catalog's `vision` (chat-G has none), `input_audio` parts
 *   `audio_input` (chat-B only), and an engine that can take them; otherwise a 400 naming the part.
 * - `data:` URIs are decoded here: base64 only, an image type we take (PNG, JPEG, GIF, WebP), at most
 *   `maxImageBytes`, and the bytes must be that type (magic numbers).
 * - http(s) URLs are fetched by the service itself through the SSRF-guarded `safeFetch` (public
 *   addresses only, also after DNS and each redirect; size, time and content-type bounds) and handed
 *   to the engine as a `data:` URI, so no engine or upstream ever fetches a URL a client chose.
 * - `input_audio`: base64 `data` of at most `maxAudioBytes` whose bytes are the declared `format`.
 * Any failure is a 400 whose `param` names the part or its url/data field.
 */
export interface MediaOptions {
  maxImageBytes: number;
  maxAudioBytes: number;
  fetchTimeoutMs: number;
  /** `host` / `host:port` entries exempt from the address check (operator setting; tests). */
  allowHosts: string[];
  /** Most image/audio parts in one request. */
  maxParts: number;
}

export const DEFAULT_MEDIA_OPTIONS: MediaOptions = {
  maxImageBytes: 20 * 1024 * 1024,
  maxAudioBytes: 25 * 1024 * 1024,
  fetchTimeoutMs: 10_000,
  allowHosts: [],
  maxParts: 32,
};

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
type ImageType = (typeof IMAGE_TYPES)[number];

/** Where a part sits in the request, for `param`: e.g. `messages[2].content[1]`. */
export type PartPath = (message: number, part: number) => string;
export const chatPartPath: PartPath = (m, p) => `messages[${m}].content[${p}]`;

/**
 * Checks every media part of `messages` and returns the messages with image URLs replaced by `data:`
 * URIs. `messageIndex` maps a position in `messages` to the request's own index (for `param`).
 */
export async function resolveMedia(
  messages: EngineMessage[],
  model: Pick<CatalogEntry, 'id' | 'capabilities'>,
  engine: { media?: { images: boolean; audio: boolean }; type: string },
  opts: MediaOptions,
  signal: AbortSignal,
  path: PartPath = chatPartPath,
  messageIndex: (i: number) => number = (i) => i,
  /** The url field below a part, for `param` (Responses: `.image_url`). */
  urlField = '.image_url.url',
): Promise<EngineMessage[]> {
  const media = engine.media ?? { images: true, audio: true };
  const jobs: Array<Promise<void>> = [];
  let count = 0;
  const out = messages.map((m, mi) => {
    if (m.role !== 'user' || typeof m.content === 'string') return m;
    const parts: ContentPart[] = m.content.map((p) => ({ ...p }) as ContentPart);
    for (const [pi, part] of parts.entries()) {
      if (part.type === 'text') continue;
      const at = path(messageIndex(mi), pi);
      if (part.type === 'image_url') {
        if (!model.capabilities.vision) {
          throw ApiError.invalid(
            `The model '${model.id}' takes text only: image input is not supported.`,
            at,
          );
        }
        if (!media.images) {
          throw ApiError.invalid(
            `The model '${model.id}' is served by an engine without image input (${engine.type}).`,
            at,
          );
        }
      } else {
        if (!model.capabilities.audio_input) {
          throw ApiError.invalid(`The model '${model.id}' does not accept audio input.`, at);
        }
        if (!media.audio) {
          throw ApiError.invalid(
            `The model '${model.id}' is served by an engine without audio input (${engine.type}).`,
            at,
          );
        }
      }
      if (++count > opts.maxParts) {
        throw ApiError.invalid(`At most ${opts.maxParts} image or audio parts are accepted per request.`, at);
      }
      if (part.type === 'image_url') {
        jobs.push(
          resolveImage(part.image_url.url, opts, signal, `${at}${urlField}`).then((url) => {
            parts[pi] = { type: 'image_url', image_url: { ...part.image_url, url } };
          }),
        );
      } else {
        checkAudio(part.input_audio.data, part.input_audio.format, opts, `${at}.input_audio.data`);
      }
    }
    return { ...m, content: parts };
  });
  await Promise.all(jobs);
  return out;
}

async function resolveImage(
  url: string,
  opts: MediaOptions,
  signal: AbortSignal,
  param: string,
): Promise<string> {
  if (/^data:/i.test(url)) return checkDataUri(url, opts, param);
  if (!/^https?:\/\//i.test(url)) {
    throw ApiError.invalid('An image url must be an http(s) URL or a data: URI.', param);
  }
  let res: Awaited<ReturnType<typeof safeFetch>>;
  try {
    res = await safeFetch(url, {
      maxBytes: opts.maxImageBytes,
      timeoutMs: opts.fetchTimeoutMs,
      allowedContentTypes: ['image/', 'application/octet-stream'],
      maxRedirects: 3,
      allowHosts: opts.allowHosts,
      signal,
    });
  } catch (e) {
    if (signal.aborted) throw signal.reason instanceof ApiError ? signal.reason : e;
    throw ApiError.invalid(
      `The image at ${shortUrl(url)} could not be used: ${fetchReason(e, opts)}.`,
      param,
    );
  }
  const type = sniffImage(res.body);
  if (!type) {
    throw ApiError.invalid(`The image at ${shortUrl(url)} is not a PNG, JPEG, GIF or WebP image.`, param);
  }
  return `data:${type};base64,${res.body.toString('base64')}`;
}

function fetchReason(e: unknown, opts: MediaOptions): string {
  if (!(e instanceof SafeFetchError)) return 'it could not be fetched';
  switch (e.reason) {
    case 'blocked_address':
      return 'the URL does not point to a public address';
    case 'too_large':
      return `it is larger than ${opts.maxImageBytes} bytes`;
    case 'timeout':
      return `it did not arrive within ${opts.fetchTimeoutMs} ms`;
    case 'bad_status':
    case 'bad_content_type':
    case 'too_many_redirects':
    case 'invalid_url':
      return e.message;
    default:
      return 'it could not be fetched';
  }
}

const shortUrl = (u: string) => (u.length > 100 ? `${u.slice(0, 100)}...` : u);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function decodeBase64(data: string): Buffer | null {
  const clean = data.replace(/\s+/g, '');
  if (!clean || clean.length % 4 === 1 || !BASE64.test(clean)) return null;
  return Buffer.from(clean, 'base64');
}

function checkDataUri(uri: string, opts: MediaOptions, param: string): string {
  const comma = uri.indexOf(',');
  const head = comma < 0 ? '' : uri.slice(5, comma).toLowerCase();
  const [mime = '', ...flags] = head.split(';');
  if (comma < 0 || !flags.includes('base64')) {
    throw ApiError.invalid('An image data: URI must be base64-encoded (data:image/png;base64,...).', param);
  }
  if (!IMAGE_TYPES.includes(mime as ImageType)) {
    throw ApiError.invalid(
      `Unsupported image type '${mime || '(none)'}' in the data: URI; use PNG, JPEG, GIF or WebP.`,
      param,
    );
  }
  // Size first, from the length alone: 4 base64 characters carry 3 bytes.
  if (Math.floor(((uri.length - comma - 1) * 3) / 4) > opts.maxImageBytes + 3) {
    throw ApiError.invalid(`The image is larger than ${opts.maxImageBytes} bytes.`, param);
  }
  const bytes = decodeBase64(uri.slice(comma + 1));
  if (!bytes) throw ApiError.invalid('The image data: URI is not valid base64.', param);
  if (bytes.length > opts.maxImageBytes) {
    throw ApiError.invalid(`The image is larger than ${opts.maxImageBytes} bytes.`, param);
  }
  const sniffed = sniffImage(bytes);
  if (sniffed !== mime) {
    throw ApiError.invalid(`The image data is not a ${mime.slice(6).toUpperCase()} image.`, param);
  }
  return `data:${mime};base64,${bytes.toString('base64')}`;
}

/** The image type from the first bytes, or null. */
export function sniffImage(b: Buffer): ImageType | null {
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a)
    return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (
    b.length >= 12 &&
    b.subarray(0, 4).toString('latin1') === 'RIFF' &&
    b.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return 'image/webp';
  return null;
}

function checkAudio(data: string, format: 'wav' | 'mp3', opts: MediaOptions, param: string): void {
  if (Math.floor((data.length * 3) / 4) > opts.maxAudioBytes + 3) {
    throw ApiError.invalid(`The audio is larger than ${opts.maxAudioBytes} bytes.`, param);
  }
  const bytes = decodeBase64(data);
  if (!bytes) throw ApiError.invalid('input_audio.data is not valid base64.', param);
  if (bytes.length > opts.maxAudioBytes) {
    throw ApiError.invalid(`The audio is larger than ${opts.maxAudioBytes} bytes.`, param);
  }
  const ok =
    format === 'wav'
      ? bytes.length >= 12 &&
        bytes.subarray(0, 4).toString('latin1') === 'RIFF' &&
        bytes.subarray(8, 12).toString('latin1') === 'WAVE'
      : bytes.length >= 3 &&
        (bytes.subarray(0, 3).toString('latin1') === 'ID3' ||
          (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0));
  if (!ok)
    throw ApiError.invalid(`input_audio.data is not ${format === 'wav' ? 'a WAV' : 'an MP3'} file.`, param);
}
