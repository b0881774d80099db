import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Controller, Get, type INestApplication, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import {
  APP_FILTER,
  APP_GUARD,
  DiscoveryModule,
  DiscoveryService,
  MetadataScanner,
  Reflector,
} from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { GATEWAY_CONTROLLERS } from '../../app.module.js';
import { AuthGuard } from '../../auth/auth.guard.js';
import { KeyCache } from '../../auth/key-cache.js';
import { ErrorsFilter } from '../../common/errors.filter.js';
import { GATEWAY_CONFIG } from '../../config.js';
import { PRISMA } from '../../infra/tokens.js';
import { AdminGuard } from './admin.guard.js';
import { AdminAccess } from './admin-access.service.js';
import { ADMIN_ROUTE, type AdminRouteNeed } from './admin-route.js';

const ADMIN_TOKEN = 'admin-token-for-the-route-walk';
const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'ALL', 'OPTIONS', 'HEAD', 'SEARCH'];

interface NestRoute {
  method: string;
  path: string;
  need: AdminRouteNeed | undefined;
  handler: string;
}

const join = (...parts: (string | string[] | undefined)[]) =>
  `/${parts
    .flatMap((p) => (Array.isArray(p) ? p[0] : p) ?? '')
    .join('/')
    .split('/')
    .filter(Boolean)
    .join('/')}`;

/** Every route of Nest's route table (the controllers Nest discovered), with its @Admin need. */
function nestRoutes(app: INestApplication): NestRoute[] {
  const discovery = app.get(DiscoveryService);
  const scanner = app.get(MetadataScanner);
  const reflector = app.get(Reflector);
  const out: NestRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const cls = wrapper.metatype as Type | undefined;
    if (!cls) continue;
    const base = Reflect.getMetadata(PATH_METADATA, cls) as string | string[] | undefined;
    for (const name of scanner.getAllMethodNames(cls.prototype)) {
      const fn = cls.prototype[name];
      const path = Reflect.getMetadata(PATH_METADATA, fn) as string | string[] | undefined;
      const method = Reflect.getMetadata(METHOD_METADATA, fn) as number | undefined;
      if (path === undefined || method === undefined) continue;
      out.push({
        method: HTTP_METHODS[method] ?? String(method),
        path: join(base, path),
        need: reflector.getAllAndOverride<AdminRouteNeed | undefined>(ADMIN_ROUTE, [fn, cls]),
        handler: `${cls.name}.${name}`,
      });
    }
  }
  return out;
}

/** The /admin routes of the table that lack @Admin(need): what this spec exists to catch. */
export function unguardedAdminRoutes(routes: NestRoute[]): string[] {
  return routes
    .filter((r) => (r.path === '/admin' || r.path.startsWith('/admin/')) && r.need === undefined)
    .map((r) => `${r.method} ${r.path} (${r.handler})`);
}

/** A Nest app of `controllers` on Fastify, with the real guards, filter and AdminAccess; the rest mocked. */
async function appOf(controllers: Type[]) {
  const fastifyRoutes: { method: string; url: string }[] = [];
  const mod = await Test.createTestingModule({
    imports: [DiscoveryModule],
    controllers,
    providers: [
      AdminAccess,
      AdminGuard,
      { provide: GATEWAY_CONFIG, useValue: { ADMIN_TOKEN, CONSOLE_SESSION_IDLE_MS: 60_000 } },
      { provide: PRISMA, useValue: {} },
      // A key cache that knows one API key: it must not open /admin.
      { provide: KeyCache, useValue: { cached: () => ({ keyId: 'k', memberId: 'm', tier: 'community' }) } },
      { provide: APP_GUARD, useClass: AuthGuard },
      { provide: APP_FILTER, useClass: ErrorsFilter },
    ],
  })
    // Every other dependency of the controllers (repositories, Redis, NATS ...): an empty stand-in. No
    // handler body runs in this spec: the guard answers first.
    .useMocker(() => ({}))
    .compile();
  const adapter = new FastifyAdapter();
  adapter.getInstance().addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) fastifyRoutes.push({ method: m, url: r.url });
  });
  const app = mod.createNestApplication<NestFastifyApplication>(adapter, { logger: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return { app, fastifyRoutes };
}

describe('every /admin route is behind @Admin(need) and AdminGuard', () => {
  let app: NestFastifyApplication;
  let routes: NestRoute[];
  let fastifyRoutes: { method: string; url: string }[];

  before(async () => {
    ({ app, fastifyRoutes } = await appOf(GATEWAY_CONTROLLERS as Type[]));
    routes = nestRoutes(app);
  });
  after(() => app?.close());

  it("walks Nest's route table and finds no /admin route without the decorator", () => {
    const admin = routes.filter((r) => r.path.startsWith('/admin'));
    assert.ok(admin.length >= 35, `expected the admin room's routes, found ${admin.length}`);
    assert.deepEqual(unguardedAdminRoutes(routes), []);
  });

  it('Fastify serves no /admin route that Nest does not know (nothing registered around the table)', () => {
    const known = new Set(routes.map((r) => `${r.method} ${r.path}`));
    const stray = fastifyRoutes
      .filter((r) => r.url.startsWith('/admin') && r.method !== 'HEAD')
      .map((r) => `${r.method} ${r.url}`)
      .filter((r) => !known.has(r));
    assert.deepEqual(stray, []);
  });

  it('answers 401 to every guarded /admin route without the admin token, API key or not', async () => {
    const guarded = routes.filter((r) => r.path.startsWith('/admin') && r.need !== 'sign-in');
    for (const r of guarded) {
      const url = r.path.replace(/:[^/]+/g, 'x');
      for (const headers of [{}, { authorization: 'Bearer sk-an-api-key' }]) {
        const res = await app.inject({ method: r.method as 'GET', url, headers });
        assert.equal(res.statusCode, 401, `${r.method} ${url} with ${JSON.stringify(headers)}: ${res.body}`);
        const code = (JSON.parse(res.body) as { error: { code: string } }).error.code;
        assert.ok(
          code === 'invalid_admin_token' || (r.need === 'signed-in' && code === 'session_expired'),
          `${r.method} ${url}: ${code}`,
        );
      }
    }
  });

  it('names the sign-in routes (the only ones the guard lets through unchecked)', () => {
    const open = routes.filter((r) => r.need === 'sign-in').map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(open.sort(), [
      'GET /admin/oidc',
      'GET /admin/oidc/callback',
      'GET /admin/oidc/start',
      'GET /admin/session',
      'POST /admin/session',
    ]);
  });

  it('fails on a controller under /admin that forgets the decorator', async () => {
    @Controller('admin/forgotten')
    class ForgottenController {
      @Get()
      list() {
        return [];
      }
    }
    const bad = await appOf([ForgottenController]);
    try {
      assert.deepEqual(unguardedAdminRoutes(nestRoutes(bad.app)), [
        'GET /admin/forgotten (ForgottenController.list)',
      ]);
    } finally {
      await bad.app.close();
    }
  });
});
