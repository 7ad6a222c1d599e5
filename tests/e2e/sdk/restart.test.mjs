// Sandboxes outlive a restart of `warren server`: the node agent adopts them, the E2B layer and
// the gateway serve them again from the store, the envd access token still opens them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';
import { startWarren, useEnv, sleep } from './harness.mjs';

let w;
before(async () => {
  w = await startWarren();
  useEnv(w);
});
after(async () => { await w?.stop(); });

test('running and paused sandboxes survive a server restart with their processes, files and token', async () => {
  const running = await Sandbox.create('base', { timeoutMs: 600_000 });
  const sleeper = await running.commands.run('sleep 3600', { background: true });
  await running.files.write('before.txt', 'written before the restart');
  const paused = await Sandbox.create('base');
  await paused.files.write('paused.txt', 'paused across the restart');
  assert.equal(await paused.pause(), true);
  const tokenBefore = (await w.api('GET', `/sandboxes/${running.sandboxId}`)).json.envdAccessToken;
  const endBefore = (await w.api('GET', `/sandboxes/${running.sandboxId}`)).json.endAt;

  await w.restart();
  useEnv(w);

  const info = await w.api('GET', `/sandboxes/${running.sandboxId}`);
  assert.equal(info.status, 200, info.text);
  assert.equal(info.json.state, 'running');
  assert.equal(info.json.envdAccessToken, tokenBefore);
  assert.equal(info.json.endAt, endBefore, 'the timer is kept');
  const again = await Sandbox.connect(running.sandboxId);
  assert.equal((await again.commands.run(`kill -0 ${sleeper.pid} && echo alive`)).stdout, 'alive\n');
  assert.equal(await again.files.read('before.txt'), 'written before the restart');

  assert.equal((await Sandbox.getInfo(paused.sandboxId)).state, 'paused');
  const resumed = await Sandbox.connect(paused.sandboxId);
  assert.equal(await resumed.files.read('paused.txt'), 'paused across the restart');

  // The timers run in the new process too.
  await again.setTimeout(2000);
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline && (await again.isRunning())) await sleep(250);
  assert.equal(await again.isRunning(), false);
  await resumed.kill();
});
