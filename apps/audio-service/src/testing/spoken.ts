import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Pcm16, parseWav } from '../media/wav.js';

const run = promisify(execFile);

/** Where each passage lies in the generated audio (seconds): flite's whole output, its own edges included. */
export interface Passage {
  text: string;
  start: number;
  end: number;
}

/**
 * Test audio with known pauses: each passage spoken by flite (`slt`, 16 kHz), preceded by a pause of
 * `pauses[i]` seconds, with `tail` seconds after the last; the silence carries faint white noise
 * (`noiseDb` below full scale, deterministic) so that it is not digital zero.
 */
export async function spokenWithPauses(
  texts: string[],
  pauses: number[],
  opts: { tail?: number; noiseDb?: number } = {},
): Promise<{ pcm: Pcm16; passages: Passage[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'spoken-'));
  try {
    const rate = 16_000;
    const noise = 32768 * 10 ** ((opts.noiseDb ?? -60) / 20);
    let seed = 12345;
    const rnd = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 4294967296 - 0.5;
    };
    const silence = (seconds: number) => {
      const b = Buffer.alloc(Math.round(seconds * rate) * 2);
      for (let i = 0; i < b.length / 2; i++) b.writeInt16LE(Math.round(rnd() * 2 * noise), i * 2);
      return b;
    };
    const parts: Buffer[] = [];
    const passages: Passage[] = [];
    let t = 0;
    for (const [i, text] of texts.entries()) {
      const pause = silence(pauses[i] ?? 0);
      parts.push(pause);
      t += pause.length / 2 / rate;
      const file = join(dir, `p${i}.wav`);
      await run('flite', ['-voice', 'slt', '-t', text, '-o', file]);
      const w = parseWav(await readFile(file));
      if (w.sampleRate !== rate || w.channels !== 1) throw new Error('flite did not write 16 kHz mono');
      parts.push(Buffer.from(w.data));
      passages.push({ text, start: t, end: t + w.data.length / 2 / rate });
      t += w.data.length / 2 / rate;
    }
    parts.push(silence(opts.tail ?? 1));
    return { pcm: { sampleRate: rate, channels: 1, data: Buffer.concat(parts) }, passages };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
