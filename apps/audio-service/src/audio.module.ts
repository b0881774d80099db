import {
  type EndFrame,
  type ServiceRequest,
  type SpeechRequest,
  Subjects,
  type TranscriptionServiceBody,
} from '@infer/contracts';
import { type HandlerContext, type RpcHandler } from '@infer/rpc';
import { AppLifetime } from '@infer/runtime';
import { Controller, type DynamicModule, Inject, Module } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { TranscriptionWorker, type WorkerDeps } from './jobs/worker.js';
import { type SpeechDeps, speechHandler } from './speech/speech.handler.js';
import { type TranscriptionDeps, transcriptionHandler } from './transcription/transcription.handler.js';

export const SPEECH_DEPS = Symbol('SPEECH_DEPS');
export const TRANSCRIPTION_DEPS = Symbol('TRANSCRIPTION_DEPS');

/**
 * The audio service's NATS endpoints (api role): speech is answered in this process, each
 * transcription becomes a BullMQ job that a worker runs (speech/, transcription/, jobs/).
 */
@Controller()
export class AudioController {
  private readonly speak: RpcHandler<SpeechRequest>;
  private readonly transcribe: RpcHandler<TranscriptionServiceBody>;

  constructor(@Inject(SPEECH_DEPS) speech: SpeechDeps, @Inject(TRANSCRIPTION_DEPS) stt: TranscriptionDeps) {
    this.speak = speechHandler(speech);
    this.transcribe = transcriptionHandler(stt);
  }

  @MessagePattern(Subjects.speech)
  speech(@Payload() req: ServiceRequest<SpeechRequest>, @Ctx() ctx: HandlerContext): Promise<EndFrame> {
    return this.speak(req, ctx);
  }

  @MessagePattern(Subjects.transcriptions)
  transcriptions(
    @Payload() req: ServiceRequest<TranscriptionServiceBody>,
    @Ctx() ctx: HandlerContext,
  ): Promise<EndFrame> {
    return this.transcribe(req, ctx);
  }
}

/**
 * The transcription worker of the worker role, as a Nest provider: it starts once the app is up and,
 * on shutdown, returns its jobs in progress to the queue before the app's connections close.
 */
export class TranscriptionWorkerHost extends AppLifetime<TranscriptionWorker> {}

@Module({})
export class AudioServiceModule {
  /** `api`: the controller; `worker`: the worker host; `all`: both. */
  static forRoot(parts: {
    api?: { speech: SpeechDeps; transcription: TranscriptionDeps };
    worker?: WorkerDeps;
  }): DynamicModule {
    return {
      module: AudioServiceModule,
      controllers: parts.api ? [AudioController] : [],
      providers: [
        ...(parts.api
          ? [
              { provide: SPEECH_DEPS, useValue: parts.api.speech },
              { provide: TRANSCRIPTION_DEPS, useValue: parts.api.transcription },
            ]
          : []),
        ...(parts.worker ? [{ provide: TranscriptionWorkerHost, useValue: workerHost(parts.worker) }] : []),
      ],
    };
  }
}

function workerHost(deps: WorkerDeps): TranscriptionWorkerHost {
  return new TranscriptionWorkerHost(
    () => TranscriptionWorker.start(deps),
    (w) => w.close(),
  );
}
