import { randomInt } from 'node:crypto';
import {
  ApiError,
  type EndFrame,
  ImageEditServiceBodySchema,
  ImageGenerationRequestSchema,
  type ImageInputRef,
  type ImageResponseFormat,
  type ImageServiceResult,
  parseOrThrow,
  parseSize,
  type ServiceRequest,
  ZERO_USAGE,
} from '@infer/contracts';
import type { HandlerContext, RpcHandler } from '@infer/rpc';
import type { ContentPolicy } from '../content-policy.js';
import type { ImageEngineRegistry } from '../engines/registry.js';
import type { ImageJobs } from '../jobs/client.js';
import type { Clock } from '../jobs/worker.js';

export interface ImagesHandlerDeps {
  jobs: ImageJobs;
  engines: ImageEngineRegistry;
  policy: ContentPolicy;
  clock: Clock;
  /** Lifetime of url results (the spec: about 60 minutes). */
  urlTtlSeconds: number;
  /** Lifetime of b64_json results: the gateway reads them back at once and deletes them. */
  b64TtlSeconds: number;
}

interface ImageWork {
  operation: 'generation' | 'edit';
  prompt: string;
  n: number;
  size: string | undefined;
  responseFormat: ImageResponseFormat;
  seed: number | undefined;
  guidance: number | undefined;
  inputs: ImageInputRef[];
}

/** `infer.image.generations`: validated body -> one BullMQ job of n images -> stored image ids. */
export function generationsHandler(deps: ImagesHandlerDeps): RpcHandler<unknown> {
  return (req, ctx) => {
    const body = parseOrThrow(ImageGenerationRequestSchema, req.body);
    return run(deps, req, ctx, {
      operation: 'generation',
      prompt: body.prompt,
      n: body.n,
      size: body.size,
      responseFormat: body.response_format,
      seed: body.seed,
      guidance: body.guidance,
      inputs: [],
    });
  };
}

/** `infer.image.edits`: the form fields plus the input images the gateway stored. */
export function editsHandler(deps: ImagesHandlerDeps): RpcHandler<unknown> {
  return (req, ctx) => {
    const body = parseOrThrow(ImageEditServiceBodySchema, req.body);
    return run(deps, req, ctx, {
      operation: 'edit',
      prompt: body.prompt,
      n: body.n,
      size: body.size,
      responseFormat: body.response_format,
      seed: body.seed,
      guidance: body.guidance,
      inputs: body.images,
    });
  };
}

async function run(
  deps: ImagesHandlerDeps,
  req: ServiceRequest<unknown>,
  ctx: HandlerContext,
  w: ImageWork,
): Promise<EndFrame> {
  if (req.model.kind !== 'image') {
    throw ApiError.invalid(`The model '${req.model.id}' is not an image model.`, 'model');
  }
  deps.policy.check(w.prompt);
  const { width, height } = parseSize(w.size);
  deps.engines.assertServes(req.model);
  const ttlSeconds = w.responseFormat === 'b64_json' ? deps.b64TtlSeconds : deps.urlTtlSeconds;
  const images = await deps.jobs.run(
    {
      requestId: req.requestId,
      model: req.model,
      operation: w.operation,
      prompt: w.prompt,
      n: w.n,
      width,
      height,
      // Without a seed each request draws one; variants still differ (seed + i).
      seed: w.seed ?? randomInt(0, 2 ** 31),
      seedRequested: w.seed !== undefined,
      guidance: w.guidance ?? null,
      inputs: w.inputs,
      ttlSeconds,
      deadline: req.deadline,
    },
    ctx.signal,
  );
  const data: ImageServiceResult = {
    created: Math.floor(deps.clock.now() / 1000),
    response_format: w.responseFormat,
    images,
  };
  return { data, usage: ZERO_USAGE };
}
