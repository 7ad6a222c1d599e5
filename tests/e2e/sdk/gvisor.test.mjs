// The stock E2B SDK on a template whose pod names runtimeClassName gvisor: the sandbox runs
// under runsc (gVisor's kernel answers), commands and files work through envd over the gVisor
// runtime's stdio channel, a kill -9 of the server leaves it running for the next server to
// adopt, and pause, snapshots and forks keep its processes and memory. Skipped where runsc is
// not installed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Sandbox, CommandExitError } from 'e2b';
import { forkCheckpointAfterCrash, startWarren, useEnv } from './harness.mjs';

const HAVE_RUNSC = existsSync('/usr/bin/runsc');
let w;
before(async () => {
  if (!HAVE_RUNSC) return;
  w = await startWarren();
  useEnv(w);
  const res = await w.apiFetch(
    `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
        metadata: { name: 'base-gvisor' },
        spec: { template: { spec: { runtimeClassName: 'gvisor',
          containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } } },
      }),
    });
  assert.equal(res.status, 201, await res.text());
});
after(async () => { await w?.stop(); });

test('a gvisor sandbox runs commands and files through the SDK and survives a kill -9 of the server',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    const kernel = await sbx.commands.run('dmesg | head -1');
    assert.match(kernel.stdout, /gVisor/);
    const who = await sbx.commands.run('whoami && pwd');
    assert.equal(who.stdout, 'user\n/home/user\n');
    await assert.rejects(sbx.commands.run('echo on-stderr >&2; exit 3'), (e) => {
      assert.ok(e instanceof CommandExitError, String(e));
      assert.equal(e.exitCode, 3);
      assert.equal(e.stderr, 'on-stderr\n');
      return true;
    });
    await sbx.files.write('/home/user/note.txt', 'written in gvisor');
    assert.equal(await sbx.files.read('/home/user/note.txt'), 'written in gvisor');
    const sleeper = await sbx.commands.run('sleep 3600', { background: true });

    await w.crash();
    useEnv(w);

    const info = await w.api('GET', `/sandboxes/${sbx.sandboxId}`);
    assert.equal(info.status, 200, info.text);
    assert.equal(info.json.state, 'running');
    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal((await again.commands.run(`kill -0 ${sleeper.pid} && echo alive`)).stdout,
      'alive\n');
    assert.equal(await again.files.read('/home/user/note.txt'), 'written in gvisor');
    await again.kill();
  });

function pausedReason(o) {
  return (o?.status?.conditions ?? []).find((c) => c.type === 'SandboxPaused')?.reason;
}

// A Python counter keeps its count in memory: after a restore it goes on from where it was; a
// process started afresh would count from 1 again. It renames each count into place: a reader
// of a file truncated and rewritten can see it empty (read as 0, "the counter started over").
const COUNTER = `python3 -c "
import os, time
i = 0
while True:
    i += 1
    open('/tmp/count.new', 'w').write(str(i))
    os.replace('/tmp/count.new', '/tmp/count')
    time.sleep(0.05)
"`;

// 0 until the counter has written its first count (Python starts slowly under gVisor's ptrace).
async function count(sbx) {
  return Number((await sbx.commands.run('cat /tmp/count 2>/dev/null || echo 0')).stdout);
}

// The count once the counter has counted a few times (up to a minute on a loaded host).
async function counting(sbx) {
  let n = 0;
  for (let i = 0; n <= 3; i++) {
    assert.ok(i < 600, `the counter did not run: ${n}`);
    await new Promise((r) => setTimeout(r, 100));
    n = await count(sbx);
  }
  return n;
}

test('pause writes a gvisor sandbox\'s processes and memory to disk; connect restores them',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    const counter = await sbx.commands.run(COUNTER, { background: true });
    await sbx.files.write('/home/user/kept.txt', 'files too');
    // Python starts slowly under ptrace on a loaded host: wait for it to count.
    const before = await counting(sbx);

    assert.equal(await sbx.pause(), true);
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused');
    const obj = await w.sandboxObject(sbx.sandboxId);
    assert.equal(pausedReason(obj), 'HibernatePauseSucceed', JSON.stringify(obj?.status));
    await new Promise((r) => setTimeout(r, 1000));

    const again = await Sandbox.connect(sbx.sandboxId);
    const after = await count(again);
    assert.ok(after >= before, `the counter started over (${before} → ${after})`);
    assert.ok(after < before + 60, `it counted while hibernated (${before} → ${after})`);
    assert.equal((await again.commands.run(`kill -0 ${counter.pid} && echo same`)).stdout,
      'same\n');
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(await count(again) > after, 'and it counts on');
    assert.equal(await again.files.read('/home/user/kept.txt'), 'files too');
    await again.kill();
  });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const run = async (sbx, cmd) => (await sbx.commands.run(cmd)).stdout;

// A gVisor sandbox whose counter is counting, with a file of its own: the source of copies.
async function countingSource() {
  const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
  const counter = await sbx.commands.run(COUNTER, { background: true });
  await sbx.files.write('/home/user/kept.txt', 'from the source');
  return { sbx, counter, before: await counting(sbx) };
}

// Each copy of a gVisor sandbox is restored from the source's memory: the same process (same
// pid) counting on from where the source was, on the source's files, and its own from then on.
async function assertGoesOn(copy, before, pid, what) {
  const n = await count(copy);
  assert.ok(n >= before, `${what}: the counter started over (${before} → ${n})`);
  assert.equal(await run(copy, `kill -0 ${pid} && echo same`), 'same\n', what);
  await sleep(500);
  assert.ok(await count(copy) > n, `${what}: the counter stands still at ${n}`);
  assert.equal(await copy.files.read('/home/user/kept.txt'), 'from the source', what);
}

test('a gvisor snapshot and a fork ×3 keep the running processes: each copy counts on',
  { skip: !HAVE_RUNSC && 'runsc is not installed', timeout: 300_000 }, async () => {
    const made = [];
    try {
      const { sbx, counter, before } = await countingSource();
      made.push(sbx);

      const snap = await sbx.createSnapshot();
      // The source was down for the capture and runs on as the same process.
      await assertGoesOn(sbx, before, counter.pid, 'the source after its snapshot');
      const copies = [];
      for (let i = 0; i < 2; i++) {
        copies.push(await Sandbox.create(snap.snapshotId, { timeoutMs: 600_000 }));
        made.push(copies[i]);
      }
      for (const [i, c] of copies.entries()) {
        await assertGoesOn(c, before, counter.pid, `sandbox ${i} from the snapshot`);
      }
      await copies[0].files.write('/home/user/mine.txt', 'copy 0');
      assert.equal(await copies[1].files.exists('/home/user/mine.txt'), false);
      assert.equal(await sbx.files.exists('/home/user/mine.txt'), false);

      const forked = await count(sbx);
      const forks = await sbx.fork({ count: 3, timeoutMs: 600_000 });
      for (const f of forks) if (f instanceof Sandbox) made.push(f);
      assert.equal(forks.length, 3);
      for (const [i, f] of forks.entries()) {
        assert.ok(f instanceof Sandbox, `fork ${i} failed: ${f?.message}`);
        await assertGoesOn(f, forked, counter.pid, `fork ${i}`);
      }
      assert.equal(new Set(forks.map((f) => f.sandboxId)).size, 3);
      await assertGoesOn(sbx, forked, counter.pid, 'the source after its fork');

      // A copy's envd was re-keyed to the copy: a connect (its own token) works.
      const again = await Sandbox.connect(forks[0].sandboxId);
      assert.equal(await run(again, 'echo mine'), 'mine\n');
      assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
      assert.equal(await sbx.isRunning(), true);
    } finally {
      for (const s of made) await s.kill().catch(() => {});
    }
  });

// The Checkpoint kind itself, as a user writes it: persistentContents [memory] on a gVisor
// sandbox, and a SandboxTemplate restoring from it.
test('a Checkpoint keeping memory, and a template restoring from it, give a copy that counts on',
  { skip: !HAVE_RUNSC && 'runsc is not installed', timeout: 300_000 }, async () => {
    const base = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default`;
    const post = (plural, body) => w.apiFetch(`${base}/${plural}`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', ...body }) });
    const made = [];
    try {
      const { sbx, counter, before } = await countingSource();
      made.push(sbx);
      const obj = await w.sandboxObject(sbx.sandboxId);
      let res = await post('checkpoints', { kind: 'Checkpoint', metadata: { name: 'cp-gvisor' },
        spec: { sandboxName: obj.metadata.name, persistentContents: ['filesystem', 'memory'] } });
      assert.equal(res.status, 201, await res.text());
      let cp;
      for (let i = 0; !['Succeeded', 'Failed'].includes(cp?.status?.phase); i++) {
        assert.ok(i < 600, `checkpoint still ${cp?.status?.phase}`);
        await sleep(100);
        cp = await (await w.apiFetch(`${base}/checkpoints/cp-gvisor`)).json();
      }
      assert.equal(cp.status.phase, 'Succeeded', cp.status.message);
      assert.match(cp.status.message, /processes, memory and file system/);
      res = await post('sandboxtemplates', { kind: 'SandboxTemplate',
        metadata: { name: 'from-cp-gvisor', annotations: { 'agents.kruise.io/restore-from': 'cp-gvisor' } },
        spec: { template: { spec: { runtimeClassName: 'gvisor',
          containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } } } });
      assert.equal(res.status, 201, await res.text());
      const copy = await Sandbox.create('from-cp-gvisor', { timeoutMs: 600_000 });
      made.push(copy);
      await assertGoesOn(copy, before, counter.pid, 'the sandbox from the Checkpoint');
      await assertGoesOn(sbx, before, counter.pid, 'the source (keepRunning)');
    } finally {
      for (const s of made) await s.kill().catch(() => {});
      await w.apiFetch(`${base}/sandboxtemplates/from-cp-gvisor`, { method: 'DELETE' });
      await w.apiFetch(`${base}/checkpoints/cp-gvisor`, { method: 'DELETE' });
    }
  });

// The server killed while a fork is capturing the source's memory (the node's staging
// directory exists): after the restart the source goes on where it was (restored if the crash
// left it hibernated), any fork that exists goes on too, and once the fork's short-lived
// checkpoint is collected nothing of the capture is left on the node.
test('kill -9 of the server during a gvisor fork: the source goes on, nothing is left',
  { skip: !HAVE_RUNSC && 'runsc is not installed', timeout: 300_000 }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    // 150 MB in memory makes the checkpoint last long enough to land in.
    const counter = await sbx.commands.run(COUNTER.replace('i = 0',
      'i = 0; held = os.urandom(150 << 20)'), { background: true });
    await sbx.files.write('/home/user/kept.txt', 'from the source');
    const before = await counting(sbx);
    const known = new Set((await Sandbox.list().nextItems()).map((x) => x.sandboxId));
    const memory = path.join(w.dataDir, 'node', 'memory');
    const entries = () => (existsSync(memory) ? readdirSync(memory) : []);
    const pending = w.api('POST', `/sandboxes/${sbx.sandboxId}/fork`,
      { body: { count: 2, timeout: 600 } }).catch((e) => e);
    for (let i = 0; !entries().some((n) => n.endsWith('.partial')); i++) {
      assert.ok(i < 60_000, 'the capture never started');
      await sleep(1);
    }
    await sleep(200);
    let cut = [];
    await w.crash({ whileDown: () => { cut = entries(); } });
    await pending;
    // The premise: the crash cut the capture short (its staging directory was still there).
    assert.ok(cut.some((n) => n.endsWith('.partial')), `nothing was under way: ${cut}`);
    useEnv(w);
    // Its request died with the server: the capture is not made again (that would stop the
    // source's processes a second time, cutting the commands it serves by then).
    const cp = await forkCheckpointAfterCrash(w);
    assert.equal(cp.status.phase, 'Failed', JSON.stringify(cp.status));
    assert.match(cp.status.message, /cut short by a restart/);

    const again = await Sandbox.connect(sbx.sandboxId);
    await assertGoesOn(again, before, counter.pid, 'the source after the crash');
    const deadline = Date.now() + 120_000;
    for (;;) {
      const res = await w.apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/checkpoints`);
      const left = ((await res.json()).items ?? []).filter((c) => c.metadata.name.startsWith('fork-'));
      if (left.length === 0 && entries().length === 0) break;
      assert.ok(Date.now() < deadline,
        `left after the crash: ${left.map((c) => c.metadata.name)} ${entries()}`);
      await sleep(250);
    }
    const forks = (await Sandbox.list().nextItems()).filter((x) => !known.has(x.sandboxId));
    assert.ok(forks.length <= 2, `${forks.length} forks`);
    for (const f of forks) {
      const copy = await Sandbox.connect(f.sandboxId);
      await assertGoesOn(copy, before, counter.pid, `fork ${f.sandboxId}`);
      await copy.kill();
    }
    await assertGoesOn(again, before, counter.pid, 'the source at the end');
    await again.kill();
  });

// runsc 20221219 cannot save a TCP socket that a process watches with epoll (an asyncio
// server): the checkpoint ends the processes, and the pause keeps the files, saying why.
test('a gvisor sandbox whose processes cannot be saved is paused with its files only, and says why',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    await sbx.commands.run(`python3 -c "
import asyncio
async def main():
    await asyncio.start_server(lambda r, w: None, '127.0.0.1', 7000)
    await asyncio.sleep(3600)
asyncio.run(main())
"`, { background: true });
    await sbx.files.write('/home/user/kept.txt', 'still here');
    for (let i = 0; ; i++) {
      const up = await sbx.commands.run('netstat -tln 2>/dev/null | grep -c :7000 || true');
      if (up.stdout.trim() === '1' || i > 50) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    assert.equal(await sbx.pause(), true);
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused');
    const obj = await w.sandboxObject(sbx.sandboxId);
    assert.equal(pausedReason(obj), 'HibernateFailed', JSON.stringify(obj?.status));
    assert.match(obj.status.message, /epoll cannot be saved.*files are kept/);

    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal(await again.files.read('/home/user/kept.txt'), 'still here');
    assert.equal((await again.commands.run('pgrep -f start_[s]erver || true')).stdout, '',
      'the server survived a checkpoint that could not save it');
    await again.kill();
  });

test('an idle gvisor sandbox hibernates; the next request is parked while it is restored',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const ns = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default`;
    const res = await w.apiFetch(`${ns}/sandboxtemplates`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
        metadata: { name: 'gvisor-idle-2s' },
        spec: {
          pauseStrategy: { idleSeconds: 2 },
          template: { spec: { runtimeClassName: 'gvisor',
            containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } },
        },
      }),
    });
    assert.equal(res.status, 201, await res.text());
    const sbx = await Sandbox.create('gvisor-idle-2s', { timeoutMs: 600_000 });
    const counter = await sbx.commands.run(COUNTER, { background: true });
    await counter.disconnect();  // a streamed command is traffic: let go of it
    await new Promise((r) => setTimeout(r, 500));
    const before = await count(sbx);
    for (let i = 0; (await Sandbox.getInfo(sbx.sandboxId)).state !== 'paused'; i++) {
      assert.ok(i < 400, 'an idle gvisor sandbox was not paused');
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; ; i++) {
      const reason = pausedReason(await w.sandboxObject(sbx.sandboxId));
      if (reason === 'HibernatePauseSucceed') break;
      assert.ok(i < 200, `not hibernated: ${reason}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Parked in the gateway while the restore runs; the counter goes on from its memory.
    const after = await count(sbx);
    assert.ok(after >= before, `the counter started over (${before} → ${after})`);
    assert.equal((await sbx.commands.run(`kill -0 ${counter.pid} && echo same`)).stdout, 'same\n');
    await sbx.kill();
    await w.apiFetch(`${ns}/sandboxtemplates/gvisor-idle-2s`, { method: 'DELETE' });
  });

test('an idle gvisor pool hibernates its member to disk; a create restores it for the caller',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sets = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets`;
    const res = await w.apiFetch(sets, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet',
        metadata: { name: 'gvisor-idle-pool' },
        spec: {
          replicas: 1,
          pauseStrategy: { idleSeconds: 1 },
          template: { spec: { runtimeClassName: 'gvisor',
            containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } },
        },
      }),
    });
    assert.equal(res.status, 201, await res.text());
    const memberOf = async () => (await w.sandboxObjects()).find(
      (o) => o.metadata.labels?.['agents.kruise.io/sandbox-pool'] === 'gvisor-idle-pool' &&
        o.metadata.labels['agents.kruise.io/sandbox-claimed'] === 'false');
    let member;
    for (let i = 0; ; i++) {
      member = await memberOf();
      if (pausedReason(member) === 'HibernatePauseSucceed') break;
      assert.ok(i < 1200, `the idle member was not hibernated: ${JSON.stringify(member?.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // HibernatePauseSucceed: runsc wrote its processes and memory to disk and it holds none.
    const id = member.metadata.labels['agents.kruise.io/sandbox-id'];
    // The set's status is the controller's next pass over its members: it follows the member's.
    for (let i = 0; ; i++) {
      const set = await (await w.apiFetch(`${sets}/gvisor-idle-pool`)).json();
      if (set.status?.hibernatedReplicas === 1) break;
      assert.ok(i < 100, `the set does not count its hibernated member: ${JSON.stringify(set.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    // Stop refills: the next create must find the hibernated member, not a fresh one.
    const patched = await w.apiFetch(`${sets}/gvisor-idle-pool`, {
      method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { scaleStrategy: { maxUnavailable: 0 } } }),
    });
    assert.equal(patched.status, 200, await patched.text());
    const sbx = await Sandbox.create('gvisor-idle-pool', { envs: { GREETING: 'restored' } });
    try {
      assert.equal(sbx.sandboxId, id, 'the create did not get the hibernated member');
      assert.equal((await sbx.commands.run('echo $GREETING')).stdout, 'restored\n');
      const o = await w.sandboxObject(id);
      assert.equal(o.status.phase, 'Running');
      assert.equal(pausedReason(o), 'ResumeSucceed');
    } finally {
      await sbx.kill();
      await w.apiFetch(`${sets}/gvisor-idle-pool`, { method: 'DELETE' });
    }
  });
