import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { ApiError } from '@infer/contracts';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../common/send-error.js';

/** Repository root (this file is apps/gateway/{src,dist}/console/serve-console.*). */
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const DEFAULT_CONSOLE_DIR = resolve(REPO_ROOT, 'apps', 'console', 'dist');

/**
 * The console's page policy: only this origin's scripts, styles, images and API (no inline script
 * or style, no framing, no plugins). The console's build has no inline code, so nothing is relaxed.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin');
}

/**
 * Serves the operator console's production build (apps/console/dist, or `dir`) at /console/:
 * hashed files under /console/assets/ are cached for a year (immutable); every other path under
 * /console/ answers index.html (the app routes itself), never cached, so a deploy never leaves a tab
 * on missing chunks. Without a build, /console/ explains how to make one. The members' account pages
 * (/account/) are the same build and page.
 */
export async function serveConsole(app: NestFastifyApplication, dir = DEFAULT_CONSOLE_DIR): Promise<void> {
  const f = app.getHttpAdapter().getInstance();
  const assets = join(dir, 'assets');
  if (existsSync(assets)) {
    await app.register(fastifyStatic as never, {
      root: assets,
      prefix: '/console/assets/',
      decorateReply: false,
      index: false,
      cacheControl: false,
      // @fastify/static 10 hands the Fastify reply here.
      setHeaders: (reply: FastifyReply) => {
        reply.header('cache-control', 'public, max-age=31536000, immutable');
        reply.header('x-content-type-options', 'nosniff');
      },
    });
  }
  const index = async (req: FastifyRequest, reply: FastifyReply) => {
    let html: string;
    try {
      html = await readFile(join(dir, 'index.html'), 'utf8');
    } catch {
      sendError(
        req,
        reply,
        new ApiError(404, 'The operator console is not built: run `npm run build -w @infer/console`.', {
          type: 'invalid_request_error',
          code: 'console_not_built',
        }),
      );
      return reply;
    }
    return pageHeaders(reply).header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(html);
  };
  f.get('/console', (_req, reply) => reply.redirect('/console/', 308));
  f.get('/console/', index);
  f.get('/console/*', async (req, reply) => {
    // A missing hashed asset is a 404, not the page (the browser would run HTML as a script).
    if (req.url.startsWith('/console/assets/')) {
      sendError(req, reply, new ApiError(404, 'No such console asset.', { code: 'unknown_url' }));
      return reply;
    }
    return index(req, reply);
  });
  // The members' account pages: the same build and page (main.tsx picks the member-only layout from
  // the path); their API is /account/api/..., where an unknown path is a JSON 404, not the page.
  f.get('/account', (_req, reply) => reply.redirect('/account/', 308));
  f.get('/account/', index);
  f.get('/account/*', async (req, reply) => {
    if (req.url.startsWith('/account/api/') || req.url === '/account/api') {
      sendError(req, reply, new ApiError(404, 'No such account API route.', { code: 'unknown_url' }));
      return reply;
    }
    return index(req, reply);
  });
}
