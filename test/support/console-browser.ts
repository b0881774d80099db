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

/**
 * What breaks a page's layout at its current width, for the elements under `scope` (a CSS selector;
 * visually hidden parts, `.sr-only` or clipped to 1 px, are skipped):
 * - `page overflows`: the document is wider than the viewport (the page scrolls sideways);
 * - `<tag.class> overflows: text`: an element's content is wider than its box;
 * - `split word: text`: a word (a run without spaces) laid out over more than one line although it
 *   would fit on one line of its block, e.g. a queue name or a button broken mid-word (unless
 *   `splitWords: false`); a word wider than its block (a long host name on a phone) must break;
 * - `small text: text`: chart text drawn under 12 px tall (an SVG scaled down to the screen);
 * - `column not under its heading: name`: a table's body cells not aligned with its head cells.
 */
export async function layoutProblems(
  page: Page,
  scope: string,
  opts: { splitWords?: boolean } = {},
): Promise<string[]> {
  return page.evaluate(
    `(${LAYOUT_PROBLEMS})(${JSON.stringify(scope)}, ${opts.splitWords !== false})`,
  ) as Promise<string[]>;
}

// Runs in the page (plain JavaScript: the tests are compiled without the DOM's types).
const LAYOUT_PROBLEMS = `(scope, splitWords) => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) problems.push('page overflows');
  // Visually hidden: .sr-only, or inside a box of at most 1 px (a clipped table head).
  const hidden = (el) => {
    for (let e = el; e; e = e.parentElement) {
      if (e.classList.contains('sr-only')) return true;
      const r = e.getBoundingClientRect();
      if (r.width <= 1 || r.height <= 1) return true;
    }
    return false;
  };
  const describe = (el) =>
    '<' + el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className.trim()
      ? '.' + el.className.trim().replace(/\\s+/g, '.') : '') + '>';
  for (const top of document.querySelectorAll(scope)) {
    if (hidden(top)) continue;
    for (const el of [top, ...top.querySelectorAll('*')]) {
      if (hidden(el) || !(el instanceof HTMLElement) || el.getClientRects().length === 0) continue;
      if (el.scrollWidth > el.clientWidth + 1 && (el.tagName === 'TD' || getComputedStyle(el).overflowX !== 'visible'))
        problems.push(describe(el) + ' overflows: ' + (el.textContent || '').slice(0, 40));
    }
    for (const table of [top, ...top.querySelectorAll('table')]) {
      if (table.tagName !== 'TABLE' || hidden(table)) continue;
      const head = table.querySelector('thead tr');
      const row = table.querySelector('tbody tr');
      if (!head || !row || hidden(head) || head.cells.length !== row.cells.length) continue;
      [...head.cells].forEach((th, i) => {
        const a = th.getBoundingClientRect();
        const b = row.cells[i].getBoundingClientRect();
        if (b.width > 0 && (Math.abs(a.left - b.left) > 1 || Math.abs(a.width - b.width) > 1))
          problems.push('column not under its heading: ' + (th.textContent || '').trim());
      });
    }
    const walker = document.createTreeWalker(top, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const parent = n.parentElement;
      if (!parent || hidden(parent) || parent.getClientRects().length === 0) continue;
      const inChart = Boolean(parent.closest('figure.chart'));
      for (const m of (n.textContent || '').matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const lines = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
        if (splitWords && lines.size > 1 && r.getBoundingClientRect().height > 0) {
          // Avoidable only when the word, laid out whole, fits the width of its block.
          let block = parent;
          while (block.parentElement && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
          const cs = getComputedStyle(block);
          const room = block.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
          const width = [...r.getClientRects()].reduce((sum, x) => sum + x.width, 0);
          if (width <= room) problems.push('split word: ' + m[0]);
        }
        const h = r.getBoundingClientRect().height;
        if (inChart && h > 0 && h < 12) problems.push('small text: ' + m[0] + ' (' + h.toFixed(1) + ' px)');
      }
    }
  }
  return problems;
}`;

/** Runs `check` with the page at phone width (390 px), then puts it back to 1280 px. */
export async function atPhoneWidth<T>(page: Page, check: () => Promise<T>): Promise<T> {
  await page.setViewportSize({ width: 390, height: 900 });
  try {
    return await check();
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
}
