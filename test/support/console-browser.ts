/**
 * Helpers of the operator console's browser tests: build the console into a temporary folder, sign
 * in, run axe-core on a page (no serious or critical violation) and screenshot it at 1280 and 390 px.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Builds apps/console with Vite into a new temporary folder (the gateway's CONSOLE_DIR). */
export async function buildConsole(): Promise<string> {
  const distDir = mkdtempSync(join(tmpdir(), 'infer-console-'));
  const { build } = await import('vite');
  await build({
    configFile: resolve(ROOT, 'apps/console/vite.config.ts'),
    root: resolve(ROOT, 'apps/console'),
    logLevel: 'warn',
    build: { outDir: distDir, emptyOutDir: true },
  });
  return distDir;
}

/** A new screenshot folder under var/<name>/<time>/ (printed by the caller). */
export function shotsDir(name: string): string {
  const dir = resolve(ROOT, 'var', name, new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(dir, { recursive: true });
  return dir;
}

export async function signIn(
  page: Page,
  url: string,
  who: { email: string; password: string },
): Promise<void> {
  await page.goto(`${url}/console/`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** axe-core on the page as it is: no serious or critical violation. */
export async function axe(page: Page, name: string): Promise<void> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const r = await (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }> };
      }
    ).axe.run();
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `${name}: ${JSON.stringify(bad)}`);
}

/** Screenshots at 1280 and 390 px wide into `dir`, each checked with axe first. */
export async function capture(page: Page, dir: string, name: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await axe(page, `${name} @${width}`);
    await page.screenshot({ path: join(dir, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
