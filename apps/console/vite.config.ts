// Vite config of the operator console. `npm run dev -w @infer/console` serves it with hot reload on
// http://127.0.0.1:5173/console/ and proxies /admin and /v1 to the gateway (CONSOLE_GATEWAY_URL,
// default http://127.0.0.1:8080), so cookies stay same-origin. `vite build` writes dist/, which the
// gateway serves at /console/ (apps/gateway/src/console/serve-console.ts).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const gateway = process.env.CONSOLE_GATEWAY_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  base: '/console/',
  plugins: [react()],
  // @infer/contracts is TypeScript source in this monorepo (its "source" export condition).
  resolve: { conditions: ['source', 'browser', 'module', 'import', 'default'] },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1024 },
  server: {
    host: '127.0.0.1',
    port: 5173,
    proxy: { '/admin': gateway, '/v1': gateway },
  },
});
