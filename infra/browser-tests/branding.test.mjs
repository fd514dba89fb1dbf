// The team's brand and the link token's language in headless Chromium, against the local stack
// this file starts: the widget and the portal show the team's display name, its uploaded logo
// (served by Wearlab itself) and its accent colour, the widget speaks the language the token
// was made with, and both branded page sets pass axe-core (WCAG 2.1 AA). Screenshots at 320,
// 390 and 1280 px. Run with `make browser`, or alone:
// `node --test --test-concurrency=1 --test-reporter=spec branding.test.mjs`.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { API_KEY, Stack } from './stack.mjs';
import {
  DEMOGRAPHICS, assertPageHeaders, axeViolations, launch, newPage as openPage, shotsAtWidths, texts,
} from './helpers.mjs';

const TEAM = 'Acme Health';
/** #0b5cad: 6.6:1 against white, so white text on it and links in it are readable. */
const ACCENT = '#0b5cad';
const ACCENT_RGB = 'rgb(11, 92, 173)';
/** A 1x1 PNG: the smallest image the logo upload accepts. */
const LOGO_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

let stack;
let browser;
const cspViolations = [];

before(async () => {
  stack = await Stack.start();
  browser = await launch();
  await stack.api('PUT', '/v2/team/branding', { display_name: TEAM, accent_color: ACCENT });
  const res = await fetch(`${stack.base}/v2/team/branding/logo`, {
    method: 'PUT',
    headers: { 'x-service-api-key': API_KEY, 'content-type': 'image/png' },
    body: LOGO_PNG,
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 200, await res.text());
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

const newPage = () => openPage(browser.context, cspViolations);

/** The branded header is shown with its name and a logo that loaded from this deployment. */
async function assertBranded(page, what) {
  const header = page.locator('header.brand');
  await header.waitFor();
  assert.match(await header.innerText(), new RegExp(TEAM), what);
  const logo = header.locator('img');
  const src = await logo.getAttribute('src');
  assert.match(src, /^\/v2\/link\/web\/brand\//, `${what}: the uploaded logo, served by Wearlab`);
  await page.waitForFunction(() => {
    const img = document.querySelector('header.brand img');
    return img && img.complete && img.naturalWidth > 0;
  });
  assert.equal(await logo.getAttribute('alt'), TEAM, what);
}

async function shots(page, name) {
  // Marks load lazily: scroll them all in before full-page screenshots.
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.waitForFunction(() => [...document.querySelectorAll('img.mark')].every((i) => i.complete && i.naturalWidth > 0));
  await page.evaluate(() => window.scrollTo(0, 0));
  await shotsAtWidths(page, `branding-${name}`);
}

describe('the widget', () => {
  test("shows the team's name, logo and accent, in the language the token was made with", async () => {
    const user = await stack.createUser('branding-widget');
    const token = await stack.linkToken({ user_id: user, language: 'es' });
    const page = await newPage();
    // The browser asks for English; the token's language wins.
    await page.setExtraHTTPHeaders({ 'accept-language': 'en-US,en;q=0.9' });
    const res = await page.goto(token.link_web_url);
    assertPageHeaders(res, 'the branded widget');
    assert.doesNotMatch(res.headers()['content-security-policy'], /unsafe-inline/);
    assert.equal(await page.getAttribute('html', 'lang'), 'es');
    const es = texts('es');
    assert.equal(await page.locator('h1').innerText(), es['widget.heading_team'].replace('{team}', TEAM));
    await assertBranded(page, 'widget');
    const button = page.locator('button').first();
    assert.equal(await button.evaluate((b) => getComputedStyle(b).backgroundColor), ACCENT_RGB);
    // The phone's health apps are connected in the team's app, named.
    const note = await page.locator('[data-provider="apple_health_kit"] .note').innerText();
    assert.equal(note, es['widget.phone.named'].replace(/\{name\}/g, 'Apple HealthKit').replace(/\{app\}/g, TEAM));
    assert.deepEqual(await axeViolations(page), [], 'axe-core on the branded widget');
    await shots(page, 'widget');

    // On to a provider's form: still branded, still Spanish.
    await page.goto(`${new URL(token.link_web_url).origin}/v2/link/web/provider/renpho?token=${token.link_token}`);
    await assertBranded(page, 'the password form');
    assert.equal(await page.getAttribute('html', 'lang'), 'es');
    assert.deepEqual(await axeViolations(page), [], 'axe-core on the branded form');
    await page.close();
  });
});

describe('the portal', () => {
  test("shows the team's name, logo and accent", async () => {
    const user = await stack.createUser('branding-portal');
    await stack.api('PATCH', `/v2/user/${user}/info`, DEMOGRAPHICS);
    const { url } = await stack.api('POST', `/v2/user/${user}/create_portal_url`, { context: 'launch' });
    const page = await newPage();
    const res = await page.goto(url);
    assertPageHeaders(res, 'the branded portal');
    await assertBranded(page, 'portal');
    assert.deepEqual(await axeViolations(page), [], 'axe-core on the branded portal');
    await shots(page, 'portal');
    await page.close();
  });
});

test('no branded page broke its Content-Security-Policy', () => {
  assert.deepEqual(cspViolations, []);
});
