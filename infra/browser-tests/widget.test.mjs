// The link widget in headless Chromium against the local stack this file starts: search (with
// and without script), groups, the team's pinned order and hidden providers, one row per
// versioned twin, discontinued services, marks served by Wearlab, the five languages,
// accessibility (axe-core, WCAG 2.1 AA; a keyboard-only password link), screenshots at 320,
// 390 and 1280 px, and the first page's size and render time on a throttled CPU. Run with
// `make browser`, or alone: `node --test --test-concurrency=1 --test-reporter=spec widget.test.mjs`.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Stack } from './stack.mjs';
import { assertPageHeaders, axeViolations, launch, newPage as openPage, shot, texts } from './helpers.mjs';

const LANGUAGES = ['en', 'es', 'de', 'fr', 'pt'];
/** The bound on the first page, marks and script included (the budget). */
const FIRST_PAGE_BUDGET_BYTES = 60 * 1024;

let stack;
let browser;
let context;
const cspViolations = [];

const newPage = () => openPage(context, cspViolations);

before(async () => {
  stack = await Stack.start();
  browser = await launch();
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A fresh link page address for a new user (`body` adds to the token request). */
async function linkUrl(name, body = {}) {
  const user = await stack.createUser(`widget-${name}`);
  const token = await stack.linkToken({ user_id: user, ...body });
  return [token.link_web_url, user];
}

/** The slugs of the rows a user sees (not hidden by a search), in page order. */
async function visibleRows(page) {
  return page.$$eval('li[data-search]:not([hidden]) [data-provider]', (els) =>
    els.filter((e) => e.offsetParent !== null).map((e) => e.dataset.provider));
}

/** Scrolls through the page so every lazily loaded mark is in, then back to the top. */
async function loadAllMarks(page) {
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await page.waitForFunction(() => [...document.querySelectorAll('img.mark')].every((i) => i.complete && i.naturalWidth > 0));
  await page.evaluate(() => window.scrollTo(0, 0));
}

async function groupHeadings(page) {
  return page.$$eval('section.group:not([hidden]) h2', (hs) => hs.map((h) => h.textContent));
}

describe('the provider list', () => {
  test('groups in order, one row per twin, discontinued services point to Google Health, marks load', async () => {
    const [url] = await linkUrl('list');
    const page = await newPage();
    const res = await page.goto(url);
    assert.equal(res.status(), 200);
    assertPageHeaders(res, 'list');
    assert.match(res.headers()['content-security-policy'], /script-src 'self';/);
    const en = texts('en');
    assert.deepEqual(await groupHeadings(page), ['devices', 'fitness', 'glucose', 'body', 'phone'].map((g) => en[`widget.group.${g}`]));
    const rows = await visibleRows(page);
    // The most used first within a group (the catalog's default order).
    assert.deepEqual(rows.slice(0, 3), ['garmin', 'google_health', 'oura']);
    // One row per thing a user recognises: WHOOP's OAuth API needs the team's own app (none
    // here), so the password variant is the one shown; never both.
    for (const family of [['whoop', 'whoop_v2'], ['dexcom', 'dexcom_v3'], ['my_fitness_pal', 'my_fitness_pal_v2']]) {
      assert.equal(rows.filter((r) => family.includes(r)).length, 1, family.join('/'));
    }
    assert.ok(rows.includes('whoop') && !rows.includes('whoop_v2'));
    assert.equal(new Set(rows).size, rows.length, 'no row twice');
    // Discontinued: said so, and a link to the successor instead of a link to connect.
    for (const slug of ['fitbit', 'google_fit']) {
      const row = page.locator(`[data-provider="${slug}"]`);
      assert.equal(await row.evaluate((e) => e.tagName), 'DIV', `${slug} is not a link`);
      assert.match(await row.innerText(), new RegExp(en['widget.discontinued']));
      const next = row.getByRole('link', { name: 'Connect Google Health instead' });
      assert.match(await next.getAttribute('href'), /\/v2\/link\/web\/oauth\/google_health\?token=/);
    }
    // Phone health apps: where the connection happens, not a dead end.
    for (const slug of ['apple_health_kit', 'health_connect', 'samsung_health']) {
      assert.match(await page.locator(`[data-provider="${slug}"]`).innerText(), /connected in the app that sent you here/);
    }
    // Every mark is Wearlab's own and loads (lazily: scrolled into view).
    await loadAllMarks(page);
    const marks = await page.$$eval('img.mark', (imgs) => imgs.map((i) => ({ src: i.src, w: i.naturalWidth })));
    assert.ok(marks.length >= rows.length);
    for (const m of marks) {
      assert.equal(new URL(m.src).origin, stack.base, m.src);
      assert.ok(m.w > 0, `${m.src} did not load`);
    }
    await page.close();
  });

  test('every catalog logo is served by the deployment as an SVG, cached', async () => {
    const catalog = await stack.api('GET', '/v2/providers');
    assert.ok(catalog.length > 30);
    for (const p of catalog) {
      assert.equal(p.logo, `${stack.base}/v2/link/web/marks/${p.slug}.svg`);
      const res = await fetch(p.logo, { signal: AbortSignal.timeout(15_000) });
      assert.equal(res.status, 200, p.logo);
      assert.equal(res.headers.get('content-type'), 'image/svg+xml', p.logo);
      assert.match(res.headers.get('cache-control'), /^public, max-age=\d+/);
      assert.match(await res.text(), /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    }
    const missing = await fetch(`${stack.base}/v2/link/web/marks/myspace.svg`, { signal: AbortSignal.timeout(15_000) });
    assert.equal(missing.status, 404);
  });
});

describe('search', () => {
  const cases = [
    ['Oura', ['oura']],
    ['apple watch', ['apple_health_kit']],
    ['KAROO', ['hammerhead']],
    ['Galaxy Watch', ['samsung_health']],
    ['fitbit', ['google_health', 'fitbit']],
    ['garmín', ['garmin']],
  ];

  test('filters as the user types, by name and alias, case and accents aside', async () => {
    const [url] = await linkUrl('search-live');
    const page = await newPage();
    await page.goto(url);
    const box = page.getByRole('searchbox', { name: texts('en')['widget.search.label'] });
    for (const [query, expected] of cases) {
      await box.fill(query);
      await page.waitForFunction((want) => {
        const shown = [...document.querySelectorAll('li[data-search]:not([hidden]) [data-provider]')].map((e) => e.dataset.provider);
        return shown.length === want.length && want.every((w) => shown.includes(w));
      }, expected);
      assert.deepEqual((await visibleRows(page)).sort(), [...expected].sort(), query);
      assert.equal(await page.locator('#search-status').innerText(), `Providers found: ${expected.length}`);
    }
    await box.fill('carrier pigeon');
    await page.waitForFunction(() => document.querySelectorAll('li[data-search]:not([hidden])').length === 0);
    assert.match(await page.locator('#search-status').innerText(), /Nothing matches “carrier pigeon”/);
    assert.equal(await page.locator('section.group:not([hidden])').count(), 0, 'empty groups are hidden');
    await box.fill('');
    await page.waitForFunction(() => document.querySelectorAll('li[data-search][hidden]').length === 0);
    await shot(page, 'widget-search-cleared');
    await page.close();
  });

  test('works without script: the search form is a GET the server answers filtered', async () => {
    const [url] = await linkUrl('search-noscript');
    const noScript = await launch({ javaScriptEnabled: false });
    try {
      const page = await openPage(noScript.context, cspViolations);
      await page.goto(url);
      for (const [query, expected] of cases) {
        const box = page.getByRole('searchbox');
        await box.fill(query);
        await Promise.all([page.waitForURL(/[?&]q=/), box.press('Enter')]);
        assert.equal(new URL(page.url()).searchParams.get('q'), query);
        assert.deepEqual((await visibleRows(page)).sort(), [...expected].sort(), query);
        assert.equal(await page.getByRole('searchbox').inputValue(), query, 'the query stays in the box');
      }
      await shot(page, 'widget-search-noscript');
      // The way back to the whole list, and on to a provider, still without script.
      await Promise.all([page.waitForURL((u) => !u.searchParams.has('q')), page.getByRole('link', { name: 'Show all providers' }).click()]);
      assert.ok((await visibleRows(page)).length > 20);
      await Promise.all([page.waitForURL(/provider\/peloton/), page.getByRole('link', { name: /Peloton/ }).click()]);
      await page.getByLabel('Peloton username or email').waitFor();
      await page.close();
    } finally {
      await noScript.close();
    }
  });
});

describe("the team's order and hidden providers", () => {
  test('pinned providers come first, hidden ones are never offered', async () => {
    const [url] = await linkUrl('pinned');
    await stack.api('PATCH', '/v2/team/link_config', {
      provider_order: ['withings', 'oura', 'whoop'],
      hidden_providers: ['garmin', 'strava'],
    });
    try {
      const page = await newPage();
      await page.goto(url);
      const en = texts('en');
      const groups = await groupHeadings(page);
      // The group of the first pinned provider first, then that of the next.
      assert.deepEqual(groups.slice(0, 2), [en['widget.group.body'], en['widget.group.devices']]);
      const rows = await visibleRows(page);
      assert.equal(rows[0], 'withings');
      assert.deepEqual(rows.filter((r) => ['oura', 'whoop'].includes(r)), ['oura', 'whoop']);
      const devices = await page.$$eval('section[aria-labelledby="group-devices"] [data-provider]', (els) => els.map((e) => e.dataset.provider));
      assert.deepEqual(devices.slice(0, 2), ['oura', 'whoop'], 'the pinned devices head their group, in the pinned order');
      assert.ok(!rows.includes('garmin') && !rows.includes('strava'), 'hidden providers are not listed');
      await shot(page, 'widget-pinned');
      const token = new URL(url).searchParams.get('token');
      const direct = await page.goto(`${stack.base}/v2/link/web/provider/garmin?token=${encodeURIComponent(token)}`);
      assert.equal(direct.status(), 404, 'a hidden provider cannot be opened by its address');
      await page.close();
    } finally {
      await stack.api('PATCH', '/v2/team/link_config', { provider_order: [], hidden_providers: [] });
    }
  });

  test("the token's filter_on_providers still applies", async () => {
    const [url] = await linkUrl('filtered', { filter_on_providers: ['oura', 'whoop', 'whoop_v2', 'fitbit'] });
    const page = await newPage();
    await page.goto(url);
    assert.deepEqual(await visibleRows(page), ['oura', 'whoop', 'fitbit']);
    await page.close();
  });
});

describe('languages', () => {
  for (const lang of LANGUAGES) {
    test(`${lang}: by the lang parameter and by Accept-Language`, async () => {
      const t = texts(lang);
      const [url] = await linkUrl(`lang-${lang}`);
      const page = await newPage();
      await page.goto(`${url}&lang=${lang}`);
      assert.equal(await page.getAttribute('html', 'lang'), lang);
      await page.getByRole('heading', { level: 1, name: t['widget.title'] }).waitFor();
      await page.getByRole('heading', { level: 2, name: t['widget.group.phone'] }).waitFor();
      assert.match(await page.getByRole('link', { name: /Oura/ }).innerText(), new RegExp(t['widget.auth.oauth']));
      // The choice carries on to the provider's page.
      await Promise.all([page.waitForURL(/provider\/peloton/), page.getByRole('link', { name: /Peloton/ }).click()]);
      assert.match(page.url(), new RegExp(`[?&]lang=${lang}`));
      await page.getByLabel(t['widget.password.username'].replace('{name}', 'Peloton')).waitFor();
      if (lang !== 'en') await shot(page, `widget-password-${lang}`);
      await page.close();

      const browserPage = await newPage();
      await browserPage.setExtraHTTPHeaders({ 'Accept-Language': `${lang}-XX;q=0.9, zz;q=0.8` });
      await browserPage.goto(url);
      assert.equal(await browserPage.getAttribute('html', 'lang'), lang);
      await browserPage.getByRole('heading', { level: 1, name: t['widget.title'] }).waitFor();
      await loadAllMarks(browserPage);
      await shot(browserPage, `widget-list-${lang}`);
      await browserPage.close();
    });
  }

  test('an expired link is refused in the browser language', async () => {
    const [url] = await linkUrl('lang-expired');
    await stack.advanceClock(61 * 60);
    const page = await newPage();
    await page.setExtraHTTPHeaders({ 'Accept-Language': 'de-DE,de;q=0.9' });
    const res = await page.goto(url);
    assert.equal(res.status(), 410);
    await page.getByRole('heading', { name: texts('de')['widget.refused.expired_title'] }).waitFor();
    await page.close();
  });
});

describe('accessibility', () => {
  test('axe-core finds no WCAG 2.1 AA violation on the list, a password form and an error', async () => {
    const [url] = await linkUrl('axe');
    const page = await newPage();
    await page.goto(url);
    assert.deepEqual(await axeViolations(page), [], 'list');
    await page.getByRole('searchbox').fill('karoo');
    await page.waitForFunction(() => document.querySelectorAll('li[data-search]:not([hidden])').length === 1);
    assert.deepEqual(await axeViolations(page), [], 'list while searching');
    await page.goto(url);
    await Promise.all([page.waitForURL(/provider\/peloton/), page.getByRole('link', { name: /Peloton/ }).click()]);
    assert.deepEqual(await axeViolations(page), [], 'password form');
    await page.getByLabel('Peloton username or email').fill('jane');
    await page.getByLabel('Password').fill('wrong-password');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Connect' }).click()]);
    await page.getByRole('alert').waitFor();
    assert.deepEqual(await axeViolations(page), [], 'error state');
    await page.goto(`${url}&lang=fr`);
    assert.deepEqual(await axeViolations(page), [], 'list in French');
    await page.close();
  });

  test('a password link completed with the keyboard alone (Tab, Enter and typing)', async () => {
    const redirect = `${stack.base}/local/landing`;
    const [url, user] = await linkUrl('keyboard', { redirect_url: redirect });
    const page = await newPage();
    await page.goto(url);
    let reached = false;
    for (let i = 0; i < 80 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.dataset.provider === 'peloton');
    }
    assert.ok(reached, 'Tab reaches Peloton');
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none');
    await Promise.all([page.waitForURL(/provider\/peloton/), page.keyboard.press('Enter')]);
    // The username field has the focus on arrival.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'username');
    await page.keyboard.type('jane');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'password');
    await page.keyboard.type('correct horse');
    await Promise.all([page.waitForURL(/\/local\/landing\?/), page.keyboard.press('Enter')]);
    const landed = new URL(page.url());
    assert.equal(landed.searchParams.get('state'), 'success');
    assert.equal(landed.searchParams.get('provider'), 'peloton');
    const connections = await stack.api('GET', `/v2/user/providers/${user}`);
    assert.deepEqual(connections.providers.map((p) => p.slug), ['peloton']);
    await page.close();
  });
});

describe('on every screen', () => {
  test('screenshots at 320, 390 and 1280 px, nothing wider than the screen', async () => {
    const [url] = await linkUrl('screens');
    const page = await newPage();
    for (const width of [320, 390, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      await page.goto(url);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${width} px: ${overflow} px wider than the screen`);
      await loadAllMarks(page);
      await shot(page, `widget-list-${width}`);
      await page.goto(url.replace('/v2/link/web?', '/v2/link/web/provider/dexcom?'));
      await shot(page, `widget-password-region-${width}`);
    }
    await page.close();
  });

  test('the first page is under 60 KB transferred and its render time on a 4x slower CPU is recorded', async () => {
    const [url] = await linkUrl('size');
    const page = await newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    const transferred = new Map();
    cdp.on('Network.responseReceived', (e) => transferred.set(e.requestId, { url: e.response.url, bytes: 0 }));
    cdp.on('Network.loadingFinished', (e) => {
      const r = transferred.get(e.requestId);
      if (r) r.bytes = e.encodedDataLength;
    });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForLoadState('networkidle');
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const paint = performance.getEntriesByName('first-contentful-paint')[0];
      return { ttfb: nav.responseStart, fcp: paint?.startTime ?? null, domContentLoaded: nav.domContentLoadedEventEnd, load: nav.loadEventEnd };
    });
    const all = [...transferred.values()];
    const total = all.reduce((n, r) => n + r.bytes, 0);
    const kind = (u) => (u.includes('/marks/') ? 'marks' : u.endsWith('.js') ? 'script' : 'html');
    const by = {};
    for (const r of all) by[kind(r.url)] = (by[kind(r.url)] ?? 0) + r.bytes;
    console.log(`widget first page: ${all.length} requests, ${total} bytes transferred (${JSON.stringify(by)}); ` +
      `CPU x4: first byte ${timing.ttfb.toFixed(0)} ms, first contentful paint ${timing.fcp?.toFixed(0)} ms, DOMContentLoaded ${timing.domContentLoaded.toFixed(0)} ms, load ${timing.load.toFixed(0)} ms`);
    assert.ok(total < FIRST_PAGE_BUDGET_BYTES, `${total} bytes is over the ${FIRST_PAGE_BUDGET_BYTES} budget`);
    assert.ok(by.marks > 0 && by.script > 0, 'marks and script are counted');
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
    await cdp.detach();
    await page.close();
  });
});

test('no page broke its Content-Security-Policy', () => {
  assert.deepEqual(cspViolations, []);
});
