/**
 * A stand-in trace viewer (a test double of Jaeger's or Tempo's trace page): `GET /trace/<trace id>`
 * lists the spans the OTLP receiver got for that trace, with a link back to the console's request log
 * filtered by the trace id (what an operator configures in Jaeger or Grafana as a trace-to-logs link).
 */
import { createServer, type Server } from 'node:http';
import type { OtlpReceiver } from './otlp-receiver.js';

export interface TraceViewer {
  url: string;
  /** The console's base URL (the gateway's), for the link back; set once the gateway runs. */
  consoleUrl: string;
  close(): Promise<void>;
}

const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

export async function startTraceViewer(otlp: OtlpReceiver): Promise<TraceViewer> {
  const viewer = { consoleUrl: '' };
  const server: Server = createServer((req, res) => {
    const m = /^\/trace\/([0-9a-f]{32})$/.exec(req.url ?? '');
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    const id = m[1] as string;
    const spans = otlp.spans.filter((s) => s.traceId === id);
    const back = `${viewer.consoleUrl}/console/logs?trace_id=${id}`;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><html lang="en"><head><title>Trace ${id}</title></head><body><main>` +
        `<h1>Trace ${id}</h1><ul>${spans.map((s) => `<li>${esc(s.service)}: ${esc(s.name)}</li>`).join('')}</ul>` +
        `<p><a href="${esc(back)}">Logs of this trace</a></p></main></body></html>`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return Object.assign(viewer, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}
