// The user portal in a real browser: headless Debian Chromium (/usr/bin/chromium) driven by
// playwright-core, against the local stack this file starts. Run with `make browser`.
//
// An order is taken to its results by moving the stack's clock (the simulated lab reports three
// days after a walk-in order). Checked here: the timeline and the results, statuses in the five
// languages (by the `lang` parameter and by `Accept-Language`), axe-core at WCAG 2.1 AA on the
// portal's pages, the identity check from the keyboard alone, and every flow without script.
// Only 127.0.0.1 is reached. Screenshots at 320, 390 and 1280 px go to target/browser-tests/.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

import { Stack } from './stack.mjs';
import { DEMOGRAPHICS, SHOTS, axeRun, newPage as openPage, shotsAtWidths } from './helpers.mjs';


let stack;
let browser;
const cspViolations = [];

const demographics = DEMOGRAPHICS;

/** Each language's words for a just-placed walk-in order and for one with its results. */
const WORDS = {
  en: { hello: 'Hello Ada', ordered: 'Ordered', ready: 'Results ready', results: 'Results' },
  es: { hello: 'Hola, Ada', ordered: 'Pedido realizado', ready: 'Resultados listos', results: 'Resultados' },
  de: { hello: 'Hallo Ada', ordered: 'Bestellt', ready: 'Ergebnisse da', results: 'Ergebnisse' },
  fr: { hello: 'Bonjour Ada', ordered: 'Prescrite', ready: 'Résultats disponibles', results: 'Résultats' },
  pt: { hello: 'Olá, Ada', ordered: 'Pedido feito', ready: 'Resultados prontos', results: 'Resultados' },
};

/** The accessible name of a results row starts with its marker's name, then a space. */
function rowName(marker) {
  return new RegExp(`^${marker.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\s`);
}

/** A fresh browser context (its own cookies), with `options` (javaScriptEnabled, headers). */
async function newContext(options = {}) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, ...options });
  await context.route('**/*', (route) =>
    new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort());
  return context;
}

function newPage(context) {
  return openPage(context, cspViolations);
}

const shots = shotsAtWidths;

/** axe-core on the page as shown: no violation of WCAG 2.0/2.1 A and AA. */
async function assertAccessible(page, what) {
  const { violations, passes } = await axeRun(page);
  assert.deepEqual(violations, [], `${what}: axe-core violations`);
  assert.ok(passes > 0, `${what}: axe-core ran`);
}

/** A user with demographics and `count` walk-in orders of the essential panel: [userId, orders]. */
async function userWithOrders(clientUserId, count = 1) {
  const user = await stack.createUser(clientUserId);
  await stack.api('PATCH', `/v2/user/${user}/info`, demographics);
  const tests = await stack.api('GET', '/v3/lab_test?lab_test_limit=100');
  const panel = tests.data.find((t) => t.slug === 'meridian_essential_health');
  assert.ok(panel, 'the reference data has the Meridian essential panel');
  const orders = [];
  for (let i = 0; i < count; i += 1) {
    const placed = await stack.api('POST', '/v3/order', {
      user_id: user,
      patient_details: {
        first_name: 'Ada', last_name: 'Lovelace', dob: '1985-04-12', gender: 'female',
        phone_number: '+12125550100', email: 'ada@example.com',
      },
      patient_address: { first_line: '1 Main St', city: 'New York', state: 'NY', zip: '10001', country: 'US' },
      order_set: { lab_test_ids: [panel.id] },
    });
    orders.push(placed.order);
  }
  return [user, orders];
}

async function portalUrl(user, body) {
  return (await stack.api('POST', `/v2/user/${user}/create_portal_url`, body)).url;
}

/** The one-time code the stack emitted last for `user` (the team delivers it by email or SMS). */
async function lastCode(user) {
  const events = (await stack.events('user.portal.verification_requested')).filter((e) => e.user_id === user);
  assert.ok(events.length > 0, 'a code was emitted');
  return events[events.length - 1].data.code;
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  stack = await Stack.start();
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    timeout: 60_000,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
  });
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('user portal', () => {
  let user;
  let order;
  let withResults;

  test('a new order: its status in words in each language, by lang and by Accept-Language', async () => {
    [user, [order]] = await userWithOrders('browser-portal-languages');
    const url = await portalUrl(user, { context: 'launch' });
    const context = await newContext();
    const page = await newPage(context);
    for (const [lang, words] of Object.entries(WORDS)) {
      const res = await page.goto(`${url}&lang=${lang}`);
      assert.equal(res.status(), 200, lang);
      assert.equal(await page.getAttribute('html', 'lang'), lang);
      await page.getByRole('heading', { name: words.hello }).waitFor();
      const card = page.locator(`#order-${order.id}`);
      assert.equal(await card.locator('dd .stage').innerText(), words.ordered, `${lang}: the status in words`);
      assert.doesNotMatch(await card.innerText(), /received\.walk_in_test/, `${lang}: no status code shown`);
      assert.equal(await card.getAttribute('data-status'), order.status, 'the code kept for support');
      const details = await card.locator('a.button').getAttribute('href');
      assert.match(details, new RegExp(`[?&]lang=${lang}$`), `${lang}: the portal's links keep the language`);
    }
    await page.goto(`${url}&lang=es`);
    await shots(page, 'portal-orders-es');
    await context.close();

    for (const [lang, words] of Object.entries(WORDS)) {
      const browserIn = await newContext({ locale: lang, extraHTTPHeaders: { 'accept-language': `${lang};q=0.9, en;q=0.5` } });
      const p = await newPage(browserIn);
      await p.goto(url);
      assert.equal(await p.getAttribute('html', 'lang'), lang, `Accept-Language ${lang}`);
      await p.getByRole('heading', { name: words.hello }).waitFor();
      assert.equal(await p.locator(`#order-${order.id} dd .stage`).innerText(), words.ordered);
      const details = await p.locator(`#order-${order.id} a.button`).getAttribute('href');
      assert.doesNotMatch(details, /lang=/, 'no explicit language to keep');
      await browserIn.close();
    }
  });

  test('an order with results: its timeline, results read with their flags, accessible', async () => {
    const [resultsUser, orders] = await userWithOrders('browser-portal-results', 3);
    await stack.advanceClock(3 * 24 * 3600 + 120);
    // The simulated lab puts about one numeric result in seven out of range: of three orders of
    // some forty results each, take one with a result above its range.
    for (const o of orders) {
      const r = await stack.api('GET', `/v3/order/${o.id}/result`);
      const high = r.results.find((x) => x.is_above_max_range === true);
      if (high) { withResults = { order: o, high }; break; }
    }
    assert.ok(withResults, 'an order has a result above its range');
    const context = await newContext();
    const page = await newPage(context);
    const home = await portalUrl(resultsUser, { context: 'launch' });
    await page.goto(home);
    await page.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await assertAccessible(page, 'portal home');
    await shots(page, 'portal-home-results');
    await Promise.all([
      page.waitForURL(new RegExp(`/v3/portal/orders/${withResults.order.id}\\?token=`)),
      page.locator(`#order-${withResults.order.id} a.button`).click(),
    ]);

    // The timeline: an ordered list, oldest first, the current step marked for screen readers.
    const steps = page.getByRole('list', { name: 'Progress of your order' }).getByRole('listitem');
    assert.deepEqual(
      (await steps.locator('.stage').allInnerTexts()),
      ['Ordered', 'Requisition ready', 'Ready for your visit to a draw site', 'Some results ready', 'Results ready'],
    );
    const current = page.locator('ol.timeline [aria-current="step"]');
    assert.equal(await current.count(), 1);
    assert.match(await current.innerText(), /^Results ready/);
    assert.match(await steps.first().innerText(), /[A-Z][a-z]+ \d{1,2}, \d{4}/, 'a date in words');

    // The results: one row per marker, its value, unit, range and reading in words.
    const table = page.getByRole('table', { name: 'Results' });
    const row = table.getByRole('row', { name: rowName(withResults.high.name) });
    const cells = await row.locator('th, td').allInnerTexts();
    assert.equal(cells[0], withResults.high.name);
    const [shown, reading] = cells[1].split('\n');
    assert.ok(shown.endsWith(withResults.high.unit ?? ''), `the value and its unit: ${shown}`);
    assert.match(reading, /High: above the range/, 'the flag in words under the value, not colour alone');
    assert.match(cells[2], / to /, 'the reference range');
    assert.ok((await table.getByText('In range').count()) > 0, 'results in range say so');
    assert.ok(await page.getByRole('link', { name: 'Requisition form (PDF)' }).isVisible());
    assert.ok((await page.locator('#psc-list li').count()) > 0, 'the nearest draw sites');
    await assertAccessible(page, 'order with results');
    await shots(page, 'portal-order-results');

    // The same order in German: the status, the flag and the decimals the German way.
    await page.goto(`${page.url()}&lang=de`);
    await page.getByRole('heading', { name: 'Ergebnisse', exact: true }).waitFor();
    assert.match(await page.locator('ol.timeline [aria-current="step"]').innerText(), /^Ergebnisse da/);
    const deRow = page.getByRole('row', { name: rowName(withResults.high.name) });
    assert.match(await deRow.innerText(), /Hoch: über dem Bereich/);
    const value = withResults.high.result;
    if (value.includes('.')) assert.match(await deRow.innerText(), new RegExp(value.replace('.', ',')));
    await shots(page, 'portal-order-results-de');
    await context.close();
  });

  test('the identity check, from the keyboard alone, accessible', async () => {
    const url = await portalUrl(user, { context: 'communications' });
    const context = await newContext();
    const page = await newPage(context);
    await page.goto(url);
    await page.getByRole('heading', { name: "Confirm it's you" }).waitFor();
    await assertAccessible(page, 'identity check');
    await shots(page, 'portal-verify-start');

    // Tab to the chosen channel, then to the button; Enter sends the code. Bounded.
    const sendButton = page.getByRole('button', { name: 'Send code' });
    for (let i = 0; i < 10 && !(await sendButton.evaluate((b) => b === document.activeElement)); i += 1) {
      await page.keyboard.press('Tab');
    }
    assert.ok(await sendButton.evaluate((b) => b === document.activeElement), 'Tab reaches "Send code"');
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none', 'focus is visible');
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
    assert.ok(await page.getByLabel('Code').evaluate((i) => i === document.activeElement), 'the code field has focus');
    await assertAccessible(page, 'code entry');

    // A wrong code first: the error is announced and tied to the field.
    await page.keyboard.type('000000');
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    await page.getByRole('alert').filter({ hasText: 'That code is not right' }).waitFor();
    assert.equal(await page.getByLabel('Code').getAttribute('aria-invalid'), 'true');
    await assertAccessible(page, 'code entry with an error');
    await shots(page, 'portal-verify-error');

    await page.getByLabel('Code').focus();
    await page.keyboard.type(await lastCode(user));
    await Promise.all([page.waitForURL(url), page.keyboard.press('Enter')]);
    await page.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await context.close();
  });

  test('the identity check in Spanish keeps its language through its forms', async () => {
    const url = await portalUrl(user, { context: 'communications' });
    const context = await newContext();
    const page = await newPage(context);
    await page.goto(`${url}?lang=es`);
    await page.getByRole('heading', { name: 'Confirma que eres tú' }).waitFor();
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Enviar código' }).click()]);
    await page.getByRole('heading', { name: 'Introduce tu código' }).waitFor();
    await page.getByLabel('Código').fill(await lastCode(user));
    await Promise.all([page.waitForURL(`${url}?lang=es`), page.getByRole('button', { name: 'Verificar' }).click()]);
    await page.getByRole('heading', { name: 'Hola, Ada' }).waitFor();
    await shots(page, 'portal-verified-es');
    await context.close();
  });

  test('without script: the identity check, the orders and an order with its results', async () => {
    const context = await newContext({ javaScriptEnabled: false });
    const page = await newPage(context);
    const url = await portalUrl(user, { context: 'communications' });
    await page.goto(url);
    await page.getByRole('heading', { name: "Confirm it's you" }).waitFor();
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Send code' }).click()]);
    await page.getByLabel('Code').fill(await lastCode(user));
    await Promise.all([page.waitForURL(url), page.getByRole('button', { name: 'Verify' }).click()]);
    await page.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await Promise.all([
      page.waitForURL(new RegExp(`/v3/p/[A-Za-z0-9]+/orders/${order.id}$`)),
      page.locator(`#order-${order.id} a.button`).click(),
    ]);
    await page.getByRole('heading', { name: 'Where to give your sample' }).waitFor();
    await page.getByRole('list', { name: 'Progress of your order' }).waitFor();
    assert.ok((await page.getByRole('table', { name: 'Results' }).count()) === 1, 'the results, three days on');
    await Promise.all([page.waitForURL(url), page.getByRole('link', { name: 'All your orders' }).click()]);
    await page.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await context.close();
  });

  test('a refusal is said in the reader\'s language', async () => {
    const url = await portalUrl(user, { context: 'launch' });
    await stack.advanceClock(11 * 60);
    const context = await newContext({ extraHTTPHeaders: { 'accept-language': 'fr-FR,fr;q=0.9' } });
    const page = await newPage(context);
    const res = await page.goto(url);
    assert.equal(res.status(), 410);
    await page.getByRole('heading', { name: 'Lien expiré' }).waitFor();
    await assertAccessible(page, 'expired link');
    await context.close();
  });
});

test('no portal page broke its Content-Security-Policy', () => {
  assert.deepEqual(cspViolations, []);
});
