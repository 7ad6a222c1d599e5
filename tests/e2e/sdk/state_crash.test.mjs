// kill -9 of the server in the middle of a snapshot and of a fork, then a restart on the same
// data dir: each either completes and is usable or is absent, the source keeps running (it is
// not left frozen), and the image store holds no partial layer. The server gets an image store
// of its own (WARREN_IMAGE_ROOT), so whatever a crash leaves there is this suite's to count.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Sandbox } from 'e2b';
import { forkCheckpointAfterCrash, startWarren, useEnv, sleep, TEMPLATE } from './harness.mjs';

let w;
let imageRoot;
before(async () => {
  imageRoot = mkdtempSync(path.join(tmpdir(), 'warren-crash-images-'));
  w = await startWarren({ env: { WARREN_IMAGE_ROOT: imageRoot } });
  useEnv(w);
});
after(async () => {
  await w?.stop();
  rmSync(imageRoot, { recursive: true, force: true });
});

const T = { timeout: 180_000 };
const BIG = '/home/user/big';

const checkpoints = async () => {
  const res = await w.apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/checkpoints`);
  return (await res.json()).items ?? [];
};

// A source whose writable layer takes a while to copy, so a crash lands in the middle.
async function bigSource() {
  const src = await Sandbox.create(TEMPLATE, { timeoutMs: 600_000 });
  const { stdout } = await src.commands.run(
    `head -c 300M /dev/urandom > ${BIG} && sha256sum ${BIG} | cut -d' ' -f1`, { timeoutMs: 120_000 });
  return { src, sum: stdout.trim() };
}

// Sends `target` and kills the server once the copy is under way (the layer being written in
// the store's staging directory), then restarts it.
async function crashDuring(target, body) {
  const pending = w.api('POST', target, { body }).catch((e) => e);
  for (let i = 0; ; i++) {
    if (leftovers().staging.length > 0) break;
    assert.ok(i < 20000, 'the copy never started');
    await sleep(1);
  }
  await w.crash();
  await pending;
  useEnv(w);
}

async function until(what, fn, ms = 90_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert.ok(Date.now() < deadline, `${what} within ${ms} ms`);
    await sleep(200);
  }
}

// What a crash may leave in the store: staging directories of dead copies (removed when the
// store opens again) and layers no image or lease holds (collected).
function leftovers() {
  const staging = readdirSync(path.join(imageRoot, 'staging')).filter((n) => !n.endsWith('.lock'));
  return { staging };
}

async function sha(sbx) {
  return (await sbx.commands.run(`sha256sum ${BIG} | cut -d' ' -f1`)).stdout.trim();
}

const layerCount = () => readdirSync(path.join(imageRoot, 'layers', 'sha256')).length;

test('kill -9 during a snapshot: after the restart it completes, usable, the source runs', T, async () => {
  const { src, sum } = await bigSource();
  const imageLayers = layerCount();  // the built-in images' (imported before the first create)
  await crashDuring(`/sandboxes/${src.sandboxId}/snapshots`, { name: 'crashed' });
  // The premise: the crash cut a copy short, and the store found its remains on opening.
  await until('the restarted store opened', async () => /removed stale staging dirs/.test(w.log()));

  // Not left frozen: the restarted node found it paused mid-capture and thawed it.
  const again = await Sandbox.connect(src.sandboxId);
  assert.equal((await again.commands.run('echo alive')).stdout, 'alive\n');
  const [snap] = await until('the snapshot is listed',
    async () => { const l = await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems(); return l.length ? l : null; });
  assert.deepEqual(snap.names, ['crashed']);
  const copy = await Sandbox.create(snap.snapshotId);
  assert.equal(await sha(copy), sum, 'the snapshot holds the whole file');
  assert.deepEqual(leftovers().staging, [], 'a partial copy was left in staging');

  await copy.kill();
  await again.kill();
  assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
  // Its layer goes once nothing uses it.
  await until('the snapshot layer is collected', async () => layerCount() === imageLayers, 30_000);
});

test('kill -9 during a fork: every fork that exists works, the checkpoint goes', T, async () => {
  const { src, sum } = await bigSource();
  const before = new Set((await Sandbox.list().nextItems()).map((s) => s.sandboxId));
  await crashDuring(`/sandboxes/${src.sandboxId}/fork`, { count: 2, timeout: 600 });
  // Its request died with the server: the capture is not made again (that would freeze the
  // source a second time for a checkpoint nobody reads).
  const cp = await forkCheckpointAfterCrash(w);
  assert.equal(cp.status.phase, 'Failed', JSON.stringify(cp.status));
  assert.match(cp.status.message, /cut short by a restart/);

  const again = await Sandbox.connect(src.sandboxId);
  assert.equal((await again.commands.run('echo alive')).stdout, 'alive\n');
  // The fork's checkpoint is unlisted and short-lived: its TTL collects it after the crash.
  await until('the fork checkpoint is deleted',
    async () => !(await checkpoints()).some((c) => c.metadata.name.startsWith('fork-')));
  const forks = (await Sandbox.list().nextItems()).filter((s) => !before.has(s.sandboxId));
  assert.ok(forks.length <= 2, `${forks.length} forks`);
  for (const f of forks) {
    const sbx = await Sandbox.connect(f.sandboxId);
    assert.equal(await sha(sbx), sum, `fork ${f.sandboxId} has the source's file`);
    await sbx.kill();
  }
  assert.deepEqual(leftovers().staging, []);
  await again.kill();
});
