// The node agent's own calls (its exec probes): process.Start with the sandbox's node secret
// runs whatever the access token is, a wrong secret is refused, and those processes stay out of
// the audit journal while the users' commands are in it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEnvd, securedSandbox, init } from './harness.mjs';

const TOKEN = 'node-calls-token-0123456789';
const NODE_SECRET = 'node-agent-secret-for-probes';

let envd;
let sbx;
let auditPath;

before(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'warren-envd-node-calls-'));
  auditPath = path.join(dir, 'audit.jsonl');
  envd = await startEnvd({ args: ['--audit-log', auditPath],
                           env: { WARREN_ENVD_NODE_SECRET: NODE_SECRET } });
  assert.equal((await init(envd, { accessToken: TOKEN })).status, 204);
  sbx = await securedSandbox(envd, TOKEN);
});
after(async () => { await envd?.stop(); });

// A Connect envelope: flags 0, big-endian length, the JSON message.
function envelope(message) {
  const payload = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

async function start(secret, cmd, args) {
  const r = await fetch(`${envd.url}/process.Process/Start`, {
    method: 'POST',
    headers: { 'content-type': 'application/connect+json', 'x-warren-node-secret': secret,
               'connect-timeout-ms': '5000' },
    body: envelope({ process: { cmd, args } }),
  });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()).toString('latin1') };
}

test('the node secret starts a process though the sandbox has an access token', async () => {
  const r = await start(NODE_SECRET, 'sh', ['-c', 'echo probed']);
  assert.equal(r.status, 200);
  assert.ok(r.body.includes(Buffer.from('probed\n').toString('base64')), r.body);
  assert.ok(r.body.includes('"end"'), r.body);
});

test('a wrong node secret is refused like a missing token', async () => {
  const r = await start('not-the-secret', 'true', []);
  assert.equal(r.status, 401);
});

test("the node's processes are not journalled; the users' are", async () => {
  await start(NODE_SECRET, 'sh', ['-c', 'echo node-probe-marker']);
  assert.equal((await sbx.commands.run('echo user-command-marker')).stdout, 'user-command-marker\n');
  let journal = '';
  for (let i = 0; i < 100 && !journal.includes('user-command-marker'); i++) {
    if (existsSync(auditPath)) journal = readFileSync(auditPath, 'utf8');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(journal.includes('user-command-marker'), journal);
  assert.ok(!journal.includes('node-probe-marker'), journal);
});
