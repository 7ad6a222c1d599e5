// commands.* through the real e2b SDK against warren-envd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CommandExitError, InvalidArgumentError, TimeoutError } from 'e2b';
import { startEnvd, debugSandbox, init } from './harness.mjs';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd();
  // What the control plane does on claim: sandbox env vars, the template's default user.
  const r = await init(envd, { envVars: { SANDBOX_VAR: 'from-init', SHARED: 'sandbox' },
    defaultUser: 'user' });
  assert.equal(r.status, 204);
  sbx = await debugSandbox(envd);
});
after(async () => { await envd?.stop(); });

// envd is pid 1 of every sandbox, and its threads count against the sandbox's pids limit: it
// holds a handful while idle and starts more only while commands keep them busy.
test('envd idles on a few threads and grows for concurrent commands', async () => {
  const threads = () => Number(
      readFileSync(`/proc/${envd.child.pid}/status`, 'utf8').match(/^Threads:\s+(\d+)$/m)[1]);
  assert.ok(threads() <= 8, `envd idles on ${threads()} threads`);
  const runs = await Promise.all(Array.from({ length: 24 }, (_, i) =>
    sbx.commands.run(`sleep 0.3; echo ${i}`)));
  runs.forEach((r, i) => assert.equal(r.stdout, `${i}\n`));
});

test('exact stdout, stderr and exit code', async () => {
  const r = await sbx.commands.run('echo hello; printf "a\\nb"');
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'hello\na\nb');
  assert.equal(r.stderr, '');
  await assert.rejects(sbx.commands.run('echo out; echo err >&2; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError);
    assert.equal(e.exitCode, 3);
    assert.equal(e.stdout, 'out\n');
    assert.equal(e.stderr, 'err\n');
    assert.equal(e.error, 'exit status 3');
    return true;
  });
});

test('large output arrives complete and in order', async () => {
  const r = await sbx.commands.run('seq 1 200000');
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 200000);
  assert.equal(lines[0], '1');
  assert.equal(lines[199999], '200000');
});

test('environment: user variables, sandbox envs from /init, request envs win', async () => {
  const r = await sbx.commands.run('echo "$HOME|$USER|$LOGNAME|$SANDBOX_VAR|$SHARED|$FOO"',
      { envs: { FOO: 'bar', SHARED: 'request' } });
  assert.equal(r.stdout, '/home/user|user|user|from-init|request|bar\n');
});

test('cwd: default is home, explicit cwd, missing cwd is refused', async () => {
  assert.equal((await sbx.commands.run('pwd')).stdout, '/home/user\n');
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n');
  assert.equal((await sbx.commands.run('pwd', { cwd: '/', user: 'root' })).stdout, '/\n');
  await assert.rejects(sbx.commands.run('pwd', { cwd: '/does/not/exist' }),
      (e) => e instanceof InvalidArgumentError && /does not exist/.test(e.message));
});

test('user root vs user: uid, gid, groups, home', async () => {
  const u = await sbx.commands.run('id -u; id -g; id -G; whoami; echo $HOME');
  assert.equal(u.stdout, '1000\n1000\n1000 27\nuser\n/home/user\n');
  const r = await sbx.commands.run('id -u; whoami; echo $HOME; pwd', { user: 'root' });
  assert.equal(r.stdout, '0\nroot\n/root\n/root\n');
});

test('background command, real pid, wait', async () => {
  const h = await sbx.commands.run('sleep 0.5; echo done', { background: true });
  assert.ok(h.pid > 0);
  // The SDK's own trick: the reported pid is a real process in the sandbox.
  const probe = await sbx.commands.run(`kill -0 ${h.pid} && echo alive`);
  assert.equal(probe.stdout, 'alive\n');
  const listed = await sbx.commands.list();
  const mine = listed.find((p) => p.pid === h.pid);
  assert.ok(mine, 'background process is listed');
  assert.equal(mine.cmd, '/bin/bash');
  assert.deepEqual(mine.args, ['-l', '-c', 'sleep 0.5; echo done']);
  const r = await h.wait();
  assert.equal(r.stdout, 'done\n');
  assert.equal(r.exitCode, 0);
});

test('kill: true for a live process (exit -1, signal), false for an unknown pid', async () => {
  const h = await sbx.commands.run('sleep 30', { background: true });
  assert.equal(await sbx.commands.kill(h.pid), true);
  await assert.rejects(h.wait(), (e) => {
    assert.ok(e instanceof CommandExitError);
    assert.equal(e.exitCode, -1);
    assert.equal(e.error, 'signal: killed');
    return true;
  });
  assert.equal(await sbx.commands.kill(h.pid), false);
  assert.equal(await sbx.commands.kill(999999), false);
  const after = await sbx.commands.run(`kill -0 ${h.pid} 2>/dev/null && echo alive || echo gone`);
  assert.equal(after.stdout, 'gone\n');
});

test('sendStdin and closeStdin', async () => {
  const h = await sbx.commands.run('cat', { background: true, stdin: true });
  await sbx.commands.sendStdin(h.pid, 'hello ');
  await sbx.commands.sendStdin(h.pid, 'world');
  await sbx.commands.closeStdin(h.pid);
  const r = await h.wait();
  assert.equal(r.stdout, 'hello world');
});

test('without stdin the command reads EOF at once', async () => {
  const r = await sbx.commands.run('cat; echo end', { stdin: false });
  assert.equal(r.stdout, 'end\n');
});

test('connect to a running command and stream its output', async () => {
  const h = await sbx.commands.run('sleep 0.3; echo one; sleep 0.3; echo two', { background: true });
  const seen = [];
  const c = await sbx.commands.connect(h.pid, { onStdout: (d) => seen.push(d) });
  const r = await c.wait();
  assert.equal(r.exitCode, 0);
  assert.equal(seen.join(''), 'one\ntwo\n');
  await assert.rejects(sbx.commands.connect(999999), /not found/);
});

test('Connect-Timeout-Ms bounds the command: it is killed and the SDK raises TimeoutError', async () => {
  const start = Date.now();
  await assert.rejects(sbx.commands.run('echo $$ > /tmp/timeout-pid; sleep 30', { timeoutMs: 700 }),
      (e) => e instanceof TimeoutError);
  assert.ok(Date.now() - start < 10000);
  const pid = (await sbx.files.read('/tmp/timeout-pid')).trim();
  // Give the kill a moment to be reaped, then the pid must be gone.
  let state = '';
  for (let i = 0; i < 20; i++) {
    state = (await sbx.commands.run(`kill -0 ${pid} 2>/dev/null && echo alive || echo gone`)).stdout;
    if (state === 'gone\n') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(state, 'gone\n');
});

test('callbacks receive stdout and stderr as they come', async () => {
  const out = [];
  const err = [];
  await sbx.commands.run('echo a; echo b >&2', { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
  assert.equal(out.join(''), 'a\n');
  assert.equal(err.join(''), 'b\n');
});
