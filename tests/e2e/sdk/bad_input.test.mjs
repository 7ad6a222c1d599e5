// Bad input to the control plane of a real warren server: each case gets its exact status and
// an exact {"code","message"} body, and leaves nothing behind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startWarren } from './harness.mjs';

let w;
before(async () => { w = await startWarren(); });
after(async () => { await w?.stop(); });

async function expectError(res, status, message) {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const want = typeof message === 'string' ? message : undefined;
  assert.deepEqual(Object.keys(res.json ?? {}).sort(), ['code', 'message'], res.text);
  assert.equal(res.json.code, status);
  if (want !== undefined) assert.equal(res.json.message, want);
  else assert.match(res.json.message, message);
}

test('missing or wrong API key → 401', async () => {
  await expectError(await w.api('GET', '/v2/sandboxes', { key: '' }), 401,
    'missing API key: send it as X-API-Key: <key> or Authorization: Bearer <key>');
  await expectError(await w.api('POST', '/v2/sandboxes', { key: 'e2b_' + 'ab'.repeat(20),
    body: { templateID: 'base' } }), 401, 'invalid API key');
  await expectError(await w.api('GET', '/v2/sandboxes', { key: 'sk-notours' }), 401,
    'invalid API key: expected e2b_ followed by 40 hex characters');
});

test('invalid JSON → 400, never 500', async () => {
  await expectError(await w.api('POST', '/v2/sandboxes', { body: '{"templateID": ' }), 400,
    /^invalid JSON body: /);
  await expectError(await w.api('POST', '/sandboxes', { body: '"base"' }), 400,
    'the request body must be a JSON object, got string');
  await expectError(await w.api('POST', '/v2/sandboxes', { body: '' }), 400,
    'the request body is empty: expected a JSON object');
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 'soon' } }),
    400, 'timeout must be an integer number of seconds, got "soon"');
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'base', envVars: { A: 1 } } }),
    400, 'envVars["A"] must be a string, got integer');
});

test('unknown template → 400 naming it', async () => {
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'no-such-template' } }),
    400, 'template "no-such-template" not found: no SandboxSet or SandboxTemplate of that name in namespace "default"');
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'Not A Name' } }),
    400, /^template "Not A Name" is not a valid template name: /);
});

test('timeout ≤ 0 or above the maximum → 400', async () => {
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 0 } }),
    400, 'timeout must be > 0 seconds, got 0');
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: -30 } }),
    400, 'timeout must be > 0 seconds, got -30');
  await expectError(await w.api('POST', '/v2/sandboxes', { body: { templateID: 'base', timeout: 86401 } }),
    400, 'timeout 86401 s is above the maximum of 86400 s');
  await expectError(await w.api('POST', '/sandboxes/iaaaaaaaaaaaaaaaaaaaa/timeout', { body: { timeout: -1 } }),
    400, 'timeout must be >= 0 seconds, got -1');
});

test('oversized body → 413', async () => {
  // Announced by Content-Length and refused before it is read (a raw socket, so the test does
  // not race the server closing while it still sends).
  const port = new URL(w.apiUrl).port;
  const reply = await new Promise((resolve, reject) => {
    const s = net.connect(Number(port), '127.0.0.1');
    let data = '';
    s.on('data', (d) => { data += d; });
    s.on('end', () => resolve(data));
    s.on('error', reject);
    s.write(`POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: ${w.adminKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${4 << 20}\r\n\r\n{`);
  });
  assert.match(reply, /^HTTP\/1\.1 413 /);
  const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4));
  assert.equal(body.code, 413);
  assert.equal(typeof body.message, 'string');
});

test("unknown and other teams' sandboxes → 404 with the E2B body", async () => {
  for (const [method, path] of [['GET', '/sandboxes/iaaaaaaaaaaaaaaaaaaaa'],
    ['DELETE', '/sandboxes/nonexistingsandbox'], ['POST', '/sandboxes/iaaaaaaaaaaaaaaaaaaaa/pause'],
    ['POST', '/v2/sandboxes/iaaaaaaaaaaaaaaaaaaaa/connect'], ['GET', '/sandboxes/iaaaaaaaaaaaaaaaaaaaa/metrics']]) {
    const id = path.split('/')[path.startsWith('/v2') ? 3 : 2];
    await expectError(await w.api(method, path, { body: method === 'POST' ? {} : undefined }), 404,
      `sandbox "${id}" not found`);
  }
  const created = await w.api('POST', '/v2/sandboxes', { body: { templateID: 'base' } });
  assert.equal(created.status, 201, created.text);
  const id = created.json.sandboxID;
  const other = await w.api('POST', '/api-keys', { body: { team: 'team-b' } });
  for (const [method, path] of [['GET', `/sandboxes/${id}`], ['DELETE', `/sandboxes/${id}`],
    ['POST', `/sandboxes/${id}/pause`], ['POST', `/v2/sandboxes/${id}/connect`]]) {
    await expectError(await w.api(method, path, { key: other.json.key,
      body: method === 'POST' ? {} : undefined }), 404, `sandbox "${id}" not found`);
  }
  assert.equal((await w.api('GET', `/sandboxes/${id}`)).status, 200, 'still there');
  assert.equal((await w.api('DELETE', `/sandboxes/${id}`)).status, 204);
});

test('list parameters are checked', async () => {
  await expectError(await w.api('GET', '/v2/sandboxes?limit=1000'), 400,
    'limit must be an integer from 1 to 100, got "1000"');
  await expectError(await w.api('GET', '/v2/sandboxes?state=stopped'), 400,
    'state "stopped" is not valid: use running and/or paused');
  await expectError(await w.api('GET', '/v2/sandboxes?nextToken=garbage'), 400, 'Invalid next token');
  await expectError(await w.api('GET', '/v2/sandboxes?metadata=novalue'), 400,
    'metadata filter "novalue" is not of the form key=value');
});

test('nothing was left behind by any of it', async () => {
  const left = (await w.sandboxObjects()).filter((o) => !o.metadata.deletionTimestamp);
  assert.deepEqual(left.map((o) => o.metadata.name), []);
});
