import { type EndFrame, type ServiceRequest, Subjects } from '@infer/contracts';
import { type HandlerContext, type RpcHandler } from '@infer/rpc';
import { AppLifetime } from '@infer/runtime';
import { Controller, type DynamicModule, Inject, Module } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { editsHandler, generationsHandler, type ImagesHandlerDeps } from './images/images.handler.js';
import { ImageWorker, type ImageWorkerOptions } from './jobs/worker.js';

export const IMAGES_DEPS = Symbol('IMAGES_DEPS');

/** The image service's NATS endpoints (api role): each request becomes one BullMQ job (images/). */
@Controller()
export class ImagesController {
  private readonly generate: RpcHandler<unknown>;
  private readonly edit: RpcHandler<unknown>;

  constructor(@Inject(IMAGES_DEPS) deps: ImagesHandlerDeps) {
    this.generate = generationsHandler(deps);
    this.edit = editsHandler(deps);
  }

  @MessagePattern(Subjects.imageGenerations)
  generations(@Payload() req: ServiceRequest<unknown>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return this.generate(req, ctx);
  }

  @MessagePattern(Subjects.imageEdits)
  edits(@Payload() req: ServiceRequest<unknown>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return this.edit(req, ctx);
  }
}

/**
 * The BullMQ worker of the worker role, as a Nest provider: it starts once the app is up and, on
 * shutdown, returns its jobs in progress to the queue before the app's connections close.
 */
export class ImageWorkerHost extends AppLifetime<ImageWorker> {}

@Module({})
export class ImageServiceModule {
  /** `api` (deps set): the controller; `worker` (worker set): the worker host; `all`: both. */
  static forRoot(parts: { api?: ImagesHandlerDeps; worker?: ImageWorkerOptions }): DynamicModule {
    return {
      module: ImageServiceModule,
      controllers: parts.api ? [ImagesController] : [],
      providers: [
        ...(parts.api ? [{ provide: IMAGES_DEPS, useValue: parts.api }] : []),
        ...(parts.worker ? [{ provide: ImageWorkerHost, useValue: workerHost(parts.worker) }] : []),
      ],
    };
  }
}

function workerHost(options: ImageWorkerOptions): ImageWorkerHost {
  return new ImageWorkerHost(
    () => ImageWorker.start(options),
    (w) => w.close(),
  );
}
