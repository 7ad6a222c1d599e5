// The lifecycle through the v1 routes with raw HTTP, in the shape the Python SDK sends it
// (e2b-protocol.md §2: create answers 201, every required field present; Python parses only
// the documented status and raises on a missing field).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startWarren } from './harness.mjs';

let w;
before(async () => { w = await startWarren(); });
after(async () => { await w?.stop(); });

const pythonHeaders = {
  'user-agent': 'e2b-python-sdk/2.45.1', lang: 'python', lang_version: '3.11.2',
  package_version: '2.45.1', publisher: 'e2b', sdk_runtime: 'python', system: 'Linux',
};

const SANDBOX_FIELDS = ['sandboxID', 'templateID', 'clientID', 'envdVersion', 'envdAccessToken'];
const LISTED_FIELDS = ['sandboxID', 'templateID', 'clientID', 'startedAt', 'endAt', 'cpuCount',
  'memoryMB', 'diskSizeMB', 'state', 'envdVersion'];

function hasFields(obj, fields) {
  for (const f of fields) assert.ok(f in obj, `${f} missing from ${JSON.stringify(obj)}`);
}

async function envd(id, token, path, init = {}) {
  return fetch(`${w.sandboxUrl}${path}`, { ...init, headers: { 'E2b-Sandbox-Id': id,
    'E2b-Sandbox-Port': '49983', 'X-Access-Token': token, ...(init.headers ?? {}) } });
}

test('v1 create, info, list, pause, connect, timeout, kill', async () => {
  const created = await w.api('POST', '/sandboxes', { headers: pythonHeaders,
    body: { templateID: 'base', timeout: 300, secure: true, allow_internet_access: true,
      metadata: { who: 'python' }, envVars: { PYVAR: '42' } } });
  assert.equal(created.status, 201, created.text);
  hasFields(created.json, SANDBOX_FIELDS);
  const id = created.json.sandboxID;
  const token = created.json.envdAccessToken;
  assert.match(id, /^i[a-z0-9]{20}$/);
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.equal(created.json.templateID, 'base');
  assert.match(created.json.envdVersion, /^\d+\.\d+\.\d+$/);
  assert.equal(typeof created.json.clientID, 'string');

  // envd answers through the gateway with the token, and only with it.
  assert.equal((await envd(id, token, '/health')).status, 204);
  const env = await envd(id, token, '/envs');
  assert.equal(env.status, 200);
  assert.equal((await env.json()).PYVAR, '42');
  assert.equal((await envd(id, 'wrong', '/envs')).status, 401);

  const info = await w.api('GET', `/sandboxes/${id}`, { headers: pythonHeaders });
  assert.equal(info.status, 200);
  hasFields(info.json, [...LISTED_FIELDS, 'metadata', 'envdAccessToken']);
  assert.equal(info.json.state, 'running');
  assert.deepEqual(info.json.metadata, { who: 'python' });
  assert.ok(new Date(info.json.endAt) - new Date(info.json.startedAt) >= 299_000);

  const listed = await w.api('GET', '/v2/sandboxes?limit=100', { headers: pythonHeaders });
  assert.equal(listed.status, 200);
  assert.equal(listed.headers.get('x-next-token'), null);
  const mine = listed.json.find((s) => s.sandboxID === id);
  hasFields(mine, LISTED_FIELDS);
  const v1list = await w.api('GET', '/sandboxes', { headers: pythonHeaders });
  assert.ok(v1list.json.some((s) => s.sandboxID === id));

  assert.equal((await w.api('POST', `/sandboxes/${id}/pause`, { body: { memory: true } })).status, 204);
  const again = await w.api('POST', `/sandboxes/${id}/pause`, { body: { memory: true } });
  assert.equal(again.status, 409);
  assert.equal(again.json.code, 409);
  assert.equal((await envd(id, token, '/health')).status, 502);
  assert.equal((await w.api('GET', `/sandboxes/${id}`)).json.state, 'paused');

  const resumed = await w.api('POST', `/sandboxes/${id}/connect`, { body: { timeout: 300 } });
  assert.equal(resumed.status, 201, resumed.text);
  hasFields(resumed.json, SANDBOX_FIELDS);
  assert.equal(resumed.json.envdAccessToken, token);
  assert.equal((await envd(id, token, '/health')).status, 204);
  const running = await w.api('POST', `/sandboxes/${id}/connect`, { body: { timeout: 60 } });
  assert.equal(running.status, 200);

  assert.equal((await w.api('POST', `/sandboxes/${id}/timeout`, { body: { timeout: 120 } })).status, 204);
  assert.equal((await w.api('DELETE', `/sandboxes/${id}`)).status, 204);
  const gone = await w.api('DELETE', `/sandboxes/${id}`);
  assert.equal(gone.status, 404);
  assert.deepEqual(Object.keys(gone.json).sort(), ['code', 'message']);
  assert.equal(gone.json.code, 404);
  assert.equal((await w.api('GET', `/sandboxes/${id}`)).status, 404);
  assert.equal((await envd(id, token, '/health')).status, 502);
});
