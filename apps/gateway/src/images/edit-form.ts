import { ApiError, ErrorType, IMAGE_EDIT_MAX_IMAGES, IMAGE_MAX_BYTES } from '@infer/contracts';
import { type ImageMime, sniffImageType } from '@infer/image-store';
import type { FastifyRequest } from 'fastify';
import { multipartError, partName } from '../common/multipart-errors.js';

/** `image`, `image[]` (the openai SDKs) or `image[0]`...: the input image file parts of an edit. */
const IMAGE_FIELD = /^image(\[\d*\])?$/;

export interface EditUpload {
  bytes: Buffer;
  contentType: ImageMime;
}

export interface EditForm {
  /** The text fields (first value of each), as strings, for ImageEditRequestSchema. */
  fields: Record<string, string>;
  /** The first IMAGE_EDIT_MAX_IMAGES images, checked by content. */
  images: EditUpload[];
  /** Image parts beyond IMAGE_EDIT_MAX_IMAGES, dropped unread (the spec: extras are dropped). */
  dropped: number;
}

/** Reads a file part to its end, discarding it (the form's next part comes only after). */
async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _chunk of stream) {
    // discarded
  }
}

const maskError = () =>
  ApiError.invalid("'mask' is not supported; send the image(s) and a prompt only.", 'mask');

/**
 * Reads the multipart form of POST /v1/images/edits. The whole body is read before any 400 so that
 * the client gets the answer rather than a reset connection; the first problem wins:
 * - a `mask` part (file or field) -> 400 param mask;
 * - an image part over 25 MB (the multipart limit is 25 MiB + 1 byte, so `truncated` means too big),
 *   empty, or not PNG/JPEG/WebP by its first bytes (whatever its declared type) -> 400 param image;
 * - no image part -> 400 param image.
 * Image parts beyond the fourth are dropped unread; other file parts are ignored.
 */
export async function readEditForm(req: FastifyRequest): Promise<EditForm> {
  if (!req.isMultipart()) {
    throw new ApiError(
      415,
      "Send image edits as multipart/form-data with the 'image' file(s) and a 'prompt'.",
      {
        type: ErrorType.invalidRequest,
        code: 'unsupported_media_type',
      },
    );
  }
  const fields: Record<string, string> = {};
  const images: EditUpload[] = [];
  let dropped = 0;
  let seen = 0;
  let problem: ApiError | null = null;
  try {
    for await (const part of req.parts()) {
      let name: string;
      try {
        name = partName(part.fieldname);
      } catch (e) {
        problem ??= e as ApiError;
        if (part.type === 'file') await drain(part.file);
        continue;
      }
      if (part.type === 'file') {
        if (name === 'mask') {
          problem ??= maskError();
          await drain(part.file);
          continue;
        }
        if (!IMAGE_FIELD.test(name)) {
          await drain(part.file);
          continue;
        }
        seen++;
        if (images.length >= IMAGE_EDIT_MAX_IMAGES || problem) {
          if (images.length >= IMAGE_EDIT_MAX_IMAGES) dropped++;
          await drain(part.file);
          continue;
        }
        const bytes = await part.toBuffer();
        if (part.file.truncated || bytes.length > IMAGE_MAX_BYTES) {
          problem = ApiError.invalid(
            `Image ${seen} is too large: each image must be under ${IMAGE_MAX_BYTES / (1024 * 1024)} MB.`,
            'image',
          );
          continue;
        }
        const contentType = bytes.length ? sniffImageType(bytes) : null;
        if (!contentType) {
          problem = ApiError.invalid(
            `Image ${seen}${part.filename ? ` ('${part.filename.slice(0, 80)}')` : ''} is not a PNG, JPEG or WebP image.`,
            'image',
          );
          continue;
        }
        images.push({ bytes, contentType });
      } else {
        if (name === 'mask') {
          problem ??= maskError();
        } else if (IMAGE_FIELD.test(name)) {
          problem ??= ApiError.invalid(
            "'image' must be a file (PNG, JPEG or WebP), not a text field.",
            'image',
          );
        } else if (part.valueTruncated) {
          // Over the form's 1 MiB per field: never pass a silently cut value on.
          problem ??= ApiError.invalid(`The form field '${name}' is too long.`, name);
        } else if (!(name in fields)) {
          fields[name] = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
        }
      }
    }
  } catch (e) {
    throw multipartError(e, { filesParam: 'image', maxFiles: IMAGE_EDIT_MAX_IMAGES });
  }
  if (problem) throw problem;
  if (!images.length) throw ApiError.invalid("Missing required parameter: 'image'.", 'image');
  return { fields, images, dropped };
}
