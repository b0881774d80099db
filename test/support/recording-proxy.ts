/**
 * A recording HTTP proxy (a test double, named as one): it records every request a client sends
 * through it (absolute-form requests and CONNECT tunnels) and forwards nothing, answering 502. Tests set
 * HTTP_PROXY / HTTPS_PROXY to it to prove that nothing goes out through a proxy: loopback requests
 * bypass it (NO_PROXY), and the apps make no outbound attempt of their own.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxyAttempt {
  method: string;
  /** The absolute URL, or host:port of a CONNECT. */
  target: string;
}

export interface RecordingProxy {
  url: string;
  attempts: ProxyAttempt[];
  /** HTTP_PROXY, HTTPS_PROXY (both cases) pointing at this proxy. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function recordingProxy(): Promise<RecordingProxy> {
  const attempts: ProxyAttempt[] = [];
  const server: Server = createServer((req, res) => {
    attempts.push({ method: req.method ?? '?', target: req.url ?? '' });
    res.writeHead(502, { 'content-type': 'text/plain', connection: 'close' });
    res.end('recording proxy: nothing is forwarded\n');
  });
  server.on('connect', (req, socket) => {
    attempts.push({ method: 'CONNECT', target: req.url ?? '' });
    socket.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    attempts,
    env: { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
