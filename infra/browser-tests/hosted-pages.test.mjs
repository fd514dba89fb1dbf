// The hosted pages in a real browser: headless Debian Chromium (/usr/bin/chromium) driven by
// playwright-core, against the local stack this file starts. Run with `make browser`.
//
// Only 127.0.0.1 is reached: every other request is aborted before it leaves the browser
// (every mark, script and style of a page is Wearlab's own), and host resolution maps every other name
// to nothing. Screenshots of every page go to target/browser-tests/.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Stack } from './stack.mjs';
import { DEMOGRAPHICS, assertPageHeaders, launch, newPage as openPage, shot } from './helpers.mjs';

let stack;
let browser;
let context;
const cspViolations = [];

const newPage = () => openPage(context, cspViolations);

const demographics = DEMOGRAPHICS;

/** A user with demographics and a walk-in order; answers [userId, order]. */
async function userWithOrder(clientUserId) {
  const user = await stack.createUser(clientUserId);
  await stack.api('PATCH', `/v2/user/${user}/info`, demographics);
  const tests = await stack.api('GET', '/v3/lab_test?lab_test_limit=100');
  const test = tests.data.find((t) => t.slug === 'meridian_essential_health');
  assert.ok(test, 'the reference data has the Meridian essential panel');
  const order = await stack.api('POST', '/v3/order', {
    user_id: user,
    patient_details: {
      first_name: 'Ada', last_name: 'Lovelace', dob: '1985-04-12', gender: 'female',
      phone_number: '+12125550100', email: 'ada@example.com',
    },
    patient_address: { first_line: '1 Main St', city: 'New York', state: 'NY', zip: '10001', country: 'US' },
    order_set: { lab_test_ids: [test.id] },
  });
  return [user, order.order];
}

before(async () => {
  stack = await Stack.start();
  browser = await launch();
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('link widget', () => {
  test('a password provider with MFA, from the keyboard, lands on the redirect URL with state=success', async () => {
    const user = await stack.createUser('browser-mfa');
    const redirect = `${stack.base}/local/landing`;
    const { link_web_url: url } = await stack.linkToken({ user_id: user, redirect_url: redirect });
    const page = await newPage();
    const res = await page.goto(url);
    assert.equal(res.status(), 200);
    assertPageHeaders(res, 'provider list');
    await page.getByRole('heading', { name: 'Connect a health data provider' }).waitFor();
    assert.ok(await page.getByRole('link', { name: /Oura.*Sign in with the provider/ }).isVisible());
    await shot(page, 'widget-providers');

    // Keyboard: Tab reaches WHOOP (past the search and the providers listed before it) and Enter opens it.
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(() => document.activeElement?.dataset.provider === 'whoop')) break;
    }
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.provider), 'whoop');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, 'none', 'focus is visible');
    await Promise.all([page.waitForURL(/\/v2\/link\/web\/provider\/whoop\?token=/), page.keyboard.press('Enter')]);
    await page.getByLabel('WHOOP username or email').fill('jane.mfa-sms');
    await page.getByLabel('Password').fill('correct horse');
    await shot(page, 'widget-password-form');
    await Promise.all([page.waitForLoadState('load'), page.getByLabel('Password').press('Enter')]);

    await page.getByRole('heading', { name: 'Enter your WHOOP code' }).waitFor();
    assert.match(await page.locator('.mfa-hint').innerText(), /^\+1 \*\*\* \*\*\* \*\*\d\d$/);
    assert.ok(!page.url().includes('jane'), 'no personal data in the address');
    await shot(page, 'widget-mfa');
    await page.getByLabel('One-time code').fill('123456');
    await Promise.all([page.waitForURL(/\/local\/landing\?/), page.getByRole('button', { name: 'Verify' }).click()]);
    const landed = new URL(page.url());
    assert.equal(landed.searchParams.get('state'), 'success');
    assert.equal(landed.searchParams.get('provider'), 'whoop');
    await shot(page, 'widget-landed');
    const connections = await stack.api('GET', `/v2/user/providers/${user}`);
    assert.deepEqual(connections.providers.map((p) => p.slug), ['whoop']);
    await page.close();
  });

  test('a wrong password shows the error and is not echoed', async () => {
    const user = await stack.createUser('browser-wrong');
    const { link_web_url: url } = await stack.linkToken({ user_id: user });
    const page = await newPage();
    await page.goto(url);
    await Promise.all([page.waitForURL(/provider\/peloton/), page.getByRole('link', { name: /Peloton/ }).click()]);
    await page.getByLabel('Peloton username or email').fill('jane');
    await page.getByLabel('Password').fill('wrong-password');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Connect' }).click()]);
    const alert = page.getByRole('alert');
    assert.match(await alert.innerText(), /Peloton did not accept this username and password/);
    assert.equal(await page.getByLabel('Password').inputValue(), '', 'the password field is empty');
    assert.equal(await page.getByLabel('Peloton username or email').inputValue(), 'jane');
    assert.ok(!(await page.content()).includes('wrong-password'), 'the password is not in the page');
    await shot(page, 'widget-wrong-password');
    await page.close();
  });

  test('an OAuth provider: the hand-off to the provider and back', async () => {
    const user = await stack.createUser('browser-oauth');
    const redirect = `${stack.base}/local/landing`;
    const { link_web_url: url } = await stack.linkToken({ user_id: user, redirect_url: redirect });
    const page = await newPage();
    await page.goto(url);
    await Promise.all([
      page.waitForURL(/\/v2\/link\/sim\/oauth\/oura\/authorize\?/),
      page.getByRole('link', { name: /Oura/ }).click(),
    ]);
    await shot(page, 'oauth-provider-consent');
    await Promise.all([
      page.waitForURL(/\/local\/landing\?/),
      page.getByRole('link', { name: /^Allow: the connection is made/ }).click(),
    ]);
    const landed = new URL(page.url());
    assert.equal(landed.searchParams.get('state'), 'success');
    assert.equal(landed.searchParams.get('provider'), 'oura');
    await shot(page, 'oauth-landed');
    const connections = await stack.api('GET', `/v2/user/providers/${user}`);
    assert.deepEqual(connections.providers.map((p) => p.slug), ['oura']);
    await page.close();
  });

  test('an expired token shows a clear page', async () => {
    const user = await stack.createUser('browser-expired');
    const { link_web_url: url } = await stack.linkToken({ user_id: user });
    await stack.advanceClock(61 * 60);
    const page = await newPage();
    const res = await page.goto(url);
    assert.equal(res.status(), 410);
    assertPageHeaders(res, 'expired token');
    await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
    await shot(page, 'widget-expired');
    await page.close();
  });

  test('a deployment that links no simulated provider offers no demo-only provider', async () => {
    // The SAM template's default: no provider has an OAuth app configured here, so every one
    // is demo only and none may be offered for a real link; the phone's providers (sdk) are
    // live everywhere, since their data comes from the app, which connects them.
    const deployed = await Stack.start({ WEARLAB_SIMULATED_PROVIDERS: 'false' });
    try {
      const catalog = await deployed.api('GET', '/v2/providers');
      assert.ok(catalog.length > 30);
      const phone = catalog.filter((p) => p.auth_type === 'sdk');
      assert.equal(phone.length, 8);
      assert.ok(phone.every((p) => p.availability === 'live'), 'the phone providers are live');
      assert.ok(
        catalog.every((p) => p.auth_type === 'sdk' || p.availability === 'demo_only'),
        'every other provider is demo only here',
      );
      const user = await deployed.createUser('browser-demo-only');
      const { link_web_url: url } = await deployed.linkToken({ user_id: user });
      const page = await newPage();
      const res = await page.goto(url);
      assert.equal(res.status(), 200);
      assertPageHeaders(res, 'provider list without providers');
      await page.getByRole('heading', { name: 'Connect a health data provider' }).waitFor();
      // Nothing is linked from the page: the phone's providers say they are connected in the
      // app, discontinued ones that they are turned off.
      assert.equal(await page.locator('a[data-provider]').count(), 0, 'no provider is offered for a link');
      assert.match(await page.locator('[data-provider="apple_health_kit"]').innerText(), /connected in the app that sent you/);
      await shot(page, 'widget-demo-only-deployment');
      const direct = await page.goto(`${deployed.base}/v2/link/web/provider/whoop?token=${encodeURIComponent(new URL(url).searchParams.get('token'))}`);
      assert.equal(direct.status(), 404, 'a demo-only provider page cannot be opened by its address');
      await page.close();
    } finally {
      await deployed.stop();
    }
  });
});

describe('user portal', () => {
  let user;
  let order;

  test('a launch link shows the order, its patient service centers and the requisition', async () => {
    [user, order] = await userWithOrder('browser-portal');
    const { url } = await stack.api('POST', `/v2/user/${user}/create_portal_url`, { context: 'launch' });
    const page = await newPage();
    const res = await page.goto(url);
    assert.equal(res.status(), 200);
    assertPageHeaders(res, 'portal');
    await page.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    const card = page.locator(`#order-${order.id}`);
    assert.match(await card.innerText(), /Essential Health Panel/);
    assert.match(await card.getAttribute('data-status'), /^received\.walk_in_test\./);
    assert.match(await card.innerText(), /Ordered|Requisition ready/, 'the status in words');
    assert.match(await card.getByRole('link', { name: 'Requisition form (PDF)' }).getAttribute('href'), /\/requisition\/pdf\?/);
    await shot(page, 'portal-orders');
    await Promise.all([
      page.waitForURL(new RegExp(`/v3/portal/orders/${order.id}\\?token=`)),
      card.getByRole('link', { name: 'Details, draw sites and results' }).click(),
    ]);
    await page.getByRole('heading', { name: 'Where to give your sample' }).waitFor();
    const centers = page.locator('#psc-list li');
    assert.ok((await centers.count()) > 0, 'patient service centers near the patient');
    assert.match(await centers.first().innerText(), /\d+ mi/);
    await shot(page, 'portal-order-centers');
    await page.close();
  });

  test('a communications link asks for a one-time code first', async () => {
    const { url } = await stack.api('POST', `/v2/user/${user}/create_portal_url`, { context: 'communications' });
    const page = await newPage();
    await page.goto(url);
    await page.getByRole('heading', { name: "Confirm it's you" }).waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Hello Ada' }).count(), 0, 'nothing shown before the check');
    await shot(page, 'portal-verify-start');
    await page.getByLabel(/Email to a\*\*\*@e\*\*\*\.com/).check();
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Send code' }).click()]);
    await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
    const events = await stack.events('user.portal.verification_requested');
    assert.equal(events.length, 1);
    assert.equal(events[0].user_id, user);
    await page.getByLabel('Code').fill(events[0].data.code);
    await shot(page, 'portal-verify-code');
    await Promise.all([page.waitForURL(url), page.getByRole('button', { name: 'Verify' }).click()]);
    await page.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await shot(page, 'portal-verified');
    await page.close();
  });

  test('an expired portal link is refused', async () => {
    const { url } = await stack.api('POST', `/v2/user/${user}/create_portal_url`, { context: 'launch' });
    await stack.advanceClock(11 * 60);
    const page = await newPage();
    const res = await page.goto(url);
    assert.equal(res.status(), 410);
    assertPageHeaders(res, 'expired portal link');
    await page.getByRole('heading', { name: 'Link expired' }).waitFor();
    await shot(page, 'portal-expired');
    await page.close();
  });
});

test('no page broke its Content-Security-Policy', () => {
  assert.deepEqual(cspViolations, []);
});
