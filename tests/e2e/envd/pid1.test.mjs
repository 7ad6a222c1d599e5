// envd's pid 1 duties: it runs as pid 1 of the sandbox's pid namespace, reaps every orphan,
// forwards SIGTERM to the template's command, and reports the PIDs commands really have.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startEnvd, debugSandbox, init } from './harness.mjs';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd({
    pidNamespace: true,
    // The template's command notes SIGTERM in the user's home (a temp dir of this suite).
    command: ['sh', '-c', 'trap "echo got-sigterm > /home/user/term.txt; exit 0" TERM; ' +
      'echo started > /home/user/started.txt; while :; do sleep 0.1; done'],
  });
  assert.equal((await init(envd, { defaultUser: 'user' })).status, 204);
  sbx = await debugSandbox(envd);
});
after(async () => { await envd?.stop(); });

test('envd is pid 1 and command pids are real in its namespace', async () => {
  const r = await sbx.commands.run('cat /proc/1/comm; echo $$', { user: 'root' });
  const [comm, pid] = r.stdout.trim().split('\n');
  assert.equal(comm, 'warren-envd');
  const h = await sbx.commands.run('sleep 5', { background: true });
  // The reported pid is the process itself: bash -l reads its profile, then execs sleep in place.
  let cmd = '';
  for (let i = 0; i < 40 && cmd !== 'sleep\n'; i++) {
    cmd = (await sbx.commands.run(`kill -0 ${h.pid} && cat /proc/${h.pid}/comm`)).stdout;
    if (cmd !== 'sleep\n') await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(cmd, 'sleep\n');
  assert.ok(Number(pid) > 1);
  await sbx.commands.kill(h.pid);
});

test('orphans are reaped: no zombie is left behind', async () => {
  // Each command leaves a grandchild that outlives its parent and is re-parented to pid 1.
  for (let i = 0; i < 5; i++) await sbx.commands.run('(sleep 0.2 &) ; true');
  await new Promise((r) => setTimeout(r, 1500));
  const r = await sbx.commands.run(
      "for s in /proc/[0-9]*/stat; do awk '{print $3}' $s; done | grep -c Z || true");
  assert.equal(r.stdout.trim(), '0');
});

test('SIGTERM to envd reaches the template command before envd exits', async () => {
  const home = path.join(envd.root, 'home/user');
  for (let i = 0; i < 50 && !existsSync(path.join(home, 'started.txt')); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(existsSync(path.join(home, 'started.txt')), 'template command ran');
  await envd.signal('SIGTERM');
  assert.equal(readFileSync(path.join(home, 'term.txt'), 'utf8'), 'got-sigterm\n');
});
