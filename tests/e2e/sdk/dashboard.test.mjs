// The dashboard (web/, served by `warren server` at /ui/) in a real headless Chromium — Debian's
// `chromium`, driven by puppeteer-core — against a real server with real sandboxes: the page
// opens with an admin key, a pool's fill changes live after `warren scale`, the kill button
// removes a sandbox, and a team key sees only its team's sandboxes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import puppeteer from 'puppeteer-core';
import { startWarren, warrenBinary } from './harness.mjs';

const CHROMIUM = process.env.WARREN_CHROMIUM ?? '/usr/bin/chromium';
const AGENTS = '/apis/agents.kruise.io/v1alpha1';
const POOL = 'dash-pool';
// Generous bounds for a loaded 2-core machine; none of them is what the test measures.
const UI_WAIT_MS = 90000;

let w;
let browser;
let profile;

before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: scripts/install-deps installs Debian's chromium`);
  }
  w = await startWarren();
  const res = await w.apiFetch(`${w.apiUrl}${AGENTS}/namespaces/default/sandboxsets`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name: POOL },
      spec: { replicas: 1, templateRef: { name: 'base' } },
    }),
  });
  assert.equal(res.status, 201, await res.text());
  await w.waitPool(POOL, 1);
  profile = mkdtempSync(path.join(tmpdir(), 'warren-dashboard-chromium-'));
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    // --no-sandbox: Chromium refuses to run its own sandbox as root, which this suite is.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close().catch(() => {});
  if (profile) rmSync(profile, { recursive: true, force: true });
  await w?.stop();
});

// Opens the dashboard in a fresh page, types `key` into the form, and waits until every watch
// is live. Collects what the browser complained about (a CSP violation, a script error).
async function openDashboard(key) {
  const page = await browser.newPage();
  page.complaints = [];
  page.on('pageerror', (e) => page.complaints.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon|401|404/.test(m.text())) {
      page.complaints.push(`console: ${m.text()}`);
    }
  });
  page.on('dialog', (d) => d.accept());  // the kill button asks first
  await page.goto(`${w.apiUrl}/ui/`, { waitUntil: 'load' });
  await page.type('[data-testid="key-input"]', key);
  await page.click('[data-testid="key-submit"]');
  await page.waitForSelector('[data-testid="live"][data-state="live"]', { timeout: UI_WAIT_MS });
  return page;
}

// What the page shows in its sandboxes table, row by row.
const sandboxRows = (page) => page.$$eval('[data-testid="sandbox-row"]', (rows) => rows.map((r) => ({
  name: r.dataset.name, namespace: r.dataset.namespace, id: r.dataset.id,
  state: r.querySelector('[data-testid="sandbox-state"]').textContent,
})));

const poolRow = (name) => `[data-testid="pool-row"][data-name="${name}"]`;

// An E2B sandbox made with `key` (its team's namespace), as the SDK would make it.
async function createSandbox(key) {
  const made = await w.api('POST', '/sandboxes', { key, body: { templateID: 'base', timeout: 600 } });
  assert.equal(made.status, 201, made.text);
  return made.json.sandboxID;
}

async function teamKey(team) {
  const made = await w.api('POST', '/api-keys', { body: { team } });
  assert.equal(made.status, 201, made.text);
  return made.json.key;
}

test('the page opens with an admin key and lists pools and sandboxes', async () => {
  const page = await openDashboard(w.adminKey);
  assert.match(await page.$eval('[data-testid="whoami"]', (e) => e.textContent), /^admin/);
  assert.ok(!page.url().includes(w.adminKey), 'the key must never be in the URL');
  await page.waitForSelector(poolRow(POOL), { timeout: UI_WAIT_MS });
  const fill = await page.$eval(`${poolRow(POOL)} [data-testid="pool-fill"]`, (e) => e.textContent);
  assert.match(fill, /^1 \/ 1/);
  // The pool's warm member is listed as such.
  await page.waitForFunction((pool) => [...document.querySelectorAll('[data-testid="sandbox-row"]')]
    .some((r) => r.querySelector('[data-testid="sandbox-pool"]').textContent === `${pool} (warm)`),
  { timeout: UI_WAIT_MS }, POOL);
  assert.deepEqual(page.complaints, []);
  await page.close();
});

test("a pool's fill changes live after `warren scale`, and the page's own scale button works", async () => {
  const page = await openDashboard(w.adminKey);
  await page.waitForSelector(`${poolRow(POOL)}[data-available="1"][data-desired="1"]`,
    { timeout: UI_WAIT_MS });
  // A marker that a reload would wipe: the change must arrive through the watch.
  await page.evaluate(() => { window.notReloaded = true; });

  const scale = await promisify(execFile)(warrenBinary(),
    ['scale', 'sbs', POOL, '--replicas', '3'],
    { env: { ...process.env, HOME: w.dir, WARREN_SERVER: w.apiUrl, WARREN_API_KEY: w.adminKey } });
  assert.match(scale.stdout, /scaled/);

  await page.waitForSelector(`${poolRow(POOL)}[data-desired="3"]`, { timeout: UI_WAIT_MS });
  await page.waitForSelector(`${poolRow(POOL)}[data-available="3"]`, { timeout: 180000 });
  assert.match(await page.$eval(`${poolRow(POOL)} [data-testid="pool-fill"]`, (e) => e.textContent),
    /^3 \/ 3/);
  assert.equal(await page.$eval(`${poolRow(POOL)} meter`, (m) => m.value), 3);
  assert.equal(await page.evaluate(() => window.notReloaded), true, 'the page reloaded');

  // One fewer with the page's own button: the SandboxSet follows.
  await page.click(`${poolRow(POOL)} [data-testid="pool-scale-down"]`);
  await page.waitForSelector(`${poolRow(POOL)}[data-desired="2"]`, { timeout: UI_WAIT_MS });
  const set = await (await w.apiFetch(
    `${w.apiUrl}${AGENTS}/namespaces/default/sandboxsets/${POOL}`)).json();
  assert.equal(set.spec.replicas, 2);
  assert.deepEqual(page.complaints, []);
  await page.close();
});

test("pause and resume change a sandbox's state; the kill button removes it from the page and the server", async () => {
  const id = await createSandbox(w.adminKey);
  const page = await openDashboard(w.adminKey);
  const row = `[data-testid="sandbox-row"][data-id="${id}"]`;
  await page.waitForFunction((sel) => document.querySelector(sel)
    ?.querySelector('[data-testid="sandbox-state"]').textContent === 'Running',
  { timeout: UI_WAIT_MS }, row);
  // Its usage is drawn once the node has sampled it.
  await page.waitForSelector(`${row} [data-testid="sparkline-mem"] svg:not([data-points="0"])`,
    { timeout: UI_WAIT_MS });

  // Selecting it shows its detail pane, with its audit journal: the create is in it.
  await page.click(`${row} [data-testid="sandbox-id"]`);
  await page.waitForFunction((name) =>
    document.querySelector('[data-testid="detail-name"]').textContent === name,
  { timeout: UI_WAIT_MS }, id);
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="audit-row"]')]
    .some((r) => r.textContent.includes('create')), { timeout: UI_WAIT_MS });

  // Pause and resume from the row: the state follows, through the E2B routes.
  const stateIs = (want) => page.waitForFunction((sel, s) => document.querySelector(sel)
    ?.querySelector('[data-testid="sandbox-state"]').textContent === s,
  { timeout: UI_WAIT_MS }, row, want);
  await page.click(`${row} [data-testid="sandbox-pause"]`);
  await stateIs('Paused');
  assert.equal((await w.api('GET', `/sandboxes/${id}`)).json.state, 'paused');
  await page.click(`${row} [data-testid="sandbox-resume"]`);
  await stateIs('Running');
  assert.equal((await w.api('GET', `/sandboxes/${id}`)).json.state, 'running');

  await page.click(`${row} [data-testid="sandbox-kill"]`);
  await page.waitForFunction((sel) => document.querySelector(sel) === null,
    { timeout: UI_WAIT_MS }, row);
  assert.equal(await w.sandboxObject(id), undefined, 'the Sandbox is still in the API');
  const info = await w.api('GET', `/sandboxes/${id}`);
  assert.equal(info.status, 404);
  assert.deepEqual(page.complaints, []);
  await page.close();
});

test("a team key sees only its own team's sandboxes", async () => {
  const keyA = await teamKey('dash-team-a');
  const keyB = await teamKey('dash-team-b');
  const idA = await createSandbox(keyA);
  const idB = await createSandbox(keyB);
  const page = await openDashboard(keyA);
  assert.equal(await page.$eval('[data-testid="whoami"]', (e) => e.textContent), 'team dash-team-a');
  await page.waitForSelector(`[data-testid="sandbox-row"][data-id="${idA}"]`,
    { timeout: UI_WAIT_MS });
  const rows = await sandboxRows(page);
  assert.ok(rows.length >= 1);
  for (const r of rows) assert.equal(r.namespace, 'dash-team-a', JSON.stringify(r));
  assert.ok(!rows.some((r) => r.id === idB), "team b's sandbox is listed to team a");
  // The admin's pool in `default` is not team a's either.
  assert.equal(await page.$$eval('[data-testid="pool-row"]', (p) => p.length), 0);
  assert.equal(await page.$eval('[data-testid="pools-empty"]', (e) => !e.hidden), true);
  // Team a may kill its own: the row goes, team b's sandbox stays.
  await page.click(`[data-testid="sandbox-row"][data-id="${idA}"] [data-testid="sandbox-kill"]`);
  await page.waitForFunction((id) =>
    document.querySelector(`[data-testid="sandbox-row"][data-id="${id}"]`) === null,
  { timeout: UI_WAIT_MS }, idA);
  assert.equal((await w.api('GET', `/sandboxes/${idB}`)).status, 200);
  assert.deepEqual(page.complaints, []);
  await page.close();
});
