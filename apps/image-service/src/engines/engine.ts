/**
 * The ONE image engine interface (docs/architecture.md, rule 3: engines are adapters).
 *
 * An engine makes ONE image per call. The worker calls it n times for a request of n images, with
 * `seed` = base seed + i for variant i, so that every variant is reproducible on its own. Engines
 * know nothing about NATS, BullMQ, the store or the wire format.
 *
 * Implementations (catalog `engine.type`):
 * - `openai`: an upstream OpenAI-compatible images API (LocalAI, and other servers speaking
 *   /v1/images/generations and /v1/images/edits), `openai-images.ts`;
 * - `comfyui`: ComfyUI's HTTP API driven by a workflow template, `comfyui.ts`;
 * - `simulator`: a TEST DOUBLE (not a model) that renders a deterministic PNG from prompt and seed,
 *   for machines without an image model, `simulator.ts`.
 *
 * Cancellation: when `signal` aborts, the engine stops waiting at once (and tells its upstream to drop
 * the work where it can) and rejects with `signal.reason`.
 */
export interface ImageEngine {
  /** Engine type as in the catalog, for logs. */
  readonly type: string;
  generate(input: ImageEngineInput, signal: AbortSignal): Promise<ImageEngineOutput>;
  /** Releases what the engine holds. */
  close?(): Promise<void>;
}

export interface ImageEngineInput {
  /** `edit` comes with `images` (1 to 4 inputs); `generation` with none. */
  operation: 'generation' | 'edit';
  prompt: string;
  width: number;
  height: number;
  /** This variant's seed (base seed + variant index). Always set: drawn at random when the request set none. */
  seed: number;
  /** Whether the client chose the seed (upstreams that refuse unknown fields get it only then). */
  seedRequested: boolean;
  /** Guidance scale when the request set one. */
  guidance: number | null;
  images: EngineImage[];
}

export interface EngineImage {
  bytes: Buffer;
  contentType: string;
}

export interface ImageEngineOutput {
  /** PNG, JPEG or WebP bytes (checked by content by the worker). */
  bytes: Buffer;
}
