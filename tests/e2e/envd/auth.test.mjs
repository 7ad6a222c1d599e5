// Access tokens, URL signatures, /init, /reset, /logs: a "secured" sandbox as the control
// plane sets it up (POST /init with the access token), driven by the SDK with that token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AuthenticationError, getSignature } from 'e2b';
import { startEnvd, debugSandbox, securedSandbox, init } from './harness.mjs';

const TOKEN = 'secret-envd-token-0123456789';
const NODE_SECRET = 'node-agent-secret';
const UNAUTHORIZED =
    '{"code":401,"message":"unauthorized access, please provide a valid access token or method signing if supported"}';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd({
    env: { WARREN_ENVD_NODE_SECRET: NODE_SECRET },
    command: ['sh', '-c', 'echo template-command-started; echo to-stderr >&2; exec sleep 1000'],
  });
  assert.equal((await init(envd, { accessToken: TOKEN, defaultUser: 'user' })).status, 204);
  sbx = await securedSandbox(envd, TOKEN);
});
after(async () => { await envd?.stop(); });

test('health needs no token and reports the envd version', async () => {
  const r = await fetch(`${envd.url}/health`);
  assert.equal(r.status, 204);
  assert.equal(r.headers.get('x-envd-version'), '0.6.4');
});

test('RPCs with the token work; without it they fail with the exact 401', async () => {
  assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n');
  const anonymous = await debugSandbox(envd);  // no token
  await assert.rejects(anonymous.commands.run('true'), (e) => e instanceof AuthenticationError);
  await assert.rejects(anonymous.files.read('x'), (e) => e instanceof AuthenticationError);
  const r = await fetch(`${envd.url}/process.Process/List`, { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(r.status, 401);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(await r.text(), UNAUTHORIZED);
});

test('signed download and upload URLs work with plain fetch', async () => {
  await sbx.files.write('signed.txt', 'signed content');
  const url = await sbx.downloadUrl('signed.txt');
  assert.match(url, /signature=v1_/);
  const r = await fetch(url);
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'signed content');

  const up = await sbx.uploadUrl('uploaded.txt', { useSignatureExpiration: 60 });
  assert.match(up, /signature_expiration=\d+/);
  const form = new FormData();
  form.append('file', 'file content');
  const w = await fetch(up, { method: 'POST', body: form });
  assert.equal(w.status, 200);
  const written = await w.json();
  assert.deepEqual(written, [{ path: '/home/user/uploaded.txt', name: 'uploaded.txt', type: 'file' }]);
  assert.equal(await sbx.files.read('uploaded.txt'), 'file content');
});

test('an expired signature gets exactly the E2B 401', async () => {
  await sbx.files.write('expiring.txt', 'x');
  const sig = await getSignature({ path: 'expiring.txt', operation: 'read', user: undefined,
    expirationInSeconds: -10, envdAccessToken: TOKEN });
  const r = await fetch(`${envd.url}/files?path=expiring.txt&signature=${encodeURIComponent(sig.signature)}` +
      `&signature_expiration=${sig.expiration}`);
  assert.equal(r.status, 401);
  assert.equal(await r.text(), '{"code":401,"message":"signature is already expired"}');

  const missing = await fetch(`${envd.url}/files?path=expiring.txt`);
  assert.equal(missing.status, 401);
  assert.equal((await missing.json()).message, 'missing signature query parameter');
  const wrong = await fetch(`${envd.url}/files?path=other.txt&signature=${encodeURIComponent(sig.signature)}`);
  assert.equal((await wrong.json()).message, 'invalid signature');
});

test('/envs needs the token and returns the sandbox env vars', async () => {
  assert.equal((await init(envd, { envVars: { A: '1' } }, { 'x-access-token': TOKEN })).status, 204);
  assert.equal((await fetch(`${envd.url}/envs`)).status, 401);
  const r = await fetch(`${envd.url}/envs`, { headers: { 'x-access-token': TOKEN } });
  assert.deepEqual(await r.json(), { A: '1' });
});

test('template command output is served by /logs', async () => {
  let text = '';
  for (let i = 0; i < 50 && !text.includes('to-stderr'); i++) {
    const r = await fetch(`${envd.url}/logs`, { headers: { 'x-access-token': TOKEN } });
    assert.equal(r.status, 200);
    text = await r.text();
    await new Promise((res) => setTimeout(res, 50));
  }
  assert.match(text, /template-command-started/);
  assert.match(text, /to-stderr/);
  assert.equal((await fetch(`${envd.url}/logs`)).status, 401);
});

test('a later /init replaces the token; only the holder or the node agent may do it', async () => {
  // A process in the sandbox without the token cannot take envd over.
  assert.equal((await init(envd, { accessToken: 'stolen' })).status, 401);
  assert.equal((await init(envd, { accessToken: 'second-token' }, { 'x-access-token': TOKEN })).status, 204);
  await assert.rejects(sbx.commands.run('true'), (e) => e instanceof AuthenticationError);
  const second = await securedSandbox(envd, 'second-token');
  assert.equal((await second.commands.run('echo ok')).stdout, 'ok\n');
  // The node agent (secret) may set it without knowing the old one; /init is idempotent.
  for (let i = 0; i < 2; i++) {
    assert.equal((await init(envd, { accessToken: TOKEN }, { 'x-warren-node-secret': NODE_SECRET })).status, 204);
  }
  assert.equal((await sbx.commands.run('echo back')).stdout, 'back\n');
});

test('/reset kills every process and forgets token and env (sandbox recycling)', async () => {
  const h = await sbx.commands.run('sleep 60', { background: true });
  assert.equal((await fetch(`${envd.url}/reset`, { method: 'POST' })).status, 401);
  const r = await fetch(`${envd.url}/reset`, { method: 'POST', headers: { 'x-warren-node-secret': NODE_SECRET } });
  assert.equal(r.status, 204);
  await assert.rejects(h.wait());
  const open = await debugSandbox(envd);  // no token needed any more
  assert.deepEqual(await open.commands.list(), []);
  assert.equal((await open.commands.run('echo "[$A]"', { user: 'root' })).stdout, '[]\n');
  // Claimed again: a new token.
  assert.equal((await init(envd, { accessToken: TOKEN, defaultUser: 'user' })).status, 204);
  assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n');
});

// A gVisor clone restores its source's envd, secret included: the node that restored it gives
// it the clone's own, which only a holder of the current secret may do.
test('the node secret is replaced only by a caller showing the current one', async () => {
  const NEXT = 'the-clone-secret';
  const reset = (secret) => fetch(`${envd.url}/reset`, { method: 'POST',
    headers: { 'x-warren-node-secret': secret } });
  // The token's holder may change settings, not the node's credential.
  assert.equal((await init(envd, { resetSecret: NEXT }, { 'x-access-token': TOKEN })).status, 204);
  assert.equal((await reset(NEXT)).status, 401);
  assert.equal((await init(envd, { accessToken: TOKEN, resetSecret: NEXT },
    { 'x-warren-node-secret': NODE_SECRET })).status, 204);
  assert.equal((await reset(NODE_SECRET)).status, 401);
  assert.equal((await reset(NEXT)).status, 204);
  // And back, so the file's other tests could run after this one.
  assert.equal((await init(envd, { resetSecret: NODE_SECRET },
    { 'x-warren-node-secret': NEXT })).status, 204);
  assert.equal((await init(envd, { accessToken: TOKEN, defaultUser: 'user' })).status, 204);
});
