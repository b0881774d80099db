// Registers the TypeScript loader for development, tests and the admin CLI:
//   node --conditions=source --import ./tools/ts-register.js app.ts
// Production runs the swc-built dist/ output and does not use this.
// module.registerHooks (Node >= 22.15) runs the hooks synchronously on the main thread: no loader
// worker thread, and no deprecation warning (module.register() is deprecated since Node 26).
import { registerHooks } from 'node:module';
import { load, resolve } from './ts-loader.js';

registerHooks({ resolve, load });
