/**
 * Just enough RIFF/WAVE for 16-bit PCM: read the header ffmpeg writes to a file, write one for a slice
 * of samples, find where to cut long audio.
 */
export interface Pcm16 {
  sampleRate: number;
  channels: number;
  /** Little-endian signed 16-bit samples, interleaved. */
  data: Buffer;
}

export class WavError extends Error {}

export function parseWav(buf: Buffer): Pcm16 {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') {
    throw new WavError('not a RIFF/WAVE file');
  }
  let pos = 12;
  let fmt: { format: number; channels: number; sampleRate: number; bits: number } | null = null;
  while (pos + 8 <= buf.length) {
    const id = buf.toString('ascii', pos, pos + 4);
    let size = buf.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > buf.length) throw new WavError('short fmt chunk');
      fmt = {
        format: buf.readUInt16LE(body),
        channels: buf.readUInt16LE(body + 2),
        sampleRate: buf.readUInt32LE(body + 4),
        bits: buf.readUInt16LE(body + 14),
      };
    } else if (id === 'data') {
      if (!fmt) throw new WavError('data chunk before fmt chunk');
      // 0 or 0xFFFFFFFF: a header written to a pipe that was never finished; take the rest of the file.
      if (size === 0 || size === 0xffffffff || body + size > buf.length) size = buf.length - body;
      if (fmt.format !== 1 && fmt.format !== 0xfffe) throw new WavError('not PCM');
      if (fmt.bits !== 16) throw new WavError('not 16-bit');
      const bytes = size - (size % (2 * fmt.channels));
      return { sampleRate: fmt.sampleRate, channels: fmt.channels, data: buf.subarray(body, body + bytes) };
    }
    pos = body + size + (size % 2);
  }
  throw new WavError('no data chunk');
}

export function wavDuration(p: Pcm16): number {
  return p.data.length / (2 * p.channels * p.sampleRate);
}

/** A canonical 44-byte-header WAV file of `data`. */
export function encodeWav(p: Pcm16): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + p.data.length, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(p.channels, 22);
  h.writeUInt32LE(p.sampleRate, 24);
  h.writeUInt32LE(p.sampleRate * p.channels * 2, 28);
  h.writeUInt16LE(p.channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(p.data.length, 40);
  return Buffer.concat([h, p.data]);
}

/** Samples [from, to) of mono audio (indices in samples). */
export function slice(p: Pcm16, from: number, to: number): Pcm16 {
  const f = 2 * p.channels;
  return { ...p, data: p.data.subarray(from * f, to * f) };
}

export interface Segment {
  index: number;
  /** First sample. */
  from: number;
  /** One past the last sample. */
  to: number;
}

/**
 * Cuts mono audio into segments of at most `maxSeconds`. Each cut is placed at the quietest moment
 * (lowest energy over 100 ms windows) in the last `searchSeconds` before the limit, so that a cut
 * rarely falls inside a word; audio of at most `maxSeconds` is one segment.
 */
export function planSegments(p: Pcm16, maxSeconds: number, searchSeconds = 10): Segment[] {
  const total = p.data.length / (2 * p.channels);
  const max = Math.floor(maxSeconds * p.sampleRate);
  const out: Segment[] = [];
  let from = 0;
  while (total - from > max) {
    const limit = from + max;
    const search = Math.min(Math.floor(searchSeconds * p.sampleRate), Math.floor(max / 2));
    const cut = quietestPoint(p, limit - search, limit);
    out.push({ index: out.length, from, to: cut });
    from = cut;
  }
  out.push({ index: out.length, from, to: total });
  return out;
}

/** Center of the quietest 100 ms window within [from, to) (samples of channel 0). */
export function quietestPoint(p: Pcm16, from: number, to: number): number {
  const win = Math.max(1, Math.floor(p.sampleRate / 10));
  const step = Math.max(1, Math.floor(win / 2));
  const stride = 2 * p.channels;
  let best = to;
  let bestEnergy = Number.POSITIVE_INFINITY;
  for (let start = from; start + win <= to; start += step) {
    let e = 0;
    for (let i = start; i < start + win; i++) {
      const s = p.data.readInt16LE(i * stride);
      e += s * s;
    }
    // `<=` prefers the later of equal windows: the segment gets as long as allowed.
    if (e <= bestEnergy) {
      bestEnergy = e;
      best = start + Math.floor(win / 2);
    }
  }
  return Math.min(best, to);
}
