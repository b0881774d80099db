// The images' health check (HEALTHCHECK, docker/compose.yaml): exits 0 when the process answers 200 on
// /readyz, 1 otherwise, within 2.5 s. Copied into every image as /app/healthcheck.mjs.
//   node healthcheck.mjs            a service: its ops server, http://127.0.0.1:$OPS_PORT/readyz (9464)
//   node healthcheck.mjs gateway    the gateway: /readyz on $PORT (8080), over TLS when TLS_CERT_FILE is set
// A script rather than `node -e '<code>'`: compose implementations hand a health check's words to
// /bin/sh differently (podman-compose 1.0.3 joins them into one quoted string), and words without
// quotes, spaces or shell characters survive every one of them.
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';

const gateway = process.argv[2] === 'gateway';
const tls = gateway && Boolean(process.env.TLS_CERT_FILE);
const port = Number((gateway ? process.env.PORT : process.env.OPS_PORT) || (gateway ? 8080 : 9464));
const get = tls ? httpsGet : httpGet;
const req = get(
  { host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false, timeout: 2_500 },
  (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  },
);
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', () => process.exit(1));
