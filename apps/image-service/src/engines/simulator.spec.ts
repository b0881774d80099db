import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PNG } from 'pngjs';
import type { ImageEngineInput } from './engine.js';
import { renderSimulatedImage, SimulatorImageEngine } from './simulator.js';

const base: ImageEngineInput = {
  operation: 'generation',
  prompt: 'a red fox in the snow',
  width: 256,
  height: 512,
  seed: 42,
  seedRequested: true,
  guidance: null,
  images: [],
};

describe('simulator image engine (a test double)', () => {
  it('renders a PNG of exactly the requested size', async () => {
    const { bytes } = await new SimulatorImageEngine().generate(base, new AbortController().signal);
    const png = PNG.sync.read(bytes);
    assert.equal(png.width, 256);
    assert.equal(png.height, 512);
  });

  it('is deterministic: same inputs give identical bytes', () => {
    assert.ok(renderSimulatedImage(base).equals(renderSimulatedImage({ ...base })));
  });

  it('changes with the seed, the prompt, the guidance and the size', () => {
    const ref = renderSimulatedImage(base);
    for (const other of [
      { ...base, seed: 43 },
      { ...base, prompt: 'a blue fox in the snow' },
      { ...base, guidance: 7.5 },
      { ...base, width: 272 },
    ]) {
      assert.ok(!ref.equals(renderSimulatedImage(other)), JSON.stringify({ ...other, images: undefined }));
    }
  });

  it('draws a picture, not a flat colour', () => {
    const png = PNG.sync.read(renderSimulatedImage(base));
    const colours = new Set<number>();
    for (let i = 0; i < png.data.length; i += 4 * 97) colours.add(png.data.readUInt32BE(i));
    assert.ok(colours.size > 50, `${colours.size} distinct colours`);
  });

  it('blends a PNG input into an edit, and any input changes the result', () => {
    const input = new PNG({ width: 4, height: 4 });
    input.data.fill(255);
    const white = PNG.sync.write(input);
    input.data.fill(0);
    for (let i = 3; i < input.data.length; i += 4) input.data[i] = 255;
    const black = PNG.sync.write(input);
    const edit = { ...base, operation: 'edit' as const };
    const onWhite = PNG.sync.read(
      renderSimulatedImage({ ...edit, images: [{ bytes: white, contentType: 'image/png' }] }),
    );
    const onBlack = PNG.sync.read(
      renderSimulatedImage({ ...edit, images: [{ bytes: black, contentType: 'image/png' }] }),
    );
    const mean = (p: PNG) => {
      let s = 0;
      for (let i = 0; i < p.data.length; i += 4) s += p.data[i]! + p.data[i + 1]! + p.data[i + 2]!;
      return s / (p.data.length / 4) / 3;
    };
    assert.ok(mean(onWhite) > 128 && mean(onBlack) < 128, `${mean(onWhite)} vs ${mean(onBlack)}`);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    const withJpeg = renderSimulatedImage({ ...edit, images: [{ bytes: jpeg, contentType: 'image/jpeg' }] });
    assert.ok(!withJpeg.equals(renderSimulatedImage(edit)));
  });

  it('models latency (ttft_ms per image) and stops at once when aborted', async () => {
    const engine = new SimulatorImageEngine(5_000);
    const ac = new AbortController();
    const t = performance.now();
    const p = engine.generate(base, ac.signal);
    setTimeout(() => ac.abort(new Error('stop')), 20);
    await assert.rejects(p, /stop/);
    assert.ok(performance.now() - t < 4_000, 'well before the 5 s render (slack for a busy machine)');
  });
});
