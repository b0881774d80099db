import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApiError } from '@infer/contracts';
import { extensionOf } from '@infer/image-store';
import { abortableDelay } from '@infer/rpc';
import { parseEngineSettings } from '@infer/runtime';
import { type Logger } from '@infer/telemetry';
import { z } from 'zod';
import type { ImageEngine, ImageEngineInput, ImageEngineOutput } from './engine.js';
import type { ImageEngineFactory } from './registry.js';

/**
 * ComfyUI's HTTP API driven by a workflow template (the "API format" JSON that ComfyUI exports with
 * "Save (API)"). Per image:
 *   1. (edits) POST /upload/image for each input image -> its name on the ComfyUI server;
 *   2. POST /prompt {prompt: <template with placeholders filled>, client_id} -> prompt_id;
 *   3. poll GET /history/<prompt_id> until the run is done (status success) or failed;
 *   4. GET /view?filename=&subfolder=&type= for the first image of the output node.
 * On cancel it deletes the queued prompt (POST /queue {delete}) and interrupts it (POST /interrupt).
 *
 * Placeholders, anywhere in the template's string values:
 *   "{{prompt}}"  the prompt (may sit inside a longer string: "masterpiece, {{prompt}}")
 *   "{{seed}}" "{{width}}" "{{height}}" "{{guidance}}"   replaced by numbers when they are the whole
 *                 string (KSampler seed, EmptyLatentImage width/height, cfg), by text otherwise
 *   "{{image}}" "{{image_1}}" ... "{{image_4}}"   names of the uploaded input images (edits)
 * Seeds are taken modulo 2^53 and made non-negative (ComfyUI refuses negative seeds). `guidance`
 * falls back to `default_guidance` when the request sets none.
 *
 * Settings (catalog `engine`):
 *   type: comfyui
 *   base_url: http://comfyui:8188
 *   workflow_file: /etc/infer/comfyui/txt2img.json     # or `workflow: {...}` inline
 *   edit_workflow_file: /etc/infer/comfyui/img2img.json # or `edit_workflow`; without one, edits are a 400
 *   output_node: "9"           # node whose images are the result; default the first node with images
 *   default_guidance: 7
 *   poll_interval_ms: 500
 *   timeout_ms: 600000         # per image
 *   api_key_env: COMFYUI_TOKEN # optional: sent as Authorization: Bearer (for a proxy in front)
 */
const WorkflowSchema = z.record(z.string(), z.unknown());

export const ComfyUISettingsSchema = z
  .looseObject({
    type: z.literal('comfyui'),
    base_url: z.string().url(),
    workflow_file: z.string().min(1).optional(),
    workflow: WorkflowSchema.optional(),
    edit_workflow_file: z.string().min(1).optional(),
    edit_workflow: WorkflowSchema.optional(),
    output_node: z.string().min(1).optional(),
    default_guidance: z.number().min(0).default(7),
    poll_interval_ms: z.number().int().min(10).default(500),
    timeout_ms: z.number().int().min(1).default(600_000),
    api_key_env: z.string().min(1).optional(),
  })
  .refine((s) => Boolean(s.workflow_file) !== Boolean(s.workflow), {
    message: 'set exactly one of workflow_file and workflow',
    path: ['workflow'],
  })
  .refine((s) => !(s.edit_workflow_file && s.edit_workflow), {
    message: 'set at most one of edit_workflow_file and edit_workflow',
    path: ['edit_workflow'],
  });
export type ComfyUISettings = z.infer<typeof ComfyUISettingsSchema>;

export const comfyuiEngineFactory: ImageEngineFactory = {
  type: 'comfyui',
  create(settings, { model, log }) {
    const s = parseEngineSettings(ComfyUISettingsSchema, settings, model);
    const load = (file: string | undefined, inline: Record<string, unknown> | undefined, what: string) => {
      if (inline) return inline;
      if (!file) return null;
      try {
        return WorkflowSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
      } catch (e) {
        throw ApiError.internal(
          `Model '${model.id}': cannot read ${what} ${file} (${(e as Error).message}).`,
        );
      }
    };
    const workflow = load(s.workflow_file, s.workflow, 'workflow_file')!;
    const editWorkflow = load(s.edit_workflow_file, s.edit_workflow, 'edit_workflow_file');
    if (!JSON.stringify(workflow).includes('{{prompt}}')) {
      throw ApiError.internal(`Model '${model.id}': the ComfyUI workflow has no {{prompt}} placeholder.`);
    }
    if (editWorkflow && !/\{\{image(_\d)?\}\}/.test(JSON.stringify(editWorkflow))) {
      throw ApiError.internal(`Model '${model.id}': the ComfyUI edit workflow has no {{image}} placeholder.`);
    }
    let token: string | undefined;
    if (s.api_key_env) {
      token = process.env[s.api_key_env];
      if (!token) {
        throw ApiError.internal(
          `Model '${model.id}': the environment variable ${s.api_key_env} (engine.api_key_env) is not set.`,
        );
      }
    }
    return new ComfyUIEngine(s, workflow, editWorkflow, token, log);
  },
};

interface HistoryImage {
  filename: string;
  subfolder?: string;
  type?: string;
}
interface HistoryEntry {
  outputs?: Record<string, { images?: HistoryImage[] }>;
  status?: { status_str?: string; completed?: boolean; messages?: unknown };
}

const SEED_MOD = 2 ** 53;

/** A seed ComfyUI takes: non-negative, below 2^53 (no float rounding on the way). */
export function comfySeed(seed: number): number {
  const r = seed % SEED_MOD;
  return r < 0 ? r + SEED_MOD : r === 0 ? 0 : r;
}

/** Fills the placeholders of a workflow template (a deep copy; the template is left alone). */
export function fillWorkflow(template: unknown, values: Record<string, string | number>): unknown {
  if (typeof template === 'string') {
    const whole = /^\{\{(\w+)\}\}$/.exec(template);
    if (whole?.[1] && whole[1] in values) return values[whole[1]];
    return template.replace(/\{\{(\w+)\}\}/g, (m, name: string) =>
      name in values ? String(values[name]) : m,
    );
  }
  if (Array.isArray(template)) return template.map((v) => fillWorkflow(v, values));
  if (template && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fillWorkflow(v, values)]));
  }
  return template;
}

export class ComfyUIEngine implements ImageEngine {
  readonly type = 'comfyui';
  private readonly base: string;
  private readonly clientId = randomUUID();

  constructor(
    private readonly s: ComfyUISettings,
    private readonly workflow: Record<string, unknown>,
    private readonly editWorkflow: Record<string, unknown> | null,
    private readonly token: string | undefined,
    private readonly log: Logger,
  ) {
    this.base = s.base_url.replace(/\/+$/, '');
  }

  async generate(input: ImageEngineInput, signal: AbortSignal): Promise<ImageEngineOutput> {
    const template = input.operation === 'edit' ? this.editWorkflow : this.workflow;
    if (!template) {
      throw ApiError.invalid('This model does not support image edits; use /v1/images/generations.', 'model');
    }
    const timeout = AbortSignal.timeout(this.s.timeout_ms);
    const both = AbortSignal.any([signal, timeout]);
    let promptId: string | null = null;
    try {
      const values: Record<string, string | number> = {
        prompt: input.prompt,
        seed: comfySeed(input.seed),
        width: input.width,
        height: input.height,
        guidance: input.guidance ?? this.s.default_guidance,
      };
      for (const [i, img] of input.images.entries()) {
        const name = await this.upload(img.bytes, img.contentType, both);
        values[`image_${i + 1}`] = name;
        if (i === 0) values.image = name;
      }
      const queued = await this.json<{ prompt_id?: string; node_errors?: unknown; error?: unknown }>(
        '/prompt',
        {
          method: 'POST',
          body: JSON.stringify({ prompt: fillWorkflow(template, values), client_id: this.clientId }),
        },
        both,
      );
      if (!queued.prompt_id) throw this.broken('no prompt_id in the /prompt answer');
      promptId = queued.prompt_id;
      const entry = await this.waitForHistory(promptId, both);
      const image = this.pickImage(entry);
      const q = new URLSearchParams({
        filename: image.filename,
        subfolder: image.subfolder ?? '',
        type: image.type ?? 'output',
      });
      const res = await this.fetch(`/view?${q}`, { method: 'GET' }, both);
      if (!res.ok) throw this.broken(`GET /view answered ${res.status}`);
      return { bytes: Buffer.from(await res.arrayBuffer()) };
    } catch (e) {
      if (signal.aborted || timeout.aborted) {
        if (promptId) void this.drop(promptId);
        if (signal.aborted) throw signal.reason;
        this.log.error({ timeoutMs: this.s.timeout_ms }, 'ComfyUI run timed out');
        throw ApiError.timeout('The image model did not answer in time.');
      }
      if (e instanceof ApiError) throw e;
      this.log.error({ err: (e as Error)?.message }, 'ComfyUI request failed');
      throw ApiError.internal('The image model failed.');
    }
  }

  private async waitForHistory(promptId: string, signal: AbortSignal): Promise<HistoryEntry> {
    for (;;) {
      const history = await this.json<Record<string, HistoryEntry>>(
        `/history/${encodeURIComponent(promptId)}`,
        { method: 'GET' },
        signal,
      );
      const entry = history[promptId];
      const status = entry?.status?.status_str;
      if (status === 'error') {
        this.log.error({ promptId, messages: entry?.status?.messages }, 'ComfyUI run failed');
        throw ApiError.internal('The image model failed.');
      }
      if (entry && (status === 'success' || entry.status?.completed)) return entry;
      await abortableDelay(this.s.poll_interval_ms, signal);
    }
  }

  private pickImage(entry: HistoryEntry): HistoryImage {
    const outputs = entry.outputs ?? {};
    const nodes = this.s.output_node ? [this.s.output_node] : Object.keys(outputs);
    for (const node of nodes) {
      const images = outputs[node]?.images ?? [];
      const chosen = images.find((i) => i.type === 'output') ?? images[0];
      if (chosen?.filename) return chosen;
    }
    throw this.broken(
      this.s.output_node ? `output node ${this.s.output_node} has no image` : 'the run produced no image',
    );
  }

  private async upload(bytes: Buffer, contentType: string, signal: AbortSignal): Promise<string> {
    const form = new FormData();
    form.append(
      'image',
      new Blob([bytes], { type: contentType }),
      `infer-${randomUUID()}.${extensionOf(contentType)}`,
    );
    form.append('type', 'input');
    form.append('overwrite', 'true');
    const res = await this.fetch('/upload/image', { method: 'POST', body: form }, signal);
    const body = (await res.json().catch(() => null)) as { name?: string; subfolder?: string } | null;
    if (!res.ok || !body?.name) throw this.broken(`POST /upload/image answered ${res.status}`);
    return body.subfolder ? `${body.subfolder}/${body.name}` : body.name;
  }

  /** Best effort: take a queued prompt off the queue and stop it if it runs. */
  private async drop(promptId: string): Promise<void> {
    const quick = AbortSignal.timeout(5_000);
    await this.fetch('/queue', { method: 'POST', body: JSON.stringify({ delete: [promptId] }) }, quick).catch(
      () => undefined,
    );
    await this.fetch(
      '/interrupt',
      { method: 'POST', body: JSON.stringify({ prompt_id: promptId }) },
      quick,
    ).catch(() => undefined);
  }

  private fetch(path: string, init: RequestInit, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = {};
    if (typeof init.body === 'string') headers['content-type'] = 'application/json';
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    return fetch(`${this.base}${path}`, { ...init, headers, signal });
  }

  private async json<T>(path: string, init: RequestInit, signal: AbortSignal): Promise<T> {
    const res = await this.fetch(path, init, signal);
    const body = (await res.json().catch(() => null)) as T | null;
    if (!res.ok || body === null) {
      const error = (body as { error?: { type?: unknown; message?: unknown } } | null)?.error;
      this.log.error(
        {
          path: path.split('?')[0],
          status: res.status,
          error: { type: error?.type, message: error?.message },
        },
        'ComfyUI refused the request',
      );
      throw ApiError.internal('The image model failed.');
    }
    return body;
  }

  private broken(why: string): ApiError {
    this.log.error({ why }, 'unexpected ComfyUI answer');
    return ApiError.internal('The image model failed.');
  }
}
