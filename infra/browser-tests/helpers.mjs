// What the browser test files share: the headless Chromium every file drives (only 127.0.0.1
// is reached), screenshots in target/browser-tests/, and the hosted pages' header checks.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

import { REPO } from './stack.mjs';

export const SHOTS = join(REPO, 'target', 'browser-tests');
export const STEP_TIMEOUT_MS = 15_000;
export const PHONE = { width: 390, height: 844 };

/** A persistent headless Chromium context whose every request off 127.0.0.1 is aborted;
 *  `close()` closes it and removes its profile. */
export async function launch(options = {}) {
  mkdirSync(SHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'wearlab-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: PHONE,
    timeout: 60_000,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
    ...options,
  });
  await context.route('**/*', (route) =>
    new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort());
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A full-page screenshot in target/browser-tests/. */
export async function shot(page, name) {
  const file = join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  assert.ok(statSync(file).size > 0, `${file} is empty`);
}

/** A page of `context` with the steps' time bound, collecting CSP violations into `violations`. */
export async function newPage(context, violations) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS);
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  return page;
}

/** The headers every hosted page answer carries. */
export function assertPageHeaders(res, what) {
  const h = res.headers();
  assert.match(h['content-security-policy'] ?? '', /default-src 'none'/, what);
  assert.match(h['content-security-policy'], /frame-ancestors 'none'/, what);
  assert.equal(h['x-frame-options'], 'DENY', what);
  assert.equal(h['referrer-policy'], 'no-referrer', what);
  assert.equal(h['x-content-type-options'], 'nosniff', what);
  assert.equal(h['cache-control'], 'no-store', what);
}

const AXE = readFileSync(new URL('./node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');

/** axe-core's run of the page as it is now, WCAG 2.0/2.1 A and AA: its violations as lines
 *  (none expected) and how many rules passed (more than none: axe ran). */
export async function axeRun(page) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() =>
    globalThis.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }));
  const violations =
    result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  return { violations, passes: result.passes.length };
}

/** axe-core's WCAG 2.0/2.1 A and AA violations of the page as it is now (none expected). */
export async function axeViolations(page) {
  return (await axeRun(page)).violations;
}

/** The screen widths every page is photographed at. */
export const WIDTHS = [320, 390, 1280];

/** Full-page screenshots `<name>-<width>.png` at each of WIDTHS, none scrolling sideways; the
 *  viewport is the phone's again afterwards. */
export async function shotsAtWidths(page, name) {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    await shot(page, `${name}-${width}`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${name} at ${width} px scrolls sideways by ${overflow} px`);
  }
  await page.setViewportSize(PHONE);
}

/** The demographics the tests' users are given (the portal needs them). */
export const DEMOGRAPHICS = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada@example.com',
  phone_number: '+1 (212) 555-0100',
  gender: 'female',
  dob: '1985-04-12',
  address: { first_line: '350 5th Ave', city: 'New York', state: 'NY', zip_code: '10118', country: 'US' },
};

/** The texts of a hosted pages' catalogue (`shared/web/locales/<lang>.txt`), by key. */
export function texts(lang) {
  const src = readFileSync(join(REPO, 'shared', 'web', 'locales', `${lang}.txt`), 'utf8');
  const out = {};
  for (const line of src.split('\n')) {
    const l = line.trim();
    const at = l.indexOf(' = ');
    if (!l || l.startsWith('#') || at < 0) continue;
    out[l.slice(0, at).trim()] = l.slice(at + 3).trim();
  }
  return out;
}
