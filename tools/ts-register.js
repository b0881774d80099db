// Registers the TypeScript loader for development, tests and the admin CLI:
//   node --conditions=source --import ./tools/ts-register.js app.ts
// Production runs the swc-built dist/ output and does not use this.
import { register } from 'node:module';

register('./ts-loader.js', import.meta.url);
