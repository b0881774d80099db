import { z } from 'zod';
import { ApiError } from './errors.js';
import { boundedText, TextLimits } from './text-limits.js';

export const IMAGE_SIZE_MIN = 256;
export const IMAGE_SIZE_MAX = 1536;
export const IMAGE_SIZE_STEP = 16;
/** Widest aspect ratio either way (1:3 to 3:1). */
export const IMAGE_MAX_ASPECT = 3;
export const IMAGE_DEFAULT_SIZE = { width: 1024, height: 1024 } as const;
export const IMAGE_MAX_N = 4;
/** Images used by one edit request; extras are dropped. */
export const IMAGE_EDIT_MAX_IMAGES = 4;
/** Largest input image of an edit request. */
export const IMAGE_MAX_BYTES = 25 * 1024 * 1024;

export interface ImageSize {
  width: number;
  height: number;
}

const SIZE_RE = /^(\d{1,5})x(\d{1,5})$/;

/** Why `size` is not acceptable, or null when it is (`auto`, or a size within the spec's rules). */
export function sizeProblem(size: string): string | null {
  if (size === 'auto') return null;
  const m = SIZE_RE.exec(size);
  if (!m) return `must be 'auto' or WIDTHxHEIGHT, e.g. 1024x1024 (got '${size}')`;
  const width = Number(m[1]);
  const height = Number(m[2]);
  for (const side of [width, height]) {
    if (side < IMAGE_SIZE_MIN || side > IMAGE_SIZE_MAX) {
      return `each side must be between ${IMAGE_SIZE_MIN} and ${IMAGE_SIZE_MAX} pixels (got ${size})`;
    }
    if (side % IMAGE_SIZE_STEP !== 0) {
      return `each side must be divisible by ${IMAGE_SIZE_STEP} (got ${size})`;
    }
  }
  if (Math.max(width, height) > IMAGE_MAX_ASPECT * Math.min(width, height)) {
    return `aspect ratio must be between 1:${IMAGE_MAX_ASPECT} and ${IMAGE_MAX_ASPECT}:1 (got ${size})`;
  }
  return null;
}

/**
 * Width and height of a `size` value: `auto` or omitted gives 1024x1024. Throws the spec's 400 with
 * `param: 'size'` for a value the schemas would refuse.
 */
export function parseSize(size?: string | null): ImageSize {
  if (size == null || size === 'auto') return { ...IMAGE_DEFAULT_SIZE };
  const problem = sizeProblem(size);
  if (problem) throw ApiError.invalid(`Invalid value for 'size': ${problem}.`, 'size');
  const [w, h] = size.split('x');
  return { width: Number(w), height: Number(h) };
}

export const ImageSizeSchema = z
  .string()
  .superRefine((size, ctx) => {
    const problem = sizeProblem(size);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, input: size });
  })
  .meta({
    pattern: '^(auto|[0-9]+x[0-9]+)$',
    description: `'auto' (1024x1024) or WIDTHxHEIGHT: each side ${IMAGE_SIZE_MIN} to ${IMAGE_SIZE_MAX} and divisible by ${IMAGE_SIZE_STEP}, aspect ratio 1:${IMAGE_MAX_ASPECT} to ${IMAGE_MAX_ASPECT}:1.`,
  });

export const ImageResponseFormatSchema = z.enum(['url', 'b64_json']);
export type ImageResponseFormat = z.infer<typeof ImageResponseFormatSchema>;

const N_MESSAGE = `must be an integer between 1 and ${IMAGE_MAX_N}`;
const ignored = (what: string) => z.unknown().optional().describe(`Accepted and ignored (${what}).`);

// ---- request: POST /v1/images/generations ----
export const ImageGenerationRequestSchema = z
  .object({
    prompt: boundedText(TextLimits.imagePrompt).min(1, 'must not be empty'),
    /** The gateway uses image-model when omitted. */
    model: boundedText(TextLimits.model).min(1, 'must not be empty').optional(),
    n: z.number().int(N_MESSAGE).min(1, N_MESSAGE).max(IMAGE_MAX_N, N_MESSAGE).default(1),
    /** `auto` or omitted gives 1024x1024. */
    size: ImageSizeSchema.optional(),
    response_format: ImageResponseFormatSchema.default('url'),
    /** Service extension: base seed; with n above 1 each variant starts from an offset of it. */
    seed: z.number().int().optional(),
    /** Service extension: guidance scale. */
    guidance: z.number().min(0).optional(),
    /** Streaming is not supported: `true` is a 400. */
    stream: z
      .boolean()
      .nullable()
      .optional()
      .refine(
        (v) => v !== true,
        'streaming is not supported for image generation; omit stream or set it to false',
      )
      .describe('Not supported: only false (or omitted) is accepted.'),
    quality: ignored('OpenAI option'),
    style: ignored('OpenAI option'),
    background: ignored('OpenAI option'),
    moderation: ignored('OpenAI option'),
    output_format: ignored('OpenAI option'),
    output_compression: ignored('OpenAI option'),
    user: ignored('OpenAI option'),
  })
  .meta({ id: 'ImageGenerationRequest' });
export type ImageGenerationRequest = z.infer<typeof ImageGenerationRequestSchema>;
export type ImageGenerationRequestInput = z.input<typeof ImageGenerationRequestSchema>;

// ---- request: POST /v1/images/edits (multipart/form-data) ----
/**
 * The text fields of the edit form (see `normalizeFormFields`). The `image` / `image[]` file parts are
 * checked by the gateway (IMAGE_EDIT_MAX_IMAGES, IMAGE_MAX_BYTES). Any `mask` value is a 400 with
 * `param: 'mask'`: the gateway passes `mask` in (any non-undefined value) when a `mask` file part arrives.
 */
export const ImageEditRequestSchema = z
  .object({
    prompt: boundedText(TextLimits.imagePrompt).min(1, 'must not be empty'),
    model: boundedText(TextLimits.model).min(1, 'must not be empty').optional(),
    // Multipart values are strings: numeric fields are coerced ('abc' -> NaN -> 400).
    n: z.coerce.number().int(N_MESSAGE).min(1, N_MESSAGE).max(IMAGE_MAX_N, N_MESSAGE).default(1),
    size: ImageSizeSchema.optional(),
    response_format: ImageResponseFormatSchema.default('url'),
    seed: z.coerce.number().int('must be an integer').optional(),
    guidance: z.coerce.number().min(0).optional(),
    mask: z
      .unknown()
      .refine((v) => v === undefined, 'mask is not supported; send the image(s) and a prompt only')
      .optional()
      .describe('Not supported: a mask gives 400.'),
    stream: z
      .unknown()
      .refine(
        (v) => v === undefined || v === false || v === 'false',
        'streaming is not supported for image edits',
      )
      .optional()
      .describe('Not supported: only false (or omitted) is accepted.'),
  })
  .meta({ id: 'ImageEditRequest' });
export type ImageEditRequest = z.infer<typeof ImageEditRequestSchema>;
export type ImageEditRequestInput = z.input<typeof ImageEditRequestSchema>;

// ---- response ----
export const ImageDataSchema = z.union([
  z.object({ url: z.string(), revised_prompt: z.string().optional() }),
  z.object({ b64_json: z.string(), revised_prompt: z.string().optional() }),
]);
export type ImageData = z.infer<typeof ImageDataSchema>;

export const ImageResponseSchema = z
  .object({
    created: z.number().int(),
    /** `{url}` (valid about 60 minutes) by default, `{b64_json}` with `response_format: 'b64_json'`. */
    data: z.array(ImageDataSchema),
  })
  .meta({ id: 'ImageResponse' });
export type ImageResponse = z.infer<typeof ImageResponseSchema>;

// ---- gateway <-> image-service ----
// Images never travel through NATS (a message holds 1 MB by default): both sides read and write them
// in the shared image store (@infer/image-store) and pass ids.

/** An input image of an edit, stored by the gateway for the duration of the request. */
export const ImageInputRefSchema = z.object({
  id: z.string().min(1),
  content_type: z.enum(['image/png', 'image/jpeg', 'image/webp']),
  bytes: z.number().int().min(1),
});
export type ImageInputRef = z.infer<typeof ImageInputRefSchema>;

/** Envelope body of `infer.image.edits`: the validated form fields plus the stored input images. */
export const ImageEditServiceBodySchema = ImageEditRequestSchema.extend({
  images: z.array(ImageInputRefSchema).min(1).max(IMAGE_EDIT_MAX_IMAGES),
});
export type ImageEditServiceBody = z.infer<typeof ImageEditServiceBodySchema>;

/** One generated image, stored by the image-service under `id` until `expires_at`. */
export const StoredImageRefSchema = z.object({
  id: z.string().min(1),
  content_type: z.string(),
  width: z.number().int().nullable(),
  height: z.number().int().nullable(),
  /** Unix seconds: the store forgets the image then, and signed URLs stop working. */
  expires_at: z.number().int(),
});
export type StoredImageRef = z.infer<typeof StoredImageRefSchema>;

/**
 * The image-service's result (EndFrame `data`) for both endpoints. The gateway turns it into the
 * public ImageResponse: signed URLs for `url`, the bytes read back from the store for `b64_json`.
 */
export const ImageServiceResultSchema = z.object({
  created: z.number().int(),
  response_format: ImageResponseFormatSchema,
  images: z.array(StoredImageRefSchema).min(1),
});
export type ImageServiceResult = z.infer<typeof ImageServiceResultSchema>;
