// Snapshots, fork and filesystem-only pause through the unmodified E2B SDK (npm e2b@2.51.0)
// against a real warren server: what a snapshot captures (files, deletions, replaced
// directories) and what it does not (later changes, other clones' writes, processes), the
// snapshot list and delete, and the errors bad requests get.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, SandboxError, SandboxNotFoundError } from 'e2b';
import { startWarren, useEnv, sleep, TEMPLATE } from './harness.mjs';

let w;
before(async () => {
  w = await startWarren();
  useEnv(w);
});
after(async () => { await w?.stop(); });

const T = { timeout: 30_000 };
// Forks get an explicit life: the API's default for a fork is 15 s.
const FORK_TIMEOUT_MS = 300_000;
const MISSING_ID = 'iaaaaaaaaaaaaaaaaaaaa';

// Everything a test makes, removed after it whether it passed or not.
let live = [];
let snapshots = [];
afterEach(async () => {
  for (const s of live) await Sandbox.kill(s.sandboxId).catch(() => {});
  for (const id of snapshots) await Sandbox.deleteSnapshot(id).catch(() => {});
  live = [];
  snapshots = [];
});

async function create(template = TEMPLATE, opts) {
  const sbx = await Sandbox.create(template, opts);
  live.push(sbx);
  return sbx;
}

async function snapshot(sbx, opts) {
  const info = await sbx.createSnapshot(opts);
  assert.equal(typeof info.snapshotId, 'string');
  assert.ok(info.snapshotId.length > 0);
  snapshots.push(info.snapshotId);
  return info;
}

async function fork(sbx, count) {
  const results = await sbx.fork({ count, timeoutMs: FORK_TIMEOUT_MS });
  for (const r of results) if (r instanceof Sandbox) live.push(r);
  assert.equal(results.length, count);
  for (const r of results) assert.ok(r instanceof Sandbox, `a fork failed: ${r?.message}`);
  return results;
}

async function listSnapshotIds(opts) {
  const paginator = Sandbox.listSnapshots(opts);
  const ids = [];
  while (paginator.hasNext) ids.push(...(await paginator.nextItems()).map((s) => s.snapshotId));
  return ids.sort();
}

const run = async (sbx, cmd, opts) => (await sbx.commands.run(cmd, opts)).stdout;
const sleepers = (sbx) => run(sbx, 'pgrep -x sleep || true');

// The background command's pid is bash's until bash execs sleep; wait for the sleep itself,
// so what is looked for later is a process that really existed.
async function startSleeper(sbx) {
  const { pid } = await sbx.commands.run('sleep 1000', { background: true });
  for (let i = 0; (await sleepers(sbx)) !== `${pid}\n`; i++) {
    assert.ok(i < 100, `pid ${pid} never became sleep`);
    await sleep(20);
  }
  return pid;
}

async function rejectsWithStatus(promise, status, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof SandboxError, `${e?.name}: ${e?.message}`);
    assert.equal(e.statusCode, status, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

test('a snapshot is the filesystem at that moment; each sandbox from it has its own copy', T, async () => {
  const src = await create();
  await src.files.write('/home/user/a.txt', 'from-source');
  // A file and a directory of the image itself: removed, and replaced by something else.
  await run(src, 'rm /etc/debian_version && rm -r /etc/skel && mkdir /etc/skel && ' +
    'echo new > /etc/skel/only.txt', { user: 'root' });
  const name = `state-${process.pid}-${Date.now()}`;
  const snap = await snapshot(src, { name });
  assert.ok(snap.names.some((n) => n.includes(name)), `names ${JSON.stringify(snap.names)}`);
  await src.files.write('/home/user/a.txt', 'changed-later');

  const x = await create(snap.snapshotId);
  const y = await create(snap.snapshotId);
  assert.notEqual(x.sandboxId, y.sandboxId);
  for (const c of [x, y]) {
    assert.equal(await c.files.read('/home/user/a.txt'), 'from-source');
    assert.equal(await run(c, 'whoami; pwd; stat -c %U a.txt'), 'user\n/home/user\nuser\n');
    assert.equal(await run(c, 'test -e /etc/debian_version && echo present || echo gone'), 'gone\n');
    assert.equal(await run(c, 'ls -A /etc/skel; cat /etc/skel/only.txt'), 'only.txt\nnew\n');
  }
  await x.files.write('/home/user/b.txt', 'only in x');
  assert.equal(await y.files.exists('/home/user/b.txt'), false, 'y sees what x wrote');
  assert.equal(await src.files.exists('/home/user/b.txt'), false, 'the source sees what x wrote');

  // Snapshotting did not stop or rewind the source.
  assert.equal(await src.isRunning(), true);
  assert.equal((await src.getInfo()).state, 'running');
  assert.equal(await src.files.read('/home/user/a.txt'), 'changed-later');
});

test('fork ×3: new sandboxes with the files, without the processes; the source runs on', T, async () => {
  const src = await create(TEMPLATE, { timeoutMs: 600_000 });
  await src.files.write('/home/user/a.txt', 'from-source');
  const pid = await startSleeper(src);
  const endAt = (await src.getInfo()).endAt.getTime();

  const forks = await fork(src, 3);
  const ids = forks.map((f) => f.sandboxId);
  assert.equal(new Set([...ids, src.sandboxId]).size, 4, `ids ${ids} (source ${src.sandboxId})`);
  for (const f of forks) {
    assert.match(f.sandboxId, /^i[a-z0-9]{20}$/);
    assert.equal(await f.files.read('/home/user/a.txt'), 'from-source');
    assert.equal(await sleepers(f), '', `the source's sleep is running in fork ${f.sandboxId}`);
    assert.equal(await run(f, 'echo fresh'), 'fresh\n');
  }
  await forks[0].files.write('/home/user/mine.txt', 'fork 0');
  assert.equal(await forks[1].files.exists('/home/user/mine.txt'), false);
  assert.equal(await src.files.exists('/home/user/mine.txt'), false);

  // The source keeps its id, its process and its expiry.
  assert.equal(await src.isRunning(), true);
  assert.equal(await run(src, `kill -0 ${pid} && echo alive`), 'alive\n');
  const info = await src.getInfo();
  assert.equal(info.state, 'running');
  assert.equal(info.endAt.getTime(), endAt, 'fork changed the source\'s expiry');
});

test('listSnapshots filters by sandbox and pages; deleteSnapshot removes one for good', T, async () => {
  const a = await create();
  const b = await create();
  await a.files.write('/home/user/a.txt', 'kept');
  const a1 = (await snapshot(a)).snapshotId;
  const a2 = (await snapshot(a)).snapshotId;
  const b1 = (await snapshot(b)).snapshotId;
  assert.equal(new Set([a1, a2, b1]).size, 3);

  assert.deepEqual(await listSnapshotIds({ sandboxId: a.sandboxId }), [a1, a2].sort());
  assert.deepEqual(await listSnapshotIds({ sandboxId: b.sandboxId }), [b1]);
  const mine = a.listSnapshots();
  assert.deepEqual((await mine.nextItems()).map((s) => s.snapshotId).sort(), [a1, a2].sort());
  assert.equal(mine.hasNext, false);
  const all = await listSnapshotIds();
  for (const id of [a1, a2, b1]) assert.ok(all.includes(id), `${id} missing from ${all}`);

  const paged = Sandbox.listSnapshots({ sandboxId: a.sandboxId, limit: 1 });
  const pages = [];
  while (paged.hasNext) {
    const items = await paged.nextItems();
    assert.equal(items.length, 1);
    pages.push([items[0].snapshotId, paged.hasNext]);
  }
  assert.deepEqual(pages.map((p) => p[1]), [true, false]);
  assert.deepEqual(pages.map((p) => p[0]).sort(), [a1, a2].sort());

  assert.equal(await Sandbox.deleteSnapshot(a1), true);
  assert.equal(await Sandbox.deleteSnapshot(a1), false, 'a second delete reports not found');
  assert.equal(await Sandbox.deleteSnapshot(`nosnapshot${Date.now()}`), false);
  assert.deepEqual(await listSnapshotIds({ sandboxId: a.sandboxId }), [a2]);
  await assert.rejects(Sandbox.create(a1), (e) => {
    assert.ok(e instanceof SandboxError, `${e?.name}: ${e?.message}`);
    assert.ok([400, 404].includes(e.statusCode), e.message);
    assert.ok(e.message.includes(a1), `the error does not name ${a1}: ${e.message}`);
    return true;
  });

  // A snapshot outlives the sandbox it came from.
  await a.kill();
  const c = await create(a2);
  assert.equal(await c.files.read('/home/user/a.txt'), 'kept');
});

test('pause without memory keeps the files, drops the processes; connect boots it again', T, async () => {
  const sbx = await create();
  const id = sbx.sandboxId;
  await startSleeper(sbx);
  await sbx.files.write('/home/user/keep.txt', 'kept on disk');
  assert.equal(await sbx.pause({ keepMemory: false }), true);
  assert.equal(await sbx.isRunning(), false);
  assert.equal((await Sandbox.getInfo(id)).state, 'paused');

  const again = await Sandbox.connect(id);
  assert.equal(again.sandboxId, id);
  assert.equal(await again.isRunning(), true);
  assert.equal((await Sandbox.getInfo(id)).state, 'running');
  assert.equal(await again.files.read('/home/user/keep.txt'), 'kept on disk');
  assert.equal(await sleepers(again), '', 'a process survived a pause without memory');
  assert.equal(await run(again, 'echo back; whoami'), 'back\nuser\n');
  // The first handle still works: the envd access token survived the reboot.
  assert.equal(await run(sbx, 'cat keep.txt'), 'kept on disk');
});

test("connect with onResume 'reboot' drops a memory pause's processes, keeps its files", T, async () => {
  const sbx = await create();
  const id = sbx.sandboxId;
  await startSleeper(sbx);
  await sbx.files.write('/home/user/keep.txt', 'kept');
  assert.equal(await sbx.pause(), true);  // memory kept: frozen
  const again = await Sandbox.connect(id, { onResume: 'reboot' });
  assert.equal((await Sandbox.getInfo(id)).state, 'running');
  assert.equal(await again.files.read('/home/user/keep.txt'), 'kept');
  assert.equal(await sleepers(again), '', 'a process survived a reboot');
  // A plain pause and connect afterwards keeps memory again.
  const pid = await startSleeper(again);
  assert.equal(await again.pause(), true);
  const restored = await Sandbox.connect(id);
  assert.equal(await sleepers(restored), `${pid}\n`);
});

test('a timeout that pauses without memory (autoPauseMemory false) keeps the files only', T, async () => {
  const sbx = await create(TEMPLATE, {
    timeoutMs: 2_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } },
  });
  await startSleeper(sbx);
  await sbx.files.write('/home/user/keep.txt', 'kept');
  for (let i = 0; (await Sandbox.getInfo(sbx.sandboxId)).state !== 'paused'; i++) {
    assert.ok(i < 200, 'the timeout did not pause it');
    await sleep(50);
  }
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
  assert.equal(await again.files.read('/home/user/keep.txt'), 'kept');
  assert.equal(await sleepers(again), '', 'a process survived a pause without memory');
});

test('bad input: fork count out of range, unknown or paused sandbox', T, async () => {
  const sbx = await create();
  await rejectsWithStatus(sbx.fork({ count: 0 }), 400, /count/);
  await rejectsWithStatus(sbx.fork({ count: 1000 }), 400, /count/);
  await rejectsWithStatus(sbx.fork({ count: 11 }), 400, /count/);
  assert.equal(await sbx.isRunning(), true, 'a refused fork disturbed the source');

  await assert.rejects(Sandbox.createSnapshot(MISSING_ID), SandboxNotFoundError);
  await assert.rejects(Sandbox.fork(MISSING_ID, { count: 1 }), SandboxNotFoundError);
  assert.deepEqual(await listSnapshotIds({ sandboxId: MISSING_ID }), []);

  assert.equal(await sbx.pause(), true);
  await rejectsWithStatus(sbx.createSnapshot(), 409, /paused/);
  assert.deepEqual(await listSnapshotIds({ sandboxId: sbx.sandboxId }), [],
    'a refused snapshot was kept');
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused');
});

// The resource API as a team uses it: its key as a Bearer token.
async function resource(key, method, target, body) {
  const res = await fetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1${target}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

// A Sandbox another team writes by hand, trying to start from what is not its own; returns the
// status the node gave it once it ended.
async function failedStart(key, ns, name, { annotations = {}, image = 'base' } = {}) {
  const made = await resource(key, 'POST', `/namespaces/${ns}/sandboxes`, {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox',
    metadata: { name, annotations },
    spec: { template: { spec: { containers: [{ name: 'main', image }] } } },
  });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  try {
    for (let i = 0; ; i++) {
      const got = await resource(key, 'GET', `/namespaces/${ns}/sandboxes/${name}`);
      const status = got.json?.status ?? {};
      if (status.phase === 'Failed') return status;
      assert.notEqual(status.phase, 'Running', `started from another team's snapshot: ${name}`);
      assert.ok(i < 150, `still ${status.phase} after 15 s`);
      await sleep(100);
    }
  } finally {
    await resource(key, 'DELETE', `/namespaces/${ns}/sandboxes/${name}`);
  }
}

test("another team can neither see, use, fork nor delete a team's snapshot", T, async () => {
  const team = async (name) => {
    const made = await w.api('POST', '/api-keys', { body: { team: name } });
    assert.equal(made.status, 201, made.text);
    return made.json.key;
  };
  const keyA = await team('snap-team-a');
  const keyB = await team('snap-team-b');
  const src = await Sandbox.create(TEMPLATE, { apiKey: keyA });
  live.push(src);
  await src.files.write('/home/user/secret.txt', 'team a only');
  const snap = await src.createSnapshot({ name: 'mine' });
  snapshots.push(snap.snapshotId);
  const asB = { apiKey: keyB };

  const listedByB = await Sandbox.listSnapshots(asB).nextItems();
  assert.ok(!listedByB.some((s) => s.snapshotId === snap.snapshotId), 'listed to another team');
  assert.deepEqual(await Sandbox.listSnapshots({ ...asB, sandboxId: src.sandboxId }).nextItems(), []);
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, asB), false);
  await assert.rejects(Sandbox.create(snap.snapshotId, asB), (e) => {
    assert.equal(e.statusCode, 400, e.message);
    assert.match(e.message, /not found/);
    return true;
  });
  await assert.rejects(Sandbox.fork(src.sandboxId, { ...asB, count: 1 }), SandboxNotFoundError);
  await assert.rejects(Sandbox.createSnapshot(src.sandboxId, asB), SandboxNotFoundError);

  // By hand through the resource API: the checkpoint is looked up in team b's own namespace,
  // and the image the snapshot became cannot be named directly.
  const byAnnotation = await failedStart(keyB, 'snap-team-b', 'steal-by-annotation',
    { annotations: { 'agents.kruise.io/restore-from': snap.snapshotId } });
  assert.match(byAnnotation.message, /not found/);
  const cps = await (await w.apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/` +
    `snap-team-a/checkpoints/${snap.snapshotId}`)).json();
  assert.match(cps.status.checkpointId, /^snapshot\//);
  const byImage = await failedStart(keyB, 'snap-team-b', 'steal-by-image',
    { image: cps.status.checkpointId });
  assert.match(byImage.message, /Warren's own/);

  // Team a still has it.
  const mine = await Sandbox.create(snap.snapshotId, { apiKey: keyA });
  live.push(mine);
  assert.equal(await mine.files.read('/home/user/secret.txt'), 'team a only');
});

test('the Checkpoint kind: keepRunning false pauses, memory is refused, a template restores, the TTL deletes', T, async () => {
  const src = await create();
  await src.files.write('/home/user/cp.txt', 'checkpointed');
  const ns = '/namespaces/default';
  const checkpoint = (name, spec) => resource(w.adminKey, 'POST', `${ns}/checkpoints`, {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Checkpoint', metadata: { name }, spec,
  });
  const phaseOf = async (name) => {
    for (let i = 0; ; i++) {
      const got = await resource(w.adminKey, 'GET', `${ns}/checkpoints/${name}`);
      const phase = got.json?.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') return got.json;
      assert.ok(i < 300, `checkpoint ${name} still ${phase}`);
      await sleep(50);
    }
  };

  // A claimed pool member keeps its own object name; a cold create's is its id.
  const objects = await w.sandboxObjects();
  const sandboxName = objects.find((o) =>
    o.metadata.labels?.['agents.kruise.io/sandbox-id'] === src.sandboxId).metadata.name;
  const memory = await checkpoint('cp-memory', { sandboxName, persistentContents: ['memory'] });
  assert.equal(memory.status, 201, JSON.stringify(memory.json));
  const refused = await phaseOf('cp-memory');
  assert.equal(refused.status.phase, 'Failed');
  assert.match(refused.status.message, /memory/);

  const made = await checkpoint('cp-files', {
    sandboxName, keepRunning: false, ttlAfterFinished: '4s',
    persistentContents: ['filesystem'],
  });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  const done = await phaseOf('cp-files');
  assert.equal(done.status.phase, 'Succeeded', done.status.message);
  assert.match(done.status.checkpointId, /^snapshot\//);
  assert.ok(done.status.completionTime);
  // keepRunning: false paused the source, files kept.
  for (let i = 0; (await Sandbox.getInfo(src.sandboxId)).state !== 'paused'; i++) {
    assert.ok(i < 100, 'the source was not paused');
    await sleep(50);
  }

  // A template of one's own that restores from it.
  const tpl = await resource(w.adminKey, 'POST', `${ns}/sandboxtemplates`, {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
    metadata: { name: 'from-cp-files', annotations: { 'agents.kruise.io/restore-from': 'cp-files' } },
    spec: { template: { spec: { containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } } },
  });
  assert.equal(tpl.status, 201, JSON.stringify(tpl.json));
  try {
    const restored = await create('from-cp-files');
    assert.equal(await restored.files.read('/home/user/cp.txt'), 'checkpointed');
    // The TTL deletes the checkpoint; a later create from it is refused, naming it.
    for (let i = 0; (await resource(w.adminKey, 'GET', `${ns}/checkpoints/cp-files`)).status !== 404; i++) {
      assert.ok(i < 200, 'ttlAfterFinished did not delete the checkpoint');
      await sleep(50);
    }
    await assert.rejects(create('from-cp-files'), (e) => {
      assert.match(e.message, /cp-files/);
      return true;
    });
    // The sandbox made from it keeps its files: its layer is leased, not the checkpoint's.
    assert.equal(await restored.files.read('/home/user/cp.txt'), 'checkpointed');
  } finally {
    await resource(w.adminKey, 'DELETE', `${ns}/sandboxtemplates/from-cp-files`);
    await resource(w.adminKey, 'DELETE', `${ns}/checkpoints/cp-memory`);
  }
});

test("a SandboxSet of a snapshot's template keeps warm sandboxes on its files; a claim gets one", { timeout: 120_000 }, async () => {
  const src = await create();
  await src.files.write('/home/user/warm.txt', 'from the snapshot');
  const snap = await snapshot(src);
  const set = `snappool-${process.pid}`;
  const made = await resource(w.adminKey, 'POST', '/namespaces/default/sandboxsets', {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name: set },
    spec: { replicas: 1, templateRef: { name: snap.snapshotId } },
  });
  assert.equal(made.status, 201, JSON.stringify(made.json));
  try {
    await w.waitPool(set);
    const claimed = await create(set);
    const object = await w.sandboxObject(claimed.sandboxId);
    assert.equal(object.metadata.labels['agents.kruise.io/sandbox-claimed'], 'true', 'a warm member');
    assert.equal(await claimed.files.read('/home/user/warm.txt'), 'from the snapshot');
  } finally {
    await resource(w.adminKey, 'DELETE', `/namespaces/default/sandboxsets/${set}`);
  }
});

test('an idle policy pauses a sandbox nobody talks to; the next request wakes it, parked', T, async () => {
  const ns = '/namespaces/default';
  const tpl = await resource(w.adminKey, 'POST', `${ns}/sandboxtemplates`, {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate', metadata: { name: 'idle-2s' },
    spec: {
      pauseStrategy: { idleSeconds: 2 },
      template: { spec: { containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } },
    },
  });
  assert.equal(tpl.status, 201, JSON.stringify(tpl.json));
  try {
    const sbx = await create('idle-2s', { timeoutMs: 600_000 });
    const endAt = (await Sandbox.getInfo(sbx.sandboxId)).endAt.getTime();
    // A background command whose output the client still streams is traffic: let go of it.
    const handle = await sbx.commands.run('sleep 1000', { background: true });
    await handle.disconnect();
    const pid = handle.pid;
    for (let i = 0; (await sleepers(sbx)) !== `${pid}\n`; i++) {
      assert.ok(i < 100, `pid ${pid} never became sleep`);
      await sleep(20);
    }
    // A command that runs longer than the idle time keeps it awake while it runs.
    await sbx.commands.run('sleep 3.5');
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running', 'paused mid-command');
    for (let i = 0; (await Sandbox.getInfo(sbx.sandboxId)).state !== 'paused'; i++) {
      assert.ok(i < 200, 'an idle sandbox was not paused');
      await sleep(50);
    }
    // The next request is parked while it resumes, and finds its processes (memory kept).
    assert.equal(await sleepers(sbx), `${pid}\n`);
    const info = await Sandbox.getInfo(sbx.sandboxId);
    assert.equal(info.state, 'running');
    assert.equal(info.endAt.getTime(), endAt, 'waking changed its timeout');
  } finally {
    await resource(w.adminKey, 'DELETE', `${ns}/sandboxtemplates/idle-2s`);
  }
});

test('pauseStrategy.idleSeconds out of range is refused naming the field', T, async () => {
  const bad = await resource(w.adminKey, 'POST', '/namespaces/default/sandboxtemplates', {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate', metadata: { name: 'idle-bad' },
    spec: {
      pauseStrategy: { idleSeconds: -1 },
      template: { spec: { containers: [{ name: 'main', image: 'base' }] } },
    },
  });
  assert.equal(bad.status, 422, JSON.stringify(bad.json));
  assert.match(bad.json.message, /spec\.pauseStrategy\.idleSeconds/);
});
