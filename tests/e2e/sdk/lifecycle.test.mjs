// The E2B SDK (npm e2b@2.51.0, unmodified) against a real warren server with real sandboxes,
// configured only by E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY. With
// WARREN_SDK_TEMPLATE=pool (ctest e2e_sdk_pool) every create names a SandboxSet instead, so the
// same suite runs on sandboxes claimed from a warm pool.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, SandboxNotFoundError } from 'e2b';
import { startWarren, useEnv, sleep, POOLED, TEMPLATE } from './harness.mjs';

let w;

before(async () => {
  w = await startWarren();
  useEnv(w);
});
after(async () => { await w?.stop(); });

// What the gateway answers for a sandbox that is gone or paused (e2b-protocol.md §1.7).
async function proxyHealth(id) {
  const res = await fetch(`${w.sandboxUrl}/health`,
    { headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983' } });
  return { status: res.status, body: await res.text() };
}

function notFoundBody(id) {
  return JSON.stringify({ sandboxId: id, message: 'The sandbox was not found', code: 502 });
}

test('create → isRunning → commands.run → files write/read', async () => {
  const sbx = await Sandbox.create(TEMPLATE, { envs: { GREETING: 'hi there' },
    metadata: { suite: 'lifecycle' } });
  try {
    assert.match(sbx.sandboxId, /^i[a-z0-9]{20}$/);
    assert.equal(await sbx.isRunning(), true);
    const r = await sbx.commands.run('echo "$GREETING from $(whoami) in $(pwd) on $(hostname)"');
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, `hi there from user in /home/user on ${sbx.sandboxId}\n`);
    const root = await sbx.commands.run('id -u', { user: 'root' });
    assert.equal(root.stdout, '0\n');
    await sbx.files.write('notes/a.txt', 'alpha\nbeta\n');
    assert.equal(await sbx.files.read('notes/a.txt'), 'alpha\nbeta\n');
    assert.equal((await sbx.commands.run('cat /home/user/notes/a.txt')).stdout, 'alpha\nbeta\n');
    const info = await sbx.getInfo();
    assert.equal(info.sandboxId, sbx.sandboxId);
    assert.equal(info.state, 'running');
    assert.deepEqual(info.metadata, { suite: 'lifecycle' });
    assert.equal(info.templateId, TEMPLATE);
    // Served the way this run means to: a warm member claimed from the pool, or a cold start.
    const o = (await w.sandboxObjects()).find(
      (x) => x.metadata.labels?.['agents.kruise.io/sandbox-id'] === sbx.sandboxId);
    assert.equal(o.metadata.labels['agents.kruise.io/sandbox-pool'], POOLED ? TEMPLATE : undefined);
    assert.equal(o.metadata.labels['agents.kruise.io/sandbox-claimed'], POOLED ? 'true' : undefined);
    if (POOLED) {
      // A warm member (lock_type update), not a cold create on an empty pool (lock_type create).
      const metrics = await (await w.apiFetch(`${w.apiUrl}/metrics`)).text();
      assert.match(metrics,
        /^sandbox_claim_total\{source="e2b",lock_type="update",namespace="default",result="success"\} [1-9]/m);
    }
  } finally {
    await sbx.kill();
  }
});

test('list filters by metadata and pages with limit 1 over 3 sandboxes', async () => {
  const tag = `run-${process.pid}-${Date.now()}`;
  const made = [];
  for (let i = 0; i < 3; i++) {
    made.push(await Sandbox.create(TEMPLATE, { metadata: { page: tag, 'my key': 'a&b=c', n: String(i) } }));
  }
  const other = await Sandbox.create(TEMPLATE, { metadata: { page: 'someone-else' } });
  try {
    const paginator = Sandbox.list({ limit: 1, query: { metadata: { page: tag, 'my key': 'a&b=c' } } });
    const seen = [];
    const hasNext = [];
    while (paginator.hasNext) {
      const items = await paginator.nextItems();
      assert.equal(items.length, 1);
      seen.push(items[0].sandboxId);
      hasNext.push(paginator.hasNext);
      assert.equal(items[0].state, 'running');
      assert.equal(items[0].metadata['my key'], 'a&b=c');
    }
    assert.deepEqual(hasNext, [true, true, false]);
    // Newest first.
    assert.deepEqual(seen, made.map((s) => s.sandboxId).reverse());
    const all = await Sandbox.list({ query: { metadata: { page: tag } } }).nextItems();
    assert.equal(all.length, 3);
  } finally {
    for (const s of [...made, other]) await s.kill();
  }
});

test('setTimeout shortens the life: dead once it passes (proxy 502, isRunning false)', async () => {
  const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 600_000 });
  const id = sbx.sandboxId;
  await sbx.setTimeout(3000);
  assert.equal(await sbx.isRunning(), true);
  const t0 = Date.now();
  let dead = false;
  while (Date.now() - t0 < 15000) {
    if (!(await sbx.isRunning())) { dead = true; break; }
    await sleep(250);
  }
  assert.ok(dead, 'the sandbox outlived its 3 s timeout by more than 12 s');
  assert.ok(Date.now() - t0 >= 1500, 'the sandbox ended long before its timeout');
  const h = await proxyHealth(id);
  assert.equal(h.status, 502);
  assert.equal(h.body, notFoundBody(id));
  await assert.rejects(Sandbox.getInfo(id), SandboxNotFoundError);
  assert.equal(await Sandbox.kill(id), false);
});

test('pause keeps processes and files; connect resumes them under the same PID', async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  const id = sbx.sandboxId;
  try {
    const sleeper = await sbx.commands.run('sleep 3600', { background: true });
    const pid = sleeper.pid;
    // The pid is bash's until bash execs sleep; pause only once it has, so what is compared
    // after resume is the process pause kept, not a shell still starting.
    const cmdline = `cat /proc/${pid}/cmdline | tr '\\0' ' '`;
    for (let i = 0; (await sbx.commands.run(cmdline)).stdout !== 'sleep 3600 '; i++) {
      assert.ok(i < 100, `pid ${pid} never became sleep`);
      await sleep(20);
    }
    await sbx.files.write('keep.txt', 'kept across pause');
    assert.equal(await sbx.pause(), true);
    assert.equal(await sbx.pause(), false, 'a second pause reports already paused');
    assert.equal(await sbx.isRunning(), false);
    const h = await proxyHealth(id);
    assert.equal(h.status, 502);
    assert.equal(h.body, notFoundBody(id));
    assert.equal((await Sandbox.getInfo(id)).state, 'paused');
    const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
    assert.ok(paused.some((s) => s.sandboxId === id));

    const again = await Sandbox.connect(id);
    assert.equal(again.sandboxId, id);
    assert.equal(await again.isRunning(), true);
    assert.equal((await Sandbox.getInfo(id)).state, 'running');
    const procs = await again.commands.list();
    assert.ok(procs.some((p) => p.pid === pid), `pid ${pid} missing from ${JSON.stringify(procs)}`);
    const alive = await again.commands.run(`kill -0 ${pid} && ${cmdline}; cat /proc/${pid}/stat >&2`);
    assert.equal(alive.stdout, 'sleep 3600 ', `after resume: ${alive.stderr}`);
    assert.equal(await again.files.read('keep.txt'), 'kept across pause');
    // The first handle still works: the envd access token survived pause and resume.
    assert.equal((await sbx.commands.run('echo still mine')).stdout, 'still mine\n');
  } finally {
    await Sandbox.kill(id);
  }
});

// Every command is `bash -l -c …`: a process the login scripts start is paid on every command
// (a fork and an exec, ~6 ms each on these hosts). Pids in the sandbox's pid namespace are
// handed out in order, so the pids between two probes count what one login shell started: the
// shell alone, whatever Debian's profiles would have asked `id` or `mesg`.
test("the base image's login shell sets PATH by uid and starts no process of its own", async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    const started = 'a=$(sh -c "echo \\$\\$"); bash -l -c true; b=$(sh -c "echo \\$\\$"); echo $((b - a))';
    // Another task of the sandbox made in the window (a thread envd adds to a pool) takes a pid
    // too; a process of the login scripts would be there every time, so three tries suffice.
    for (const user of ['user', 'root']) {
      const seen = [];
      for (let i = 0; i < 3 && seen.at(-1) !== '2\n'; i++) {
        seen.push((await sbx.commands.run(started, { user })).stdout);
      }
      assert.equal(seen.at(-1), '2\n', `as ${user}: ${JSON.stringify(seen)}`);
    }
    assert.equal((await sbx.commands.run('echo $PATH')).stdout,
      '/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games\n');
    assert.equal((await sbx.commands.run('echo $PATH', { user: 'root' })).stdout,
      '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n');
  } finally {
    await sbx.kill();
  }
});

test('kill → kill again returns false, connect throws SandboxNotFoundError', async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  const id = sbx.sandboxId;
  const stream = sbx.commands.run('sleep 600', { background: true });
  await stream;
  assert.equal(await sbx.kill(), true);
  assert.equal(await Sandbox.kill(id), false);
  assert.equal(await sbx.isRunning(), false);
  await assert.rejects(Sandbox.connect(id), SandboxNotFoundError);
  const listed = await Sandbox.list().nextItems();
  assert.ok(!listed.some((s) => s.sandboxId === id), 'a killed sandbox vanishes from the list at once');
  const h = await proxyHealth(id);
  assert.equal(h.status, 502);
  assert.equal(h.body, notFoundBody(id));
});

test("another team's key sees nothing of it", async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    const made = await w.api('POST', '/api-keys', { body: { team: 'other-team' } });
    assert.equal(made.status, 201);
    const opts = { apiKey: made.json.key };
    await assert.rejects(Sandbox.connect(sbx.sandboxId, opts), SandboxNotFoundError);
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId, opts), SandboxNotFoundError);
    assert.equal(await Sandbox.kill(sbx.sandboxId, opts), false);
    assert.deepEqual(await Sandbox.list(opts).nextItems(), []);
    assert.equal(await sbx.isRunning(), true, "the other team's kill did nothing");
    // Its own sandboxes land in its own namespace.
    const mine = await Sandbox.create(TEMPLATE, opts);
    const objs = await w.sandboxObjects();
    assert.equal(objs.find((o) => o.metadata.name === mine.sandboxId)?.metadata.namespace, 'other-team');
    await mine.kill();
  } finally {
    await sbx.kill();
  }
});

test('metrics come from the node agent samples and honour start/end', async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    let metrics = [];
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline && metrics.length === 0) {
      metrics = await sbx.getMetrics();
      if (metrics.length === 0) await sleep(500);
    }
    assert.ok(metrics.length > 0, 'no sample within 30 s');
    const m = metrics[0];
    for (const k of ['cpuCount', 'cpuUsedPct', 'memUsed', 'memTotal', 'diskUsed', 'diskTotal']) {
      assert.equal(typeof m[k], 'number', k);
    }
    assert.ok(m.timestamp instanceof Date);
    assert.ok(m.memUsed > 0);
    // diskTotal is what the sandbox's file system may grow to (its ephemeral-storage).
    assert.ok(m.diskTotal > 0 && m.diskTotal >= m.diskUsed, `diskTotal ${m.diskTotal}`);
    const before = await sbx.getMetrics({ start: new Date(Date.now() - 3600_000),
      end: new Date(Date.now() - 1800_000) });
    assert.deepEqual(before, [], 'no samples from before the sandbox existed');
  } finally {
    await sbx.kill();
  }
});

async function waitForState(id, state, ms = 20000) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = (await Sandbox.getInfo(id)).state;
    if (last === state) return;
    await sleep(200);
  }
  assert.fail(`sandbox ${id} is still ${last} after ${ms} ms, wanted ${state}`);
}

test('a timeout with onTimeout pause pauses it; traffic resumes it when autoResume is on', async () => {
  const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 3000,
    lifecycle: { onTimeout: 'pause', autoResume: true } });
  const id = sbx.sandboxId;
  try {
    const info = await sbx.getInfo();
    assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: true });
    await sbx.files.write('marker.txt', 'before the pause');
    await waitForState(id, 'paused');
    // A request through the gateway wakes it and is served.
    assert.equal(await sbx.files.read('marker.txt'), 'before the pause');
    assert.equal((await Sandbox.getInfo(id)).state, 'running');
  } finally {
    await Sandbox.kill(id);
  }
});

test('a timeout with onTimeout pause and no autoResume stays paused until connect', async () => {
  const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } });
  const id = sbx.sandboxId;
  try {
    const sleeper = await sbx.commands.run('sleep 3600', { background: true });
    await waitForState(id, 'paused');
    assert.equal(await sbx.isRunning(), false);
    const again = await Sandbox.connect(id, { timeoutMs: 60_000 });
    assert.equal(await again.isRunning(), true);
    assert.equal((await again.commands.run(`kill -0 ${sleeper.pid} && echo alive`)).stdout, 'alive\n');
  } finally {
    await Sandbox.kill(id);
  }
});
