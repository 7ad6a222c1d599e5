// In-place update through the stock E2B SDK (npm e2b, unmodified): a sandbox claimed from a
// pool has its image changed under a connected client, which keeps working on the same id,
// token and env; and a create that names an image (OpenKruise's e2b.agents.kruise.io/image
// metadata) gets a pool member updated to it before the create answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';
import { startWarren, useEnv, waitFor } from './harness.mjs';

let w;
const API = '/apis/agents.kruise.io/v1alpha1/namespaces/default';

before(async () => {
  w = await startWarren();
  useEnv(w);
});

after(async () => {
  await w?.apiFetch(`${w.apiUrl}${API}/sandboxsets/pool-inplace`, { method: 'DELETE' })
    .catch(() => {});
  await w?.stop();
});

async function api(path, init = {}) {
  const res = await w.apiFetch(w.apiUrl + API + path, init);
  const text = await res.text();
  assert.ok(res.status < 300, `${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function objectOf(sandboxId) {
  return (await w.sandboxObjects()).find(
    (o) => o.metadata.labels?.['agents.kruise.io/sandbox-id'] === sandboxId);
}

function condition(o, type) {
  return (o?.status?.conditions ?? []).find((c) => c.type === type);
}

// Changes the sandbox's image by writing its template inline (what `warren set image`, a
// SandboxUpdateOps or kubectl would do), and waits for the node's answer.
async function setImage(sandboxId, image) {
  const o = await objectOf(sandboxId);
  let template = o.spec.template;
  if (!template) {
    template = (await api(`/sandboxtemplates/${o.spec.templateRef.name}`)).spec.template;
  }
  template = structuredClone(template);
  template.spec.containers[0].image = image;
  const before = o.status.updateRevision;
  await api(`/sandboxes/${o.metadata.name}`, {
    method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ spec: { templateRef: null, template } }),
  });
  return waitFor(`${sandboxId} updated to ${image}`, async () => {
    const now = await objectOf(sandboxId);
    const c = condition(now, 'InplaceUpdate');
    if (c?.reason === 'Failed') throw new Error(`in-place update failed: ${c.message}`);
    return now.status.updateRevision !== before && c?.reason === 'Succeeded' &&
        condition(now, 'Ready')?.status === 'True' ? now : null;
  }, 120000);
}

test('an image change keeps the connected client: same id, token and env, new image', async () => {
  await api('/sandboxsets', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet',
      metadata: { name: 'pool-inplace' },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'main', image: 'base' }] } } },
    }),
  });
  await waitFor('2 available in pool-inplace', async () =>
    ((await api('/sandboxsets/pool-inplace')).status?.availableReplicas ?? 0) >= 2, 120000);

  const sbx = await Sandbox.create('pool-inplace', { envs: { GREETING: 'kept' } });
  try {
    const debian = await sbx.commands.run('cat /etc/os-release');
    assert.match(debian.stdout, /Debian/);
    const token = sbx.envdAccessToken;
    const uid = (await objectOf(sbx.sandboxId)).metadata.uid;

    const onBusybox = await setImage(sbx.sandboxId, 'busybox');
    assert.equal(onBusybox.metadata.uid, uid, 'the same Sandbox object');
    assert.match(condition(onBusybox, 'InplaceUpdate').message, /image base → busybox/);
    // The new envd got the create's /init again, recorded with its start.
    assert.equal(condition(onBusybox, 'RuntimeInitialized')?.status, 'True');
    // The client connected before reaches the restarted envd with the token it holds.
    assert.equal(await sbx.isRunning(), true);
    const bin = await sbx.files.list('/bin', { user: 'root' });
    assert.ok(bin.some((e) => e.name === 'busybox'), JSON.stringify(bin.map((e) => e.name)));
    assert.equal(await sbx.files.exists('/etc/debian_version', { user: 'root' }), false);

    await setImage(sbx.sandboxId, 'base');
    const again = await sbx.commands.run('cat /etc/os-release; echo "$GREETING"');
    assert.match(again.stdout, /Debian/);
    assert.match(again.stdout, /kept\n$/, 'the env of the create survives the restarts');
    assert.equal(sbx.envdAccessToken, token);
    // A client that connects now gets the same sandbox.
    const other = await Sandbox.connect(sbx.sandboxId);
    assert.equal((await other.commands.run('hostname')).stdout, `${sbx.sandboxId}\n`);
  } finally {
    await sbx.kill();
  }
});

test('a create naming an image gets a pool member updated to it before it answers', async () => {
  await waitFor('a member available in pool-inplace', async () =>
    ((await api('/sandboxsets/pool-inplace')).status?.availableReplicas ?? 0) >= 1, 120000);
  const sbx = await Sandbox.create('pool-inplace', {
    metadata: { 'e2b.agents.kruise.io/image': 'busybox', suite: 'inplace' },
  });
  try {
    const o = await objectOf(sbx.sandboxId);
    assert.equal(o.metadata.labels['agents.kruise.io/sandbox-pool'], 'pool-inplace');
    assert.equal(o.spec.template.spec.containers[0].image, 'busybox');
    assert.equal(condition(o, 'InplaceUpdate')?.reason, 'Succeeded');
    const bin = await sbx.files.list('/bin', { user: 'root' });
    assert.ok(bin.some((e) => e.name === 'busybox'));
    assert.deepEqual((await sbx.getInfo()).metadata, { suite: 'inplace' });
  } finally {
    await sbx.kill();
  }
  await assert.rejects(
    Sandbox.create('pool-inplace', { metadata: { 'e2b.agents.kruise.io/cpu-limit': 'lots' } }),
    /cpu-limit/);
});
