import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ApiError, type CatalogEntry } from '@infer/contracts';
import { createLogger } from '@infer/telemetry';
import { PNG } from 'pngjs';
import { waitFor } from '../../../../test/support/wait-for.js';
import { type FakeHttp, startFakeHttp } from '../testing/fake-http.js';
import { comfyuiEngineFactory, fillWorkflow } from './comfyui.js';
import type { ImageEngineInput } from './engine.js';

const log = createLogger('test', 'silent');
const model = { id: 'image-model', kind: 'image' } as unknown as CatalogEntry;
const never = new AbortController().signal;

/** A txt2img workflow in ComfyUI's API format, with the placeholders the engine fills. */
const txt2img = {
  '3': {
    class_type: 'KSampler',
    inputs: { seed: '{{seed}}', cfg: '{{guidance}}', steps: 20, model: ['4', 0], latent_image: ['5', 0] },
  },
  '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'sd15.safetensors' } },
  '5': {
    class_type: 'EmptyLatentImage',
    inputs: { width: '{{width}}', height: '{{height}}', batch_size: 1 },
  },
  '6': { class_type: 'CLIPTextEncode', inputs: { text: 'masterpiece, {{prompt}}', clip: ['4', 1] } },
  '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'infer', images: ['8', 0] } },
};
const img2img = {
  ...txt2img,
  '10': { class_type: 'LoadImage', inputs: { image: '{{image}}' } },
  '11': { class_type: 'LoadImage', inputs: { image: '{{image_2}}' } },
};

const input: ImageEngineInput = {
  operation: 'generation',
  prompt: 'a lighthouse at dusk',
  width: 640,
  height: 384,
  seed: 77,
  seedRequested: true,
  guidance: 6.5,
  images: [],
};

/**
 * A ComfyUI-like server: /prompt queues, /history answers empty for the first `pendingPolls` polls and
 * then the outputs of SaveImage node 9, /view serves a PNG of the size the workflow asked for.
 */
let server: FakeHttp;
let submitted: Array<Record<string, { inputs: Record<string, unknown> }>> = [];
let pendingPolls = 2;
let polls = 0;
let runStatus: 'success' | 'error' | 'never' = 'success';
let promptAnswer: { status: number; body: object } | null = null;
before(async () => {
  server = await startFakeHttp(async (r) => {
    const url = new URL(r.path, 'http://x');
    if (r.method === 'POST' && url.pathname === '/prompt') {
      if (promptAnswer) return promptAnswer;
      submitted.push((r.json() as { prompt: (typeof submitted)[number] }).prompt);
      return { body: { prompt_id: `p${submitted.length}`, number: submitted.length, node_errors: {} } };
    }
    if (url.pathname.startsWith('/history/')) {
      const id = url.pathname.slice('/history/'.length);
      polls++;
      if (runStatus === 'never' || polls <= pendingPolls) return { body: {} };
      if (runStatus === 'error') {
        return {
          body: { [id]: { outputs: {}, status: { status_str: 'error', completed: false, messages: [] } } },
        };
      }
      return {
        body: {
          [id]: {
            outputs: {
              '9': { images: [{ filename: `infer_${id}.png`, subfolder: 'day1', type: 'output' }] },
            },
            status: { status_str: 'success', completed: true, messages: [] },
          },
        },
      };
    }
    if (url.pathname === '/view') {
      const wf = submitted.at(-1)!;
      const png = new PNG({ width: Number(wf['5']!.inputs.width), height: Number(wf['5']!.inputs.height) });
      return { body: PNG.sync.write(png), headers: { 'content-type': 'image/png' } };
    }
    if (url.pathname === '/upload/image') {
      const f = await r.form();
      return { body: { name: (f.get('image') as File).name, subfolder: '', type: 'input' } };
    }
    if (url.pathname === '/queue' || url.pathname === '/interrupt') return { body: {} };
    return { status: 404, body: {} };
  });
});
after(() => server.close());
beforeEach(() => {
  submitted = [];
  pendingPolls = 2;
  polls = 0;
  runStatus = 'success';
  promptAnswer = null;
  server.received.length = 0;
});

const engine = (extra: Record<string, unknown> = {}) =>
  comfyuiEngineFactory.create(
    {
      type: 'comfyui',
      base_url: server.url,
      workflow: txt2img,
      poll_interval_ms: 10,
      timeout_ms: 5_000,
      ...extra,
    },
    { model, log },
  );

describe('ComfyUI engine (workflow template over the HTTP API)', () => {
  it('fills the template, queues it, polls the history and fetches the output image', async () => {
    const out = await engine().generate(input, never);
    const png = PNG.sync.read(out.bytes);
    assert.deepEqual([png.width, png.height], [640, 384]);
    const wf = submitted[0]!;
    assert.equal(wf['3']!.inputs.seed, 77);
    assert.equal(wf['3']!.inputs.cfg, 6.5);
    assert.equal(wf['5']!.inputs.width, 640);
    assert.equal(wf['5']!.inputs.height, 384);
    assert.equal(wf['6']!.inputs.text, 'masterpiece, a lighthouse at dusk');
    assert.equal(wf['4']!.inputs.ckpt_name, 'sd15.safetensors', 'the rest untouched');
    assert.equal(polls, 3, 'polled until done');
    const view = server.received.find((r) => r.path.startsWith('/view'))!;
    const q = new URL(view.path, 'http://x').searchParams;
    assert.deepEqual(
      [q.get('filename'), q.get('subfolder'), q.get('type')],
      ['infer_p1.png', 'day1', 'output'],
    );
    assert.deepEqual(txt2img['3'].inputs.seed, '{{seed}}', 'the template itself is left alone');
  });

  it('uses default_guidance when the request sets none, and makes negative seeds non-negative', async () => {
    await engine({ default_guidance: 3 }).generate({ ...input, guidance: null, seed: -5 }, never);
    assert.equal(submitted[0]!['3']!.inputs.cfg, 3);
    const seed = submitted[0]!['3']!.inputs.seed as number;
    assert.ok(Number.isSafeInteger(seed) && seed >= 0);
  });

  it('uploads the inputs of an edit and puts their names in the edit workflow', async () => {
    const a = PNG.sync.write(new PNG({ width: 4, height: 4 }));
    await engine({ edit_workflow: img2img }).generate(
      {
        ...input,
        operation: 'edit',
        images: [
          { bytes: a, contentType: 'image/png' },
          { bytes: Buffer.from([0xff, 0xd8, 0xff, 0]), contentType: 'image/jpeg' },
        ],
      },
      never,
    );
    const uploads = server.received.filter((r) => r.path === '/upload/image');
    assert.equal(uploads.length, 2);
    const wf = submitted[0]!;
    assert.match(String(wf['10']!.inputs.image), /^infer-.*\.png$/);
    assert.match(String(wf['11']!.inputs.image), /^infer-.*\.jpg$/);
  });

  it('refuses edits with 400 (param model) when no edit workflow is configured', async () => {
    await assert.rejects(
      engine().generate({ ...input, operation: 'edit', images: [] }, never),
      (e: ApiError) => {
        assert.equal(e.status, 400);
        assert.equal(e.param, 'model');
        return true;
      },
    );
  });

  it('turns a failed run or a refused workflow into a clean 500', async () => {
    runStatus = 'error';
    await assert.rejects(engine().generate(input, never), {
      status: 500,
      message: 'The image model failed.',
    });
    runStatus = 'success';
    promptAnswer = {
      status: 400,
      body: { error: { type: 'prompt_outputs_failed_validation', message: 'bad' }, node_errors: {} },
    };
    await assert.rejects(engine().generate(input, never), { status: 500 });
  });

  it('drops the queued prompt (queue delete + interrupt) when cancelled', async () => {
    runStatus = 'never';
    const ac = new AbortController();
    const run = engine().generate(input, ac.signal);
    // Cancel once the engine holds the prompt id, i.e. polls its history (not after a fixed time,
    // which a busy machine may not reach, nor as /prompt arrives, before its answer reached the engine).
    await waitFor('the engine to poll the queued prompt', () =>
      server.received.some((r) => r.path.startsWith('/history/')),
    );
    ac.abort(new ApiError(499, 'cancelled'));
    await assert.rejects(run, { status: 499 });
    const del = await waitFor('the queue delete', () => server.received.find((r) => r.path === '/queue'));
    assert.deepEqual(del.json(), { delete: ['p1'] });
    await waitFor('the interrupt', () => server.received.some((r) => r.path === '/interrupt'));
  });

  it('times out with 524', async () => {
    runStatus = 'never';
    await assert.rejects(engine({ timeout_ms: 80 }).generate(input, never), { status: 524 });
  });

  it('reads workflow files and validates settings at engine creation', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'comfy-'));
    const file = join(dir, 'wf.json');
    await writeFile(file, JSON.stringify(txt2img));
    const e = comfyuiEngineFactory.create(
      { type: 'comfyui', base_url: server.url, workflow_file: file, poll_interval_ms: 10 },
      { model, log },
    );
    assert.equal(PNG.sync.read((await e.generate(input, never)).bytes).width, 640);
    const bad = (settings: Record<string, unknown>, re: RegExp) =>
      assert.throws(
        () =>
          comfyuiEngineFactory.create({ type: 'comfyui', base_url: server.url, ...settings }, { model, log }),
        (err: ApiError) => err.status === 500 && re.test(err.message),
      );
    bad({}, /exactly one of workflow_file and workflow/);
    bad({ workflow: txt2img, workflow_file: file }, /exactly one/);
    bad({ workflow: { '1': { inputs: { text: 'no placeholder' } } } }, /\{\{prompt\}\}/);
    bad({ workflow: txt2img, edit_workflow: txt2img }, /\{\{image\}\}/);
    bad({ workflow_file: join(dir, 'missing.json') }, /cannot read/);
    await rm(dir, { recursive: true, force: true });
  });

  it('fillWorkflow: numbers for whole placeholders, text inside strings, unknown ones kept', () => {
    assert.deepEqual(fillWorkflow({ a: '{{seed}}', b: 'x {{seed}} y', c: ['{{nope}}'], d: 3 }, { seed: 9 }), {
      a: 9,
      b: 'x 9 y',
      c: ['{{nope}}'],
      d: 3,
    });
  });
});
