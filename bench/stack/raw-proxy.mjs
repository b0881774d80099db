// The baseline of bench/stack.ts: a raw node:http reverse proxy to UPSTREAM_PORT with a keep-alive
// agent, streaming the request and the answer through (no parsing, no checks). Port 0; prints
// `listening <port>` on stdout.
import { Agent, createServer, request } from 'node:http';

const port = Number(process.env.UPSTREAM_PORT);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const server = createServer((req, res) => {
  const up = request(
    { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers, agent },
    (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    },
  );
  up.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
