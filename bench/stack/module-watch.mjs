// Preloaded by bench/gateway-rss.ts --modules (node --import): prints each module of Prisma's client
// (the generated client, its runtime, the query compiler) to stderr the first time it loads, as
// `module-watch: <path>`. Synchronous hooks (module.registerHooks): import and require alike.
import { registerHooks } from 'node:module';

const WATCHED =
  /\/generated\/prisma\/client\.|@prisma\/client\/runtime\/|@prisma\/client-runtime-utils\/|query_compiler/;
const seen = new Set();
registerHooks({
  load(url, context, next) {
    if (WATCHED.test(url) && !seen.has(url)) {
      seen.add(url);
      process.stderr.write(
        `module-watch: ${url.replace(/^.*node_modules\//, '').replace(/^.*\/libs\//, 'libs/')}\n`,
      );
    }
    return next(url, context);
  },
});
