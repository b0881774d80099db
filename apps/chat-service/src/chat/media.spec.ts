import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type ApiError, CatalogEntrySchema, type ContentPart } from '@infer/contracts';
import type { EngineMessage } from '../engines/engine.js';
import { DEFAULT_MEDIA_OPTIONS, type MediaOptions, resolveMedia, sniffImage } from './media.js';

/** A 1x1 PNG. */
const PNG_1PX = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
/** A WAV header with no samples. */
const WAV = Buffer.concat([
  Buffer.from('RIFF'),
  Buffer.from([36, 0, 0, 0]),
  Buffer.from('WAVEfmt '),
  Buffer.alloc(24),
  Buffer.from('data'),
  Buffer.alloc(4),
]);

const model = (caps: Record<string, unknown>) =>
  CatalogEntrySchema.parse({
    id: 'm',
    kind: 'chat',
    rank: 1,
    tiers: ['inference'],
    capabilities: caps,
    engine: { type: 'simulator' },
  });
const vision = model({ vision: true });
const audio = model({ audio_input: true });
const sim = { type: 'simulator' };
const user = (...parts: ContentPart[]): EngineMessage[] => [{ role: 'user', content: parts }];
const image = (url: string): ContentPart => ({ type: 'image_url', image_url: { url } });
const dataUri = (b: Buffer, type = 'image/png') => `data:${type};base64,${b.toString('base64')}`;
const signal = new AbortController().signal;

async function rejects400(p: Promise<unknown>, param: string, message?: RegExp) {
  await assert.rejects(p, (e: ApiError) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, param);
    if (message) assert.match(e.message, message);
    return true;
  });
}

describe('resolveMedia', () => {
  let server: Server;
  let host: string;
  let opts: MediaOptions;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/cat.png') res.writeHead(200, { 'content-type': 'image/png' }).end(PNG_1PX);
      else if (req.url === '/fake.png')
        res.writeHead(200, { 'content-type': 'image/png' }).end('not an image');
      else if (req.url === '/page') res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>');
      else if (req.url === '/big.png')
        res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(5000));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    opts = { ...DEFAULT_MEDIA_OPTIONS, allowHosts: [host], maxImageBytes: 4096 };
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('keeps a valid data: URI and fetches an allowed URL into a data: URI', async () => {
    const out = await resolveMedia(
      user({ type: 'text', text: 'look' }, image(dataUri(PNG_1PX)), image(`http://${host}/cat.png`)),
      vision,
      sim,
      opts,
      signal,
    );
    const parts = out[0]?.content as ContentPart[];
    assert.deepEqual(parts[0], { type: 'text', text: 'look' });
    assert.deepEqual(parts[1], image(dataUri(PNG_1PX)));
    assert.deepEqual(parts[2], image(dataUri(PNG_1PX)), 'the fetched bytes, as a data: URI');
  });

  it('refuses loopback, private and metadata addresses (the SSRF guard) with param naming the url', async () => {
    for (const url of [
      `http://${host.replace('127.0.0.1', 'localhost')}/cat.png`,
      'http://10.0.0.1/x.png',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/x.png',
    ]) {
      await rejects400(
        resolveMedia(user(image(url)), vision, sim, DEFAULT_MEDIA_OPTIONS, signal),
        'messages[0].content[0].image_url.url',
        /public address|could not be used/,
      );
    }
  });

  it('refuses what is not a usable image', async () => {
    const cases: Array<[string, RegExp]> = [
      [`http://${host}/fake.png`, /not a PNG, JPEG, GIF or WebP/],
      [`http://${host}/page`, /content type text\/html/],
      [`http://${host}/missing.png`, /404/],
      [`http://${host}/big.png`, /larger than 4096 bytes/],
      ['ftp://example.com/x.png', /http\(s\) URL or a data: URI/],
      ['data:image/png,rawtext', /base64/],
      ['data:image/bmp;base64,Qk0=', /Unsupported image type 'image\/bmp'/],
      ['data:image/png;base64,!!!notbase64', /not valid base64/],
      [dataUri(Buffer.from('GIF89a-but-said-png')), /not a PNG image/],
      [dataUri(Buffer.alloc(6000)), /larger than 4096 bytes/],
    ];
    for (const [url, message] of cases) {
      await rejects400(
        resolveMedia(user(image(url)), vision, sim, opts, signal),
        'messages[0].content[0].image_url.url',
        message,
      );
    }
  });

  it('names the part when the model or the engine cannot take it', async () => {
    const msgs: EngineMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'x' }, image(dataUri(PNG_1PX))] },
    ];
    await rejects400(resolveMedia(msgs, model({}), sim, opts, signal), 'messages[1].content[1]', /text only/);
    await rejects400(
      resolveMedia(msgs, vision, { type: 'llama-cpp', media: { images: false, audio: false } }, opts, signal),
      'messages[1].content[1]',
      /engine without image input/,
    );
    const wav: ContentPart = {
      type: 'input_audio',
      input_audio: { data: WAV.toString('base64'), format: 'wav' },
    };
    await rejects400(resolveMedia(user(wav), vision, sim, opts, signal), 'messages[0].content[0]', /audio/);
  });

  it('checks input_audio: base64 of the declared format', async () => {
    const ok: ContentPart = {
      type: 'input_audio',
      input_audio: { data: WAV.toString('base64'), format: 'wav' },
    };
    const out = await resolveMedia(user(ok), audio, sim, opts, signal);
    assert.deepEqual((out[0] as { content: ContentPart[] }).content[0], ok);
    const mp3: ContentPart = {
      type: 'input_audio',
      input_audio: { data: WAV.toString('base64'), format: 'mp3' },
    };
    await rejects400(
      resolveMedia(user(mp3), audio, sim, opts, signal),
      'messages[0].content[0].input_audio.data',
      /not an MP3/,
    );
    const junk: ContentPart = { type: 'input_audio', input_audio: { data: '%%%', format: 'wav' } };
    await rejects400(
      resolveMedia(user(junk), audio, sim, opts, signal),
      'messages[0].content[0].input_audio.data',
      /base64/,
    );
  });

  it('sniffs the four image types', () => {
    assert.equal(sniffImage(PNG_1PX), 'image/png');
    assert.equal(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xe0])), 'image/jpeg');
    assert.equal(sniffImage(Buffer.from('GIF89a......')), 'image/gif');
    assert.equal(sniffImage(Buffer.from('RIFF\0\0\0\0WEBPVP8 ')), 'image/webp');
    assert.equal(sniffImage(Buffer.from('hello world!')), null);
  });
});
