// Warren as a cluster on one machine (issue 17): a 3-member etcd cluster, 3 `warren node`
// processes and 2 `warren server --node off` replicas (cluster.mjs), driven by the stock E2B SDK
// and the resource API as users would.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Sandbox } from 'e2b';
import { startCluster } from './cluster.mjs';
import { warrenBinary } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let c;

// The SDK pointed at replica `s` with nothing but what a user exports.
const sdk = (s) => ({ apiKey: c.adminKey, apiUrl: c.servers[s].apiUrl,
  sandboxUrl: c.servers[s].sandboxUrl, domain: 'localhost', requestTimeoutMs: 60000 });

before(async () => {
  c = await startCluster({ nodes: 3, servers: 2, members: 3 });
  await c.waitNodesReady(3);
});

after(async () => {
  if (c) await c.stop();
});

test('the E2B SDK lifecycle passes through either replica, on sandboxes the nodes run',
  { timeout: 180000 }, async () => {
    try {
      const sbx = await Sandbox.create('base', { ...sdk(0), timeoutMs: 120000 });
      const r = await sbx.commands.run('echo made-through-replica-0');
      assert.equal(r.stdout.trim(), 'made-through-replica-0');
      await sbx.files.write('/tmp/note.txt', 'written through replica 0');
      const obj = (await c.items('sandboxes')).find((o) =>
        o.metadata.labels?.['agents.kruise.io/sandbox-id'] === sbx.sandboxId);
      assert.match(obj.status.nodeName, /^node-\d$/, 'a node process runs it');

      // The other replica: connect, read the file, run a command, list, pause, resume, kill.
      const again = await Sandbox.connect(sbx.sandboxId, sdk(1));
      assert.equal(await again.files.read('/tmp/note.txt'), 'written through replica 0');
      const r2 = await again.commands.run('echo through-replica-1');
      assert.equal(r2.stdout.trim(), 'through-replica-1');
      const listed = await Sandbox.list(sdk(1)).nextItems();
      assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId), 'replica 1 lists it');
      assert.equal(await again.pause(), true);
      const resumed = await Sandbox.connect(sbx.sandboxId, sdk(0));
      const r3 = await resumed.commands.run('cat /tmp/note.txt');
      assert.equal(r3.stdout, 'written through replica 0');
      await resumed.kill();
      assert.equal(await Sandbox.kill(sbx.sandboxId, sdk(1)), false, 'already gone');
    } catch (e) {
      console.log(c.logs());
      throw e;
    }
  });

// The member etcd calls its leader, from its own status.
async function etcdLeaderIndex() {
  for (let i = 0; i < c.etcd.length; i++) {
    try {
      const res = await fetch(`http://${c.etcd[i].endpoint}/v3/maintenance/status`,
        { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) });
      const st = await res.json();
      if (st.leader && st.header?.member_id === st.leader) return i;
    } catch { /* that member is down: ask the next */ }
  }
  return 0;
}

test('an etcd leader killed during a burst of creates loses no acknowledged create',
  { timeout: 180000 }, async () => {
    const acknowledged = [];
    const refused = [];
    const N = 120;
    let next = 0;
    const leader = await etcdLeaderIndex();
    const worker = async (w) => {
      for (;;) {
        const i = next++;
        if (i >= N) return;
        if (i === N / 3) await c.killEtcd(leader);  // a third of the way in
        const s = w % 2;  // both replicas take creates
        const name = `burst-${i}`;
        const res = await c.apiFetch(
          `${c.servers[s].apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates`,
          { method: 'POST', headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
              metadata: { name, namespace: 'default' },
              spec: { template: { spec: { containers: [{ name: 'main', image: 'base' }] } } } }) })
          .catch((e) => ({ status: 0, text: async () => e.message }));
        if (res.status === 201) acknowledged.push(name);
        else refused.push(`${name}: ${res.status} ${await res.text()}`);
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(worker));
    await c.restartEtcd(leader);
    assert.ok(acknowledged.length >= N / 2,
      `most creates are acknowledged despite the lost member (refused: ${refused.slice(0, 5)})`);
    for (const s of [0, 1]) {
      const names = new Set((await c.items('sandboxtemplates', s)).map((o) => o.metadata.name));
      const lost = acknowledged.filter((n) => !names.has(n));
      assert.deepEqual(lost, [], `replica ${s} finds every acknowledged create`);
    }
    // A create refused with an unknown outcome (the member died under it) may exist too.
    for (const o of await c.items('sandboxtemplates')) {
      if (!o.metadata.name.startsWith('burst-')) continue;
      await c.apiFetch(`${c.servers[0].apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates/${o.metadata.name}`,
        { method: 'DELETE' });
    }
  });

const members = async (pool) => (await c.items('sandboxes')).filter((o) =>
  o.metadata.labels?.['agents.kruise.io/sandbox-pool'] === pool);
const reasonOf = (o, type) => o.status?.conditions?.find((x) => x.type === type)?.reason;

test('a node killed with -9: its sandboxes are lost within 10 s and the pool fills on the others',
  { timeout: 300000 }, async () => {
    try {
      await c.applyPool('spread', 6);
      await c.waitPool('spread', 6);
      const placed = (await members('spread')).map((o) => o.status.nodeName);
      assert.ok(new Set(placed).size >= 2, `members spread over the nodes: ${placed}`);
      const victim = placed[0];
      const index = Number(victim.split('-')[1]);
      const onVictim = (await members('spread')).filter((o) => o.status.nodeName === victim);
      const killedAt = Date.now();
      await c.killNode(index);

      // Every member it ran is marked lost, with the reason, within 10 s.
      for (;;) {
        const now = await members('spread');
        const lost = onVictim.filter((v) => {
          const o = now.find((x) => x.metadata.uid === v.metadata.uid);
          return !o || (o.status.phase === 'Failed' && reasonOf(o, 'Ready') === 'NodeLost');
        });
        if (lost.length === onVictim.length) break;
        assert.ok(Date.now() - killedAt < 10000,
          `${onVictim.length - lost.length} sandboxes of ${victim} not lost 10 s after its kill`);
        await sleep(200);
      }
      const lostAfter = Date.now() - killedAt;
      const node = (await c.nodeObjects()).find((n) => n.metadata.name === victim);
      const ready = node.status.conditions.find((x) => x.type === 'Ready');
      assert.equal(ready.status, 'Unknown');
      assert.equal(ready.reason, 'NodeStatusUnknown');
      const events = await (await c.apiFetch(`${c.servers[0].apiUrl}/apis/warren.dev/v1alpha1/events`)).json();
      assert.ok((events.items ?? []).some((e) => e.reason === 'NodeLost' &&
        onVictim.some((v) => v.metadata.name === e.involvedObject?.name)), 'a NodeLost Event');

      // The pool is full again, on the other nodes; a claim never gets a member of the dead one.
      await c.waitPool('spread', 6, 60000);
      const live = (await members('spread')).filter((o) => o.status.phase === 'Running');
      assert.ok(live.every((o) => o.status.nodeName !== victim), 'no live member on the dead node');
      const claimed = await Sandbox.create('spread', { ...sdk(1), timeoutMs: 60000 });
      const obj = (await c.items('sandboxes')).find((o) =>
        o.metadata.labels?.['agents.kruise.io/sandbox-id'] === claimed.sandboxId);
      assert.notEqual(obj.status.nodeName, victim);
      assert.equal((await claimed.commands.run('echo alive')).stdout.trim(), 'alive');
      await claimed.kill();
      console.log(`# node ${victim}: ${onVictim.length} sandboxes lost ${lostAfter} ms after kill -9`);

      // The node comes back: it destroys what it still ran of its lost sandboxes.
      await c.startNode(index);
      await c.waitNodesReady(3);
    } catch (e) {
      console.log(c.logs());
      throw e;
    }
  });

test('the leader replica killed in a burst of claims: every member claimed once or back in the pool',
  { timeout: 300000 }, async () => {
    let leader = 0;
    try {
      await c.applyPool('burst', 6);
      await c.waitPool('burst', 6);
      // Which replica leads (its Lease names it).
      const lease = await (await c.apiFetch(`${c.servers[0].apiUrl}/apis/coordination.k8s.io/v1/` +
        'namespaces/warren-system/leases/warren-controller-manager')).json();
      leader = Number(String(lease.spec?.holderIdentity ?? 'replica-0').split('-')[1]);
      const other = 1 - leader;
      const ids = [];
      const failed = [];
      let killed = false;
      const claim = async (i) => {
        // Half through each replica; the leader dies after the third claim has started.
        const s = i % 2;
        if (i === 3 && !killed) {
          killed = true;
          await c.killServer(leader);
        }
        try {
          const sbx = await Sandbox.create('burst', { ...sdk(s), timeoutMs: 120000 });
          ids.push(sbx.sandboxId);
        } catch (e) {
          failed.push(`${s}: ${e.message}`);
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(claim));
      assert.equal(new Set(ids).size, ids.length, `a sandbox handed out twice: ${ids}`);
      assert.ok(ids.length >= 3, `claims through the live replica succeed (failed: ${failed})`);

      // Every claim left pending by the dead replica is resolved by the live one: committed
      // (and so answered at most once) or rolled back into the pool.
      const until = Date.now() + 90000;
      for (;;) {
        const pending = (await c.items('sandboxes', other)).filter((o) =>
          o.metadata.annotations?.['warren.dev/claim-pending']);
        if (pending.length === 0) break;
        assert.ok(Date.now() < until, `claims still pending: ${pending.map((o) => o.metadata.name)}`);
        await sleep(500);
      }
      const objects = await c.items('sandboxes', other);
      for (const id of ids) {
        const o = objects.find((x) => x.metadata.labels?.['agents.kruise.io/sandbox-id'] === id);
        if (o) assert.equal(o.metadata.labels?.['agents.kruise.io/sandbox-claimed'], 'true',
          `claimed ${id} is marked claimed, not back in the pool`);
      }
      // The live replica took over the pool's controller: the pool fills again.
      await c.waitPool('burst', 6, 120000, other);
      for (const id of ids) await Sandbox.kill(id, sdk(other)).catch(() => {});
    } catch (e) {
      console.log(c.logs());
      throw e;
    } finally {
      if (c.servers[leader].proc.child.exitCode !== null ||
          c.servers[leader].proc.child.signalCode !== null) {
        await c.startServer(leader);
      }
    }
  });

// `warren <args>` as an operator runs it against replica `s`, with the admin key.
function warrenCli(args, s = 1) {
  const r = spawnSync(warrenBinary(), ['--server', c.servers[s].apiUrl, ...args], {
    encoding: 'utf8', timeout: 120000,
    env: { ...process.env, WARREN_API_KEY: c.adminKey, WARREN_CONFIG: `${c.dir}/no-config` },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('a drain of a node holding part of a group waits on the group budget and says so',
  { timeout: 300000 }, async () => {
    const sandboxes = `${c.servers[0].apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes`;
    const make = (name, group) => c.apiFetch(sandboxes, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox',
        metadata: { name, labels: { app: 'drained', 'warren.dev/group': group } },
        spec: { template: { spec: { containers: [{ name: 'main', image: 'base' }] } } } }),
    });
    const get = async (name) => (await c.apiFetch(`${sandboxes}/${name}`)).json();
    try {
      // Two groups of three: each spreads over the three nodes.
      const names = ['a-0', 'a-1', 'a-2', 'b-0', 'b-1', 'b-2'];
      for (const n of names) assert.equal((await make(`grp-${n}`, `g${n[0]}`)).status, 201);
      const until = Date.now() + 120000;
      let objs;
      for (;;) {
        objs = await Promise.all(names.map((n) => get(`grp-${n}`)));
        if (objs.every((o) => o.status?.phase === 'Running')) break;
        assert.ok(Date.now() < until, `not all Running: ${objs.map((o) => o.status?.phase)}`);
        await sleep(200);
      }
      const budget = await c.apiFetch(`${c.servers[0].apiUrl}/apis/policy.kruise.io/v1alpha1/` +
        'namespaces/default/podunavailablebudgets', {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'policy.kruise.io/v1alpha1', kind: 'PodUnavailableBudget',
          metadata: { name: 'groups' },
          spec: { selector: { matchLabels: { app: 'drained' } }, maxUnavailable: 1,
            podGroupPolicy: { groupLabelKey: 'warren.dev/group' } } }),
      });
      assert.equal(budget.status, 201, await budget.text());
      // Group b is broken elsewhere (a member paused on another node): no group may go.
      const target = objs.find((o) => o.metadata.name.startsWith('grp-a')).status.nodeName;
      const breaker = objs.find((o) => o.metadata.name.startsWith('grp-b') &&
        o.status.nodeName !== target);
      assert.ok(breaker, `a member of group b off ${target}: ${objs.map((o) => o.status.nodeName)}`);
      await c.apiFetch(`${sandboxes}/${breaker.metadata.name}`, { method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ spec: { paused: true } }) });
      for (;;) {
        if ((await get(breaker.metadata.name)).status?.phase === 'Paused') break;
        await sleep(200);
      }
      await sleep(1500);  // the budget controller sees group b unavailable

      const waited = warrenCli(['drain', target, '--timeout', '6s']);
      assert.equal(waited.status, 1, waited.out);
      assert.match(waited.out, /waits/, waited.out);
      assert.match(waited.out, /disruption budget default\/groups/, waited.out);
      const events = await (await c.apiFetch(
        `${c.servers[0].apiUrl}/apis/warren.dev/v1alpha1/events`)).json();
      assert.ok((events.items ?? []).some((e) => e.reason === 'DrainWaiting' &&
        e.involvedObject?.name === target), 'a DrainWaiting Event on the node');
      const cordoned = (await c.nodeObjects()).find((n) => n.metadata.name === target);
      assert.equal(cordoned.spec?.unschedulable, true, 'the drain cordoned it');

      // Group b whole again: the drain goes through.
      await c.apiFetch(`${sandboxes}/${breaker.metadata.name}`, { method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ spec: { paused: false } }) });
      const drained = warrenCli(['drain', target, '--timeout', '90s']);
      assert.equal(drained.status, 0, drained.out);
      const left = (await c.items('sandboxes')).filter((o) => o.status?.nodeName === target &&
        !['Succeeded', 'Failed'].includes(o.status?.phase));
      assert.deepEqual(left.map((o) => `${o.metadata.name} ${o.metadata.deletionTimestamp}`), [],
        `nothing runs on the drained node; the drain said:\n${drained.out}`);
      assert.equal(warrenCli(['uncordon', target]).status, 0);
    } catch (e) {
      console.log(c.logs());
      throw e;
    } finally {
      await c.apiFetch(`${c.servers[0].apiUrl}/apis/policy.kruise.io/v1alpha1/namespaces/default/` +
        'podunavailablebudgets/groups', { method: 'DELETE' });
    }
  });

// A checkpoint's images are on the node that captured it: every copy is placed there, whichever
// replica is asked and however loaded that node is.
test('snapshots and forks through either replica run on the node holding the checkpoint',
  { timeout: 240000 }, async () => {
    const made = [];
    let snap;
    try {
      const src = await Sandbox.create('base', { ...sdk(0), timeoutMs: 120000 });
      made.push(src);
      await src.files.write('/home/user/kept.txt', 'from the source');
      const nodeOf = async (id) => (await c.items('sandboxes')).find((o) =>
        o.metadata.labels?.['agents.kruise.io/sandbox-id'] === id)?.status?.nodeName;
      const home = await nodeOf(src.sandboxId);
      assert.match(home, /^node-\d$/);
      snap = await Sandbox.createSnapshot(src.sandboxId, sdk(1));
      const copies = [];
      for (let i = 0; i < 3; i++) {
        copies.push(await Sandbox.create(snap.snapshotId, { ...sdk(i % 2), timeoutMs: 120000 }));
        made.push(copies[i]);
      }
      const forks = await Sandbox.fork(src.sandboxId, { ...sdk(1), count: 2, timeoutMs: 120000 });
      for (const f of forks) if (f instanceof Sandbox) made.push(f);
      for (const [i, copy] of [...copies, ...forks].entries()) {
        assert.ok(copy instanceof Sandbox, `copy ${i} failed: ${copy?.message}`);
        assert.equal(await copy.files.read('/home/user/kept.txt'), 'from the source');
        assert.equal(await nodeOf(copy.sandboxId), home, `copy ${i} is not where its images are`);
      }
    } catch (e) {
      console.log(c.logs());
      throw e;
    } finally {
      for (const s of made) await s.kill().catch(() => {});
      if (snap) await Sandbox.deleteSnapshot(snap.snapshotId, sdk(0)).catch(() => {});
    }
  });

test('warren logs through either replica reads the command log of a sandbox on a node',
  { timeout: 120000 }, async () => {
    const sandboxes = `${c.servers[0].apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes`;
    const made = await c.apiFetch(sandboxes, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox',
        metadata: { name: 'logged' },
        spec: { template: { spec: { containers: [{ name: 'main', image: 'base',
          command: ['/bin/sh', '-c', 'echo line-one; echo line-two; exec sleep 3600'] }] } } } }),
    });
    assert.equal(made.status, 201, await made.text());
    try {
      for (const s of [0, 1]) {
        let out = '';
        for (let i = 0; i < 100 && !out.includes('line-two'); i++) {
          out = warrenCli(['-n', 'default', 'logs', 'logged'], s).out;
          if (!out.includes('line-two')) await sleep(200);
        }
        assert.equal(out, 'line-one\nline-two\n', `through replica ${s}`);
      }
      // A key of another team still gets 404 (the replica checks before it relays).
      const other = warrenCli(['-n', 'someone-else', 'logs', 'logged'], 0);
      assert.notEqual(other.status, 0);
    } finally {
      await c.apiFetch(`${sandboxes}/logged`, { method: 'DELETE' });
    }
  });
