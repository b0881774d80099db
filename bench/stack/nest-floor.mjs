// The floor of bench/gateway-rss.ts's idle figure: a NestJS application on Fastify with one controller
// (GET /hello) and nothing else, the framework the gateway is built on (NestJS on Fastify).
// The gateway's own idle collection (libs/runtime memory.ts: a "last resort" major collection after
// start-up's first idle interval, 10 s) is made the same way here, so the two idle figures compare.
// A test double, not an app of the platform. Port 0; prints `listening <port>`.
import 'reflect-metadata';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';

class HelloController {
  hello() {
    return { ok: true };
  }
}
Get('/hello')(
  HelloController.prototype,
  'hello',
  Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello'),
);
Controller()(HelloController);

class AppModule {}
Module({ controllers: [HelloController] })(AppModule);

const app = await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false });
await app.listen(0, '127.0.0.1');
console.log(`listening ${app.getHttpServer().address().port}`);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
setTimeout(() => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }), 10_000).unref();

// Stops by itself: when the parent goes away (stdin closes) or on SIGTERM.
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
