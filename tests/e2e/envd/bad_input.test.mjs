// Malformed and hostile requests get the right Connect or HTTP error, and envd stays up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AuthenticationError, InvalidArgumentError } from 'e2b';
import { startEnvd, debugSandbox, init } from './harness.mjs';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd();
  assert.equal((await init(envd, { defaultUser: 'user' })).status, 204);
  sbx = await debugSandbox(envd);
});
after(async () => {
  assert.ok(envd.alive(), `envd died: ${envd.stderr()}`);
  await envd?.stop();
});

function envelope(flags, payload) {
  const body = Buffer.from(payload);
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

// Reads a streamed Connect response and returns its envelopes.
async function stream(path, body, headers = {}) {
  const r = await fetch(`${envd.url}${path}`, { method: 'POST', body,
    headers: { 'content-type': 'application/connect+json', ...headers } });
  const buf = Buffer.from(await r.arrayBuffer());
  const out = [];
  for (let i = 0; i + 5 <= buf.length;) {
    const len = buf.readUInt32BE(i + 1);
    out.push({ flags: buf[i], json: JSON.parse(buf.subarray(i + 5, i + 5 + len).toString()) });
    i += 5 + len;
  }
  return { status: r.status, type: r.headers.get('content-type'), frames: out };
}

async function unary(path, body, headers = {}) {
  const r = await fetch(`${envd.url}${path}`, { method: 'POST', body,
    headers: { 'content-type': 'application/json', ...headers } });
  return { status: r.status, body: await r.json().catch(() => null) };
}

test('malformed envelope: HTTP 200 and the error in the only end-of-stream frame', async () => {
  const r = await stream('/process.Process/Start', Buffer.from([0, 0, 0]));
  assert.equal(r.status, 200);
  assert.equal(r.type, 'application/connect+json');
  assert.equal(r.frames.length, 1);
  assert.equal(r.frames[0].flags, 2);
  assert.equal(r.frames[0].json.error.code, 'invalid_argument');
});

test('oversized frame is refused from its header', async () => {
  const head = Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]);
  const r = await stream('/process.Process/Start', Buffer.concat([head, Buffer.from('{}')]));
  assert.equal(r.frames.at(-1).json.error.code, 'resource_exhausted');
});

test('invalid JSON in a stream and in a unary call', async () => {
  const s = await stream('/filesystem.Filesystem/WatchDir', envelope(0, '{"path":'));
  assert.equal(s.frames.length, 1);
  assert.deepEqual(s.frames[0].json, { error: { code: 'invalid_argument', message: 'invalid JSON in request body' } });
  const u = await unary('/filesystem.Filesystem/Stat', '{"path": 5}');
  assert.equal(u.status, 400);
  assert.equal(u.body.code, 'invalid_argument');
  assert.match(u.body.message, /'path'/);
});

test('unknown pid in Connect is not_found inside the stream', async () => {
  const r = await stream('/process.Process/Connect', envelope(0, '{"process":{"pid":999999}}'));
  assert.equal(r.status, 200);
  assert.deepEqual(r.frames.at(-1).json,
      { error: { code: 'not_found', message: 'process with pid 999999 not found' } });
});

test('unknown methods and routes', async () => {
  const u = await unary('/process.Process/Nope', '{}');
  assert.equal(u.status, 501);
  assert.equal(u.body.code, 'unimplemented');
  const s = await unary('/filesystem.Filesystem/StreamInput', '{}');
  assert.equal(s.body.code, 'unimplemented');
  const other = await fetch(`${envd.url}/no/such/route`);
  assert.equal(other.status, 404);
  const wrong = await fetch(`${envd.url}/process.Process/List`, { method: 'POST',
    headers: { 'content-type': 'application/proto' }, body: '' });
  assert.equal(wrong.status, 415);
});

test('paths that try to escape, ~other and NUL are invalid_argument', async () => {
  for (const path of ['../../etc/shadow', '~root/.bashrc', 'a\u0000b']) {
    const u = await unary('/filesystem.Filesystem/Stat', JSON.stringify({ path }));
    assert.equal(u.status, 400, path);
    assert.equal(u.body.code, 'invalid_argument', path);
  }
  const r = await fetch(`${envd.url}/files?path=..%2F..%2Fetc%2Fshadow`);
  assert.equal(r.status, 400);
});

test('bad users: unknown user is unauthenticated for RPCs and 401 for /files', async () => {
  await assert.rejects(sbx.commands.run('true', { user: 'nobody-here' }),
      (e) => e instanceof AuthenticationError && /invalid username: 'nobody-here'/.test(e.message));
  await assert.rejects(sbx.files.list('/', { user: 'nobody-here' }), (e) => e instanceof AuthenticationError);
  const r = await fetch(`${envd.url}/files?path=x&username=nobody-here`);
  assert.equal(r.status, 401);
  assert.match((await r.json()).message, /error looking up user 'nobody-here'/);
  const badAuth = await unary('/process.Process/List', '{}', { authorization: 'Basic !!!' });
  assert.equal(badAuth.body.code, 'unauthenticated');
});

test('bad uploads: no path for octet-stream, unknown content type, truncated multipart', async () => {
  const a = await fetch(`${envd.url}/files`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: 'x' });
  assert.equal(a.status, 400);
  const b = await fetch(`${envd.url}/files?path=x`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
  assert.equal(b.status, 400);
  const c = await fetch(`${envd.url}/files?path=x`, { method: 'POST',
    headers: { 'content-type': 'multipart/form-data; boundary=B' },
    body: '--B\r\nContent-Disposition: form-data; name="file"\r\n\r\nno end' });
  assert.equal(c.status, 400);
  assert.match((await c.json()).message, /closing boundary/);
  const d = await fetch(`${envd.url}/files?path=x`, { method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' }, body: 'not gzip' });
  assert.equal(d.status, 400);
  await assert.rejects(sbx.commands.run('true', { cwd: '../..' }), (e) => e instanceof InvalidArgumentError);
});

test('envd is still healthy after all of it', async () => {
  assert.equal((await fetch(`${envd.url}/health`)).status, 204);
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n');
});
