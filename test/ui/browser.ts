// A real browser for the UI tests: playwright-core driving Debian's Chromium (never a downloaded
// one), with every console error, page error and CSP violation of a page collected, and
// screenshots saved under test-results/ui/.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './ui-build.js';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = join(ROOT, 'test-results', 'ui');

/** The flags of issue 16: no sandbox (root in CI), no GPU, and nothing that reaches the network by itself. */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
}

export interface WatchedPage {
  page: Page;
  /** Console errors, uncaught page errors and CSP violations seen so far. */
  problems: string[];
  shot(name: string): Promise<void>;
}

export async function watchedPage(browser: Browser): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 860 }, acceptDownloads: true });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // The report event fires even where the console message would be folded or filtered.
  await page.exposeFunction('__svcCspViolation', (what: string) => problems.push(`CSP violation: ${what}`));
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => window.__svcCspViolation(e.violatedDirective + ' ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber + ':' + e.columnNumber + ' on ' + location.hash + ' ' + (e.sample || '')));",
  );
  page.on('dialog', (d) => void d.accept());
  mkdirSync(SCREENSHOTS, { recursive: true });
  return { page, problems, shot: async (name) => void (await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })) };
}
