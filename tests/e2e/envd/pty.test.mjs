// pty.* through the real e2b SDK against warren-envd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startEnvd, debugSandbox, init } from './harness.mjs';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd();
  assert.equal((await init(envd, { defaultUser: 'user' })).status, 204);
  sbx = await debugSandbox(envd);
});
after(async () => { await envd?.stop(); });

async function until(pred, what, ms = 10000, dump = () => '') {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}: ${JSON.stringify(dump())}`);
}

test('create, input, resize, kill', async () => {
  let out = '';
  const dec = new TextDecoder();
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += dec.decode(d); } });
  assert.ok(h.pid > 0);
  const enc = new TextEncoder();
  await sbx.pty.sendInput(h.pid, enc.encode('echo "pty-$((6*7))"; tty; stty size\n'));
  await until(() => out.includes('pty-42') && /[\r\n]24 80\r?\n/.test(out), 'echo and size 24 80');
  assert.match(out, /\/dev\/pts\/\d+/);
  await sbx.pty.resize(h.pid, { cols: 120, rows: 40 });
  await sbx.pty.sendInput(h.pid, enc.encode('stty size; echo $TERM; whoami\n'));
  await until(() => /[\r\n]40 120\r?\n/.test(out) && out.includes('xterm-256color') &&
      /[\r\n]user\r?\n/.test(out), 'resized to 40 120 as user', 10000, () => out);
  assert.equal(await sbx.pty.kill(h.pid), true);
  const r = await h.wait().catch((e) => e);
  assert.equal(r.exitCode, -1);
  assert.equal(await sbx.pty.kill(h.pid), false);
});

test('a pty shell exits cleanly on exit', async () => {
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} });
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('exit 0\n'));
  const r = await h.wait();
  assert.equal(r.exitCode, 0);
});
