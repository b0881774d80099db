import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** For tests: a request as a fake upstream received it. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body as FormData when it was multipart/form-data. */
  form(): Promise<FormData>;
  json(): unknown;
}

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer | object;
  /** Wait this long before answering (ms). */
  delayMs?: number;
}

export interface FakeHttp {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/**
 * For tests: a tiny HTTP server on 127.0.0.1 (random port) that records every request and answers
 * with `handle`. Stands in for upstream engines (LocalAI, ComfyUI) in unit tests.
 */
export async function startFakeHttp(handle: (r: Received) => Answer | Promise<Answer>): Promise<FakeHttp> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const r: Received = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        body,
        form: () =>
          new Response(body, { headers: { 'content-type': String(req.headers['content-type']) } }).formData(),
        json: () => JSON.parse(body.toString('utf8')),
      };
      received.push(r);
      try {
        const a = await handle(r);
        if (a.delayMs) await new Promise((ok) => setTimeout(ok, a.delayMs));
        if (res.destroyed) return;
        const isJson = a.body !== undefined && typeof a.body === 'object' && !Buffer.isBuffer(a.body);
        const payload = isJson ? JSON.stringify(a.body) : (a.body as string | Buffer | undefined);
        res.writeHead(a.status ?? 200, {
          ...(isJson ? { 'content-type': 'application/json' } : {}),
          ...a.headers,
        });
        res.end(payload);
      } catch (e) {
        res.writeHead(500).end(String(e));
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
