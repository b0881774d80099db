/**
 * Debian's Chromium for the browser tests, driven by playwright-core (never a browser download;
 * scripts/test.sh installs the `chromium` package when it is missing). The flags keep it headless and
 * quiet on a machine without network (no background requests, no component updates, no first run).
 */
import { existsSync } from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The skip reason for a browser test on a machine without Chromium, or false. */
export const noChromium: string | false = !existsSync(CHROMIUM) && `no Chromium at ${CHROMIUM}`;

/** Launch options for playwright-core's `chromium.launch()` / `launchPersistentContext()`. */
export const chromiumOptions = {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--no-sandbox',
    '--headless',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
    '--disable-sync',
  ],
};
