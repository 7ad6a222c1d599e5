// Warren as a cluster on one machine (issue 17): a 3-member etcd cluster, 3 `warren node`
// processes and 2 `warren server --node off` replicas (cluster.mjs), driven by the stock E2B SDK
// and the resource API as users would.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';
import { startCluster } from './cluster.mjs';

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
