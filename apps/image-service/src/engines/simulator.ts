import { createHash } from 'node:crypto';
import { abortableDelay } from '@infer/rpc';
import { parseEngineSettings } from '@infer/runtime';
import { PNG } from 'pngjs';
import { z } from 'zod';
import type { EngineImage, ImageEngine, ImageEngineInput, ImageEngineOutput } from './engine.js';
import type { ImageEngineFactory } from './registry.js';

/**
 * THE SIMULATOR ENGINE: A TEST DOUBLE, NOT AN IMAGE MODEL.
 *
 * It renders a deterministic PNG of exactly the requested size from the prompt and the seed (and, for
 * edits, the input images): a two-colour gradient with soft discs and a 16-pixel grain, every colour
 * and position drawn from a PRNG seeded by SHA-256 of those inputs. Same inputs -> identical bytes;
 * another seed, prompt, size or guidance -> another picture. For edits, a PNG input is blended in
 * (scaled to the output size); JPEG and WebP inputs only change the seed (no decoder here).
 *
 * It exists so that everything in front of an image model (gateway, limits, queue, workers, store,
 * signed URLs) runs and is tested on machines without one. Real images come from the `openai`
 * (LocalAI ...) or `comfyui` engines.
 *
 * Settings (catalog `engine`): `{type: simulator, ttft_ms: 0}`: `ttft_ms` is the time each image takes
 * (default 0), to model a slow model in load tests. The chat simulator's other settings are ignored.
 */
export const ImageSimulatorSettingsSchema = z.looseObject({
  type: z.literal('simulator'),
  ttft_ms: z.number().min(0).default(0),
});

export const simulatorImageEngineFactory: ImageEngineFactory = {
  type: 'simulator',
  create(settings, { model }) {
    const s = parseEngineSettings(ImageSimulatorSettingsSchema, settings, model);
    return new SimulatorImageEngine(s.ttft_ms);
  },
};

export class SimulatorImageEngine implements ImageEngine {
  readonly type = 'simulator';

  constructor(private readonly latencyMs = 0) {}

  async generate(input: ImageEngineInput, signal: AbortSignal): Promise<ImageEngineOutput> {
    if (this.latencyMs > 0) await abortableDelay(this.latencyMs, signal);
    if (signal.aborted) throw signal.reason;
    return { bytes: renderSimulatedImage(input) };
  }
}

/** sfc32: a small, fast PRNG with a 128-bit state; returns floats in [0, 1). */
function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

/** A 32-bit integer hash (for per-cell grain, independent of drawing order). */
function hash32(x: number, y: number, salt: number): number {
  let h = (x * 374761393 + y * 668265263 + salt * 2246822519) | 0;
  h = Math.imul(h ^ (h >>> 13), 1274126177);
  return (h ^ (h >>> 16)) >>> 0;
}

export function renderSimulatedImage(input: ImageEngineInput): Buffer {
  const { width, height } = input;
  const seedHash = createHash('sha256').update(
    JSON.stringify([input.prompt, input.seed, width, height, input.guidance, input.operation]),
  );
  for (const img of input.images) seedHash.update(createHash('sha256').update(img.bytes).digest());
  const h = seedHash.digest();
  const rand = sfc32(h.readUInt32LE(0), h.readUInt32LE(4), h.readUInt32LE(8), h.readUInt32LE(12));
  for (let i = 0; i < 12; i++) rand(); // warm up
  const salt = h.readUInt32LE(16);

  const color = () => [rand() * 255, rand() * 255, rand() * 255] as const;
  const c1 = color();
  const c2 = color();
  const angle = rand() * Math.PI * 2;
  const ax = Math.cos(angle);
  const ay = Math.sin(angle);
  const span = Math.abs(ax) * width + Math.abs(ay) * height;
  const x0 = ax < 0 ? width : 0;
  const y0 = ay < 0 ? height : 0;
  const discs = Array.from({ length: 3 + Math.floor(rand() * 8) }, () => ({
    cx: rand() * width,
    cy: rand() * height,
    r: (0.08 + rand() * 0.3) * Math.min(width, height),
    c: color(),
    alpha: 0.35 + rand() * 0.5,
  }));
  const grain = 6 + Math.floor(rand() * 10);
  const base = pngBase(input.images, width, height);

  const png = new PNG({ width, height, colorType: 2, inputHasAlpha: true });
  const data = png.data;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = ((x - x0) * ax + (y - y0) * ay) / span;
      let r = c1[0] + (c2[0] - c1[0]) * t;
      let g = c1[1] + (c2[1] - c1[1]) * t;
      let b = c1[2] + (c2[2] - c1[2]) * t;
      for (const d of discs) {
        const dx = x - d.cx;
        const dy = y - d.cy;
        const q = (dx * dx + dy * dy) / (d.r * d.r);
        if (q < 1) {
          const w = (1 - q) * d.alpha;
          r += (d.c[0] - r) * w;
          g += (d.c[1] - g) * w;
          b += (d.c[2] - b) * w;
        }
      }
      const cell = hash32(x >> 4, y >> 4, salt);
      const n = ((cell & 0xff) / 255 - 0.5) * grain;
      const i = (y * width + x) * 4;
      if (base) {
        r = (r + base[i]!) / 2;
        g = (g + base[i + 1]!) / 2;
        b = (b + base[i + 2]!) / 2;
      }
      data[i] = clamp(r + n);
      data[i + 1] = clamp(g + n);
      data[i + 2] = clamp(b + n);
      data[i + 3] = 255;
    }
  }
  return PNG.sync.write(png, { colorType: 2, inputHasAlpha: true });
}

function clamp(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : Math.round(v);
}

/** The first PNG input scaled (nearest neighbour) to the output size, as RGBA; null when none. */
function pngBase(images: EngineImage[], width: number, height: number): Buffer | null {
  const first = images.find((i) => i.contentType === 'image/png');
  if (!first) return null;
  let src: PNG;
  try {
    src = PNG.sync.read(first.bytes);
  } catch {
    return null; // undecodable input: it still changed the seed
  }
  const out = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(src.height - 1, Math.floor((y * src.height) / height));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(src.width - 1, Math.floor((x * src.width) / width));
      src.data.copy(out, (y * width + x) * 4, (sy * src.width + sx) * 4, (sy * src.width + sx) * 4 + 4);
    }
  }
  return out;
}
