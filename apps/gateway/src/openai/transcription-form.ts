import type { Multipart } from '@fastify/multipart';
import { ApiError, TRANSCRIPTION_MAX_BYTES } from '@infer/contracts';
import type { FastifyRequest } from 'fastify';
import { multipartError, partName } from '../common/multipart-errors.js';

export interface UploadedFile {
  data: Buffer;
  filename: string | undefined;
  mimetype: string;
}

export interface TranscriptionForm {
  /** Text fields in arrival order (a repeated field appears once per value). */
  fields: Array<[string, string]>;
  file: UploadedFile | null;
}

/**
 * Reads a transcription form: text fields, and the one `file` part (buffered; at most 25 MB). Every
 * part is consumed before any error is raised, so that the client has sent its whole body and reads
 * the 400 instead of a reset connection. A file over the limit arrives `truncated` from the multipart
 * parser (its limit is 25 MiB + 1 byte): 400 `file`. File parts under other names are drained and
 * ignored, like unknown fields.
 */
export async function readTranscriptionForm(req: FastifyRequest): Promise<TranscriptionForm> {
  if (!req.isMultipart()) {
    throw new ApiError(
      415,
      'Unsupported Content-Type: /v1/audio/transcriptions takes multipart/form-data with the audio in `file`.',
      { type: 'invalid_request_error', code: 'unsupported_media_type' },
    );
  }
  const fields: Array<[string, string]> = [];
  let file: UploadedFile | null = null;
  let failure: ApiError | null = null;
  try {
    for await (const part of req.parts() as AsyncIterable<Multipart>) {
      let name: string;
      try {
        name = partName(part.fieldname);
      } catch (e) {
        failure ??= e as ApiError;
        if (part.type === 'file') part.file.resume();
        continue;
      }
      if (part.type === 'field') {
        if (part.valueTruncated) failure ??= ApiError.invalid(`The form field '${name}' is too long.`, name);
        fields.push([name, typeof part.value === 'string' ? part.value : String(part.value)]);
        continue;
      }
      if (name !== 'file') {
        part.file.resume();
        await new Promise<void>((resolve) =>
          part.file.once('end', () => resolve()).once('error', () => resolve()),
        );
        continue;
      }
      const data = await part.toBuffer();
      if (file) {
        failure ??= ApiError.invalid('Send one audio file in `file`.', 'file');
      } else if (part.file.truncated || data.length > TRANSCRIPTION_MAX_BYTES) {
        failure ??= ApiError.invalid(
          'The file is larger than 25 MB, the largest audio file accepted. Split it into shorter pieces.',
          'file',
        );
      } else if (data.length === 0) {
        failure ??= ApiError.invalid('The file is empty.', 'file');
      }
      file = {
        data,
        filename: part.filename || undefined,
        mimetype: part.mimetype || 'application/octet-stream',
      };
    }
  } catch (e) {
    throw multipartError(e, { filesParam: 'file', maxFiles: 1 });
  }
  if (failure) throw failure;
  return { fields, file };
}
