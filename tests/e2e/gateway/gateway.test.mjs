// The unmodified E2B SDK (npm e2b) through the gateway into a real sandbox running warren-envd:
// routing by the SDK's own headers, the access token, streams, pause, and a kill under a running
// command ending in the SDK's "sandbox was killed" error (E2B protocol §3.8).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { Sandbox, AuthenticationError, TimeoutError } from 'e2b';

const NOT_FOUND = (id) => `{"sandboxId":"${id}","message":"The sandbox was not found","code":502}`;

// Starts the harness (gateway_harness.cc) and talks to it line by line.
function startHarness() {
  const bin = process.env.WARREN_GATEWAY_HARNESS;
  const envd = process.env.WARREN_ENVD_BIN;
  if (!bin || !envd) throw new Error('WARREN_GATEWAY_HARNESS and WARREN_ENVD_BIN must be set');
  const child = spawn(bin, ['--envd', envd], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const next = () => new Promise((resolve) => waiting.push(resolve));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    ready: next().then((line) => JSON.parse(line)),
    async command(name) {
      const answer = next();
      child.stdin.write(name + '\n');
      assert.equal(await answer, 'ok ' + name);
    },
    async stop() {
      child.stdin.end();
      const code = await exited;
      assert.equal(code, 0, 'the harness did not clean up cleanly');
    },
  };
}

let harness;
let info;
let sbx;

function sandbox(id, token) {
  // What Sandbox.connect() builds once the control plane answered; E2B_SANDBOX_URL = gateway.
  return new Sandbox({ sandboxId: id, envdAccessToken: token, envdVersion: '0.6.4',
    sandboxUrl: info.gateway, debug: true });
}

before(async () => {
  harness = startHarness();
  info = await harness.ready;
  sbx = sandbox(info.sandboxId, info.token);
});
after(async () => { await harness?.stop(); });

test('commands and files reach the right sandbox through the gateway', async () => {
  assert.equal(await sbx.isRunning(), true);
  const r = await sbx.commands.run('echo hello from $(hostname)');
  assert.equal(r.stdout, `hello from ${info.sandboxId}\n`);
  await sbx.files.write('/tmp/note.txt', 'through the gateway');  // a chunked upload
  assert.equal(await sbx.files.read('/tmp/note.txt'), 'through the gateway');
  const seen = [];
  await sbx.commands.run('for i in 1 2 3; do echo line $i; done', { onStdout: (d) => seen.push(d) });
  assert.equal(seen.join(''), 'line 1\nline 2\nline 3\n');
});

test('a wrong token is an AuthenticationError; an unknown sandbox is not running', async () => {
  const wrong = sandbox(info.sandboxId, 'not-the-token');
  await assert.rejects(wrong.commands.run('true'), (e) => e instanceof AuthenticationError);
  const ghost = sandbox('i00000000000000000000', info.token);
  assert.equal(await ghost.isRunning(), false);
  const r = await fetch(`${info.gateway}/health`, { headers: { 'E2b-Sandbox-Id': 'i00000000000000000000' } });
  assert.equal(r.status, 502);
  assert.equal(await r.text(), NOT_FOUND('i00000000000000000000'));
});

test('a paused sandbox is not running until it is resumed', async () => {
  await harness.command('pause');
  assert.equal(await sbx.isRunning(), false);
  await harness.command('resume');
  assert.equal(await sbx.isRunning(), true);
  assert.equal((await sbx.commands.run('echo back')).stdout, 'back\n');
});

test('killing the sandbox under a running command gives the SDK its "killed" error', async () => {
  let sawOutput;
  const output = new Promise((resolve) => { sawOutput = resolve; });
  // The outcome is taken at once: the rejection may come before the kill command returns.
  const outcome = sbx.commands.run('while true; do echo tick; sleep 0.1; done',
    { onStdout: () => sawOutput(), timeoutMs: 0 }).then(() => null, (e) => e);
  await output;
  await harness.command('kill');
  const error = await outcome;
  assert.ok(error instanceof TimeoutError, `expected a TimeoutError, got ${error}`);
  assert.match(error.message,
      /The sandbox was killed or reached its end of life while the request was in flight/);
  assert.equal(await sbx.isRunning(), false);
});
