// The E2B SDK (npm e2b@2.51.0, unmodified) against a pool-backed template: templateID names a
// SandboxSet, so Sandbox.create claims a warm member instead of starting one. Same server,
// same three environment variables as lifecycle.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Sandbox, SandboxNotFoundError } from 'e2b';
import { startWarren, useEnv, sleep } from './harness.mjs';

let w;

before(async () => {
  w = await startWarren();
  useEnv(w);
});
const SETS = '/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets';

after(async () => {
  // The pools go first, or they would refill what the harness deletes.
  for (const name of ['pool-base', 'pool-recycle', 'pool-idle-memory', 'pool-idle-files',
    'pool-stopped-envd']) {
    await w.apiFetch(`${w.apiUrl}${SETS}/${name}`, { method: 'DELETE' }).catch(() => {});
  }
  await w?.stop();
});

async function applySet(name, replicas, { recycle = false, pauseStrategy } = {}) {
  const body = {
    apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet',
    metadata: { name, annotations: recycle ? { 'agents.kruise.io/cleanup-enabled': 'true' } : {} },
    spec: { replicas, template: { spec: { containers: [{ name: 'main', image: 'base' }] } } },
  };
  if (pauseStrategy) body.spec.pauseStrategy = pauseStrategy;
  const res = await w.apiFetch(w.apiUrl + SETS, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  assert.equal(res.status, 201, await res.text());
}

async function patchSet(name, patch) {
  const res = await w.apiFetch(`${w.apiUrl}${SETS}/${name}`, {
    method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify(patch),
  });
  assert.equal(res.status, 200, await res.text());
}

async function waitFor(what, fn, ms = 180000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v) return v;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}\n${w.log().slice(-4000)}`);
}

async function available(name) {
  const res = await w.apiFetch(`${w.apiUrl}${SETS}/${name}`);
  return (await res.json()).status?.availableReplicas ?? 0;
}

async function objectOf(sandboxId) {
  return (await w.sandboxObjects()).find(
    (o) => o.metadata.labels?.['agents.kruise.io/sandbox-id'] === sandboxId);
}

test('create from a pool: a warm member, initialised for the caller; the pool refills', async () => {
  await applySet('pool-base', 2);
  await waitFor('2 available in pool-base', async () => (await available('pool-base')) >= 2);
  const sbx = await Sandbox.create('pool-base', { envs: { GREETING: 'from the pool' },
    metadata: { suite: 'pool' } });
  try {
    assert.match(sbx.sandboxId, /^i[a-z0-9]{20}$/);
    assert.equal(await sbx.isRunning(), true);
    const r = await sbx.commands.run('echo "$GREETING as $(whoami) on $(hostname)"');
    assert.equal(r.stdout, `from the pool as user on ${sbx.sandboxId}\n`);
    // The node makes pool stock at a lower CPU priority; what runs in it, at the normal one.
    assert.equal((await sbx.commands.run('nice')).stdout, '0\n');
    await sbx.files.write('notes.txt', 'pooled\n');
    assert.equal(await sbx.files.read('notes.txt'), 'pooled\n');
    const info = await sbx.getInfo();
    assert.equal(info.templateId, 'pool-base');
    assert.deepEqual(info.metadata, { suite: 'pool' });
    // It was a pool member: claimed, detached from its set.
    const o = await objectOf(sbx.sandboxId);
    assert.equal(o.metadata.labels['agents.kruise.io/sandbox-pool'], 'pool-base');
    assert.equal(o.metadata.labels['agents.kruise.io/sandbox-claimed'], 'true');
    assert.equal((o.metadata.ownerReferences ?? []).length, 0);
    // Another key's sandbox list does not show it, and the pool refills behind the claim.
    await waitFor('pool-base refilled', async () => (await available('pool-base')) >= 2);
  } finally {
    await sbx.kill();
  }
  await assert.rejects(Sandbox.connect(sbx.sandboxId), SandboxNotFoundError);
});

test('a recycled sandbox keeps no file, process, env or token of its previous user', async () => {
  await applySet('pool-recycle', 1, { recycle: true });
  await waitFor('1 available in pool-recycle', async () => (await available('pool-recycle')) >= 1);
  // No refills from here on (maxUnavailable 0 lets nothing be created), so the member that
  // comes back from recycling is the one the next create gets.
  await patchSet('pool-recycle', { spec: { scaleStrategy: { maxUnavailable: 0 } } });

  const first = await Sandbox.create('pool-recycle', { envs: { OWNER: 'alice', ALICE_ONLY: 'a' } });
  const id = first.sandboxId;
  await first.files.write('/home/user/secret.txt', 'alice was here');
  await first.commands.run('mkdir -p /tmp/alice && echo x > /tmp/alice/x');
  await first.commands.run('sleep 3600', { background: true });
  // The token alice's SDK holds (the object carries it sealed, unreadable).
  const oldToken = first.envdAccessToken;
  assert.match(oldToken, /^[0-9a-f]{64}$/);
  assert.equal(JSON.stringify(await objectOf(id)).includes(oldToken), false);
  assert.equal(await first.kill(), true);
  // Killed for the caller at once, while the pool resets it.
  await assert.rejects(Sandbox.connect(id), SandboxNotFoundError);
  await waitFor('the sandbox back in its pool, reset', async () => {
    const o = await objectOf(id);
    return o && o.metadata.labels['agents.kruise.io/sandbox-claimed'] === 'false' &&
        o.status?.recycledCount === 1 && (await available('pool-recycle')) >= 1;
  });
  // The old token no longer opens envd through the gateway.
  const res = await fetch(`${w.sandboxUrl}/envs`, {
    headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': oldToken },
  });
  assert.equal(res.status, 401);

  const second = await Sandbox.create('pool-recycle', { envs: { OWNER: 'bob' } });
  try {
    assert.equal(second.sandboxId, id, 'the only member of the pool is the recycled one');
    assert.equal(await second.files.exists('/home/user/secret.txt'), false);
    assert.equal(await second.files.exists('/tmp/alice'), false);
    const ps = await second.commands.run('ps -eo args');
    assert.doesNotMatch(ps.stdout, /sleep 3600/);
    assert.equal((await second.commands.run('echo $OWNER')).stdout, 'bob\n');
    // Not merged under bob's either: the reset envd starts from the pool's settings alone.
    assert.equal((await second.commands.run('echo ${ALICE_ONLY:-unset}')).stdout, 'unset\n');
    assert.notEqual(second.envdAccessToken, oldToken);
  } finally {
    await second.kill();
  }
});

// The host pid of the sandbox's envd (pid 1 inside; its cgroup path names the sandbox).
function envdHostPid(sandboxId) {
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'envd' &&
          readFileSync(`/proc/${p}/cgroup`, 'utf8').includes(sandboxId)) return Number(p);
    } catch { /* gone */ }
  }
  throw new Error(`no envd process of sandbox ${sandboxId}`);
}

test('a claim does not wait for the member\'s envd: the caller\'s settings are there at its first request', async () => {
  const name = 'pool-stopped-envd';
  await applySet(name, 1);
  await waitFor(`1 available in ${name}`, async () => (await available(name)) >= 1);
  await patchSet(name, { spec: { scaleStrategy: { maxUnavailable: 0 } } });
  const member = (await w.sandboxObjects()).find(
    (o) => o.metadata.labels?.['agents.kruise.io/sandbox-pool'] === name);
  const memberId = member.metadata.labels['agents.kruise.io/sandbox-id'];
  // An envd that cannot run at all (as one starved of CPU on a busy host): a claim that sent it
  // POST /init would wait for it, then give the member up.
  const pid = envdHostPid(memberId);
  process.kill(pid, 'SIGSTOP');
  let sbx;
  try {
    sbx = await Sandbox.create(name, { envs: { WHO: 'carol' } });
    assert.equal(sbx.sandboxId, memberId, 'the stopped member was claimed, not another made');
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  try {
    // The first request envd serves after the claim holds carol's env vars, and her token (the
    // SDK sends it; envd refuses any other, as the recycling test shows of the previous one).
    assert.equal((await sbx.commands.run('echo $WHO')).stdout, 'carol\n');
  } finally {
    await sbx.kill();
  }
});

async function setStatus(name) {
  return (await (await w.apiFetch(`${w.apiUrl}${SETS}/${name}`)).json()).status ?? {};
}

// Seconds pid 1 of the sandbox has been running (the host's clock: no time namespace).
async function pid1Age(sbx) {
  const out = (await sbx.commands.run(
    "echo $(cut -d' ' -f1 /proc/uptime) $(cut -d' ' -f22 /proc/1/stat)")).stdout.trim();
  const [uptime, startTicks] = out.split(' ').map(Number);
  return uptime - startTicks / 100;
}

for (const [kind, pauseStrategy] of [
  ['memory', { idleSeconds: 1 }],
  ['files', { type: 'Stop', idleSeconds: 1 }],
]) {
  test(`an idle pool pauses its members (${kind}); a create wakes one for the caller`,
    async () => {
      const name = `pool-idle-${kind}`;
      await applySet(name, 2, { pauseStrategy });
      await waitFor(`both members of ${name} hibernated`, async () => {
        const st = await setStatus(name);
        return st.hibernatedReplicas === 2 && st.availableReplicas === 2;
      });
      const members = (await w.sandboxObjects()).filter(
        (o) => o.metadata.labels?.['agents.kruise.io/sandbox-pool'] === name &&
          o.metadata.labels['agents.kruise.io/sandbox-claimed'] === 'false');
      assert.equal(members.length, 2, 'stock, not refilled: nothing was made beside them');
      for (const m of members) {
        assert.equal(m.spec.paused, true);
        assert.equal(m.status.phase, 'Paused', JSON.stringify(m.status));
      }
      const ids = members.map((m) => m.metadata.labels['agents.kruise.io/sandbox-id']);
      // Each member ran at least its idle second before this.
      const hibernatedAt = Date.now();

      const sbx = await Sandbox.create(name, { envs: { GREETING: 'woken' } });
      try {
        assert.ok(ids.includes(sbx.sandboxId), `${sbx.sandboxId} is not one of ${ids}`);
        assert.equal((await sbx.commands.run('echo $GREETING')).stdout, 'woken\n');
        await sbx.files.write('/home/user/after.txt', 'awake');
        assert.equal(await sbx.files.read('/home/user/after.txt'), 'awake');
        const age = await pid1Age(sbx);
        if (kind === 'memory') {
          // Thawed: the same pid 1 that started with the member, before its idle second.
          assert.ok(age > (Date.now() - hibernatedAt) / 1000 + 0.5,
            `pid 1 is ${age.toFixed(1)} s old: restarted, not thawed`);
        } else {
          // Files only: its processes ended, the claim booted it again.
          assert.ok(age < (Date.now() - hibernatedAt) / 1000 + 0.5,
            `pid 1 is ${age.toFixed(1)} s old: it was not stopped`);
        }
        const o = await objectOf(sbx.sandboxId);
        assert.equal(o.metadata.labels['agents.kruise.io/sandbox-claimed'], 'true');
        assert.notEqual(o.spec.paused, true);
        // The pool made one to replace it, which pauses in turn.
        await waitFor(`${name} back to two hibernated`, async () =>
          (await setStatus(name)).hibernatedReplicas === 2);
      } finally {
        await sbx.kill();
      }
    });
}
