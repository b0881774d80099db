/**
 * TEST DOUBLE, not an engine: a tiny OpenAI-compatible audio server (POST /v1/audio/speech and
 * /v1/audio/transcriptions) bound to 127.0.0.1 on a free port, standing in for Kokoro-FastAPI /
 * speaches / whisper servers in tests of the `openai` engines. It records what it received and answers
 * with deterministic content:
 *   speech          voices `af_heart` and `ef_dora`; the body is a WAV of 0.5 s of a 440 Hz tone
 *                   (whatever the format, tagged with the format's content type); another voice -> 400
 *   transcriptions  verbose_json in faster-whisper's shape, language named in English ("english"),
 *                   one segment per second of audio (at most 3) and top-level words; language `xx` -> 400
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { encodeWav, parseWav } from '../media/wav.js';

export interface FakeUpstreamRequest {
  path: string;
  authorization: string | undefined;
  json?: Record<string, unknown>;
  fields?: Record<string, string[]>;
  file?: { name: string; type: string; bytes: Buffer };
}

export interface FakeAudioUpstream {
  baseUrl: string;
  requests: FakeUpstreamRequest[];
  close(): Promise<void>;
}

export const FAKE_VOICES = ['af_heart', 'ef_dora'] as const;

export function toneWav(seconds: number, rate = 24_000): Buffer {
  const n = Math.round(seconds * rate);
  const data = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++)
    data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  return encodeWav({ sampleRate: rate, channels: 1, data });
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeAudioUpstream(): Promise<FakeAudioUpstream> {
  const requests: FakeUpstreamRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await body(req);
      const rec: FakeUpstreamRequest = { path: req.url ?? '', authorization: req.headers.authorization };
      requests.push(rec);
      const json = (status: number, v: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(v));
      if (req.method === 'POST' && req.url === '/v1/audio/speech') {
        rec.json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
        if (!FAKE_VOICES.includes(rec.json.voice as (typeof FAKE_VOICES)[number])) {
          json(400, {
            error: { message: `Voice '${String(rec.json.voice)}' not found`, type: 'invalid_request_error' },
          });
          return;
        }
        const wav = toneWav(0.5);
        res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': wav.length }).end(wav);
        return;
      }
      if (req.method === 'POST' && req.url === '/v1/audio/transcriptions') {
        const form = await new Request('http://fake/', {
          method: 'POST',
          headers: { 'content-type': req.headers['content-type'] ?? '' },
          body: raw,
        }).formData();
        rec.fields = {};
        for (const [k, v] of form.entries()) {
          if (typeof v === 'string') {
            rec.fields[k] ??= [];
            rec.fields[k].push(v);
          } else {
            rec.file = { name: v.name, type: v.type, bytes: Buffer.from(await v.arrayBuffer()) };
          }
        }
        if (rec.fields.language?.[0] === 'xx') {
          json(400, { error: { message: 'Unsupported language: xx', param: 'language' } });
          return;
        }
        const pcm = parseWav(rec.file?.bytes ?? Buffer.alloc(0));
        const duration = pcm.data.length / 2 / pcm.sampleRate;
        const n = Math.max(1, Math.min(3, Math.floor(duration)));
        const segments = Array.from({ length: n }, (_, i) => ({
          id: i,
          seek: 0,
          start: (i * duration) / n,
          end: ((i + 1) * duration) / n,
          text: ` part ${i + 1}`,
          tokens: [50364 + i],
          temperature: 0,
          avg_logprob: -0.25,
          compression_ratio: 1.2,
          no_speech_prob: 0.01,
        }));
        const words = segments.flatMap((s, i) => [
          { word: 'part', start: s.start, end: s.start + (s.end - s.start) / 2, probability: 0.9 },
          { word: String(i + 1), start: s.start + (s.end - s.start) / 2, end: s.end, probability: 0.8 },
        ]);
        json(200, {
          task: 'transcribe',
          language: 'english',
          duration,
          text: segments.map((s) => s.text).join(''),
          segments,
          words,
        });
        return;
      }
      json(404, { error: { message: 'not found' } });
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  server.unref();
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
