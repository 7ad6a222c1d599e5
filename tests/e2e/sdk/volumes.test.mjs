// Persistent volumes through the stock SDK: a team's Volume outlives the sandboxes that mount
// it (kill, server restart) and is mounted again by a later one; another team can neither see
// nor mount it; its size is enforced inside the sandbox; a mounted volume cannot be deleted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, Volume } from 'e2b';
import { startWarren, useEnv, waitFor } from './harness.mjs';

let w;
let keyA;
let keyB;
const TEAM_A = 'vol-team-a';
const TEAM_B = 'vol-team-b';

async function teamKey(team) {
  const made = await w.api('POST', '/api-keys', { body: { team } });
  assert.equal(made.status, 201, made.text);
  return made.json.key;
}

before(async () => {
  w = await startWarren();
  keyA = await teamKey(TEAM_A);
  keyB = await teamKey(TEAM_B);
  useEnv(w, keyA);
});
after(async () => {
  // Volumes are not sandboxes: the harness leaves them; delete them so their data goes too.
  for (const key of [keyA, keyB]) {
    for (const v of (await w?.api('GET', '/volumes', { key }))?.json ?? []) {
      await w.api('DELETE', `/volumes/${v.volumeID}`, { key });
    }
  }
  await w?.stop();
});

test('a volume outlives the sandbox that wrote it and a server restart, and mounts again', async () => {
  const vol = await Volume.create('workspace');
  assert.equal(vol.name, 'workspace');
  assert.match(vol.volumeId, /^[0-9a-f-]{36}$/);
  assert.deepEqual((await Volume.list()).map((v) => v.name), ['workspace']);
  assert.equal((await Volume.getInfo(vol.volumeId)).name, 'workspace');

  const first = await Sandbox.create('base', { volumeMounts: { '/mnt/work': vol } });
  assert.deepEqual((await Sandbox.getInfo(first.sandboxId)).volumeMounts,
    [{ name: 'workspace', path: '/mnt/work' }]);
  // The SDK's default user (not root) writes there, through envd and through a command.
  await first.files.write('/mnt/work/notes.txt', 'kept across sandboxes');
  const cmd = await first.commands.run('echo from a command > /mnt/work/cmd.txt && id -un');
  assert.equal(cmd.stdout, 'user\n');

  // Mounted: deleting it is refused, naming the sandbox.
  await assert.rejects(Volume.destroy(vol.volumeId), (e) => {
    assert.match(e.message, /mounted by sandbox/);
    assert.ok(e.message.includes(first.sandboxId), e.message);
    return true;
  });
  // Across a restart the adopted sandbox still holds it: the node says so from what it
  // recorded beside the sandbox, and deleting it is still refused.
  await w.restart();
  useEnv(w, keyA);
  const refused = await w.api('DELETE', `/volumes/${vol.volumeId}`, { key: keyA });
  assert.equal(refused.status, 409, refused.text);
  assert.ok(refused.json.message.includes(first.sandboxId), refused.text);
  assert.equal(await (await Sandbox.connect(first.sandboxId)).files.read('/mnt/work/notes.txt'),
    'kept across sandboxes');
  await Sandbox.kill(first.sandboxId);

  const second = await Sandbox.create('base', { volumeMounts: { '/data': 'workspace' } });
  assert.equal(await second.files.read('/data/notes.txt'), 'kept across sandboxes');
  assert.equal((await second.commands.run('cat /data/cmd.txt')).stdout, 'from a command\n');
  await second.kill();

  // Killed: its sandbox no longer counts, so the destroy is taken at once; the data goes once
  // the node has torn the sandbox down, and with it the name.
  const destroyed = await w.api('DELETE', `/volumes/${vol.volumeId}`, { key: keyA });
  assert.equal(destroyed.status, 204, destroyed.text);
  await waitFor('the volume to be gone', async () => (await Volume.list()).length === 0);
  assert.equal(await Volume.destroy(vol.volumeId), false);
});

test("another team's key can neither see, mount nor delete a team's volume", async () => {
  const vol = await Volume.create('private-data');
  try {
    assert.deepEqual(await Volume.list({ apiKey: keyB }), []);
    await assert.rejects(Volume.getInfo(vol.volumeId, { apiKey: keyB }), /not found/);
    await assert.rejects(Volume.getInfo('private-data', { apiKey: keyB }), /not found/);
    assert.equal(await Volume.destroy(vol.volumeId, { apiKey: keyB }), false);
    await assert.rejects(
      Sandbox.create('base', { apiKey: keyB, volumeMounts: { '/x': 'private-data' } }),
      /volume "private-data" not found/);
    // Nor read the other team's namespace through the resource API.
    const res = await fetch(`${w.apiUrl}/apis/warren.dev/v1alpha1/namespaces/${TEAM_A}/volumes`, {
      headers: { authorization: `Bearer ${keyB}` },
    });
    assert.ok([403, 404].includes(res.status), `${res.status} ${await res.text()}`);
    // A Sandbox of its own naming the volume (a claim, or the annotation) finds no such volume
    // in its namespace: it waits, saying so, and mounts nothing.
    const sbxUrl = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/${TEAM_B}/sandboxes`;
    const headersB = { authorization: `Bearer ${keyB}`, 'content-type': 'application/json' };
    const made = await fetch(sbxUrl, { method: 'POST', headers: headersB, body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', metadata: { name: 'thief' },
      spec: { template: { spec: {
        containers: [{ name: 'main', image: 'base', volumeMounts: [{ name: 'd', mountPath: '/d' }] }],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'private-data' } }] } } } }) });
    assert.equal(made.status, 201, await made.text());
    const waiting = await waitFor('the thief to say why it waits', async () => {
      const o = await (await fetch(`${sbxUrl}/thief`, { headers: headersB })).json();
      const ready = o.status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.reason === 'VolumeNotFound' ? o : undefined;
    });
    assert.equal(waiting.status.phase, 'Pending');
    assert.match(waiting.status.message, /volume "private-data" not found in namespace "vol-team-b"/);
    await fetch(`${sbxUrl}/thief`, { method: 'DELETE', headers: headersB });
    const annotated = await fetch(sbxUrl, { method: 'POST', headers: headersB, body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox',
      metadata: { name: 'rooted', annotations: {
        'warren.dev/volume-mounts': JSON.stringify([{ name: 'x', path: '/' }]) } },
      spec: { template: { spec: { containers: [{ name: 'main', image: 'base' }] } } } }) });
    assert.equal(annotated.status, 422);
    assert.match((await annotated.json()).message,
      /volume-mounts\]\[0\]\.path "\/" must be an absolute path/);
    assert.equal((await Volume.getInfo(vol.volumeId)).name, 'private-data');
  } finally {
    await Volume.destroy(vol.volumeId);
  }
});

test('a write past the size limit fails inside the sandbox; the volume stays usable', async () => {
  // The E2B create has no size; a Volume made through the resource API names one.
  const res = await fetch(`${w.apiUrl}/apis/warren.dev/v1alpha1/namespaces/${TEAM_A}/volumes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'warren.dev/v1alpha1', kind: 'Volume',
      metadata: { name: 'small' }, spec: { size: '16Mi' } }),
  });
  assert.equal(res.status, 201, await res.text());
  const sbx = await Sandbox.create('base', { volumeMounts: { '/small': 'small' } });
  try {
    const big = await sbx.commands.run('dd if=/dev/zero of=/small/big bs=1M count=64',
      { timeoutMs: 60000 }).catch((e) => e);
    assert.notEqual(big.exitCode, 0, 'a 64 MiB write into a 16 MiB volume must fail');
    assert.match(big.stderr, /quota|No space/i);
    await sbx.commands.run('rm -f /small/big && sync');
    const small = await sbx.commands.run('echo fits > /small/ok && cat /small/ok');
    assert.equal(small.stdout, 'fits\n');
    const vol = await (await fetch(
      `${w.apiUrl}/apis/warren.dev/v1alpha1/namespaces/${TEAM_A}/volumes/small`,
      { headers: { authorization: `Bearer ${keyA}` } })).json();
    assert.equal(vol.status.phase, 'Available');
    assert.equal(vol.status.capacityBytes, 16 * 1024 * 1024);
    assert.equal(vol.status.sizeEnforced, true, JSON.stringify(vol.status));
    assert.deepEqual(vol.status.mountedBy, [sbx.sandboxId]);

    // Deleted through the resource API while mounted: it waits, saying why, and the sandbox
    // keeps its files; it goes once the sandbox does.
    const url = `${w.apiUrl}/apis/warren.dev/v1alpha1/namespaces/${TEAM_A}/volumes/small`;
    const headers = { authorization: `Bearer ${keyA}` };
    assert.equal((await fetch(url, { method: 'DELETE', headers })).status, 200);
    const waiting = await waitFor('the volume to say it is Terminating', async () => {
      const v = await (await fetch(url, { headers })).json();
      return v.status?.phase === 'Terminating' ? v : undefined;
    });
    assert.match(waiting.status.message, new RegExp(`mounted by sandbox ${sbx.sandboxId}`));
    assert.equal((await sbx.commands.run('cat /small/ok')).stdout, 'fits\n');
    await sbx.kill();
    await waitFor('the volume to be gone', async () =>
      (await fetch(url, { headers })).status === 404);
  } finally {
    await sbx.kill().catch(() => {});
  }
});

test('bad volume input is refused naming what was wrong', async () => {
  await assert.rejects(Volume.create('Not_A_Name'), /name "Not_A_Name" is not valid/);
  await Volume.create('dup');
  await assert.rejects(Volume.create('dup'), /already exists/);
  await assert.rejects(Sandbox.create('base', { volumeMounts: { 'relative/path': 'dup' } }),
    /volumeMounts\[0\]\.path "relative\/path" must be an absolute path/);
  await assert.rejects(Sandbox.create('base', { volumeMounts: { '/.warren/x': 'dup' } }),
    /is reserved/);
  await assert.rejects(Sandbox.create('base', { volumeMounts: { '/m': 'missing' } }),
    /volume "missing" not found/);
  assert.equal((await w.api('DELETE', '/volumes/dup', { key: keyA })).status, 204);
});

test('volumeClaimTemplates give each pool member its own volume, deleted with the member', async () => {
  const base = `${w.apiUrl}/apis`;
  const auth = { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' };
  const res = await fetch(`${base}/agents.kruise.io/v1alpha1/namespaces/${TEAM_A}/sandboxsets`, {
    method: 'POST', headers: auth,
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name: 'vct-pool' },
      spec: {
        replicas: 2,
        template: { spec: { containers: [{ name: 'main', image: 'base', workingDir: '/home/user',
          volumeMounts: [{ name: 'work', mountPath: '/work' }] }] } },
        volumeClaimTemplates: [{ metadata: { name: 'work' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '32Mi' } } } }],
      },
    }),
  });
  assert.equal(res.status, 201, await res.text());
  const volumes = async () => (await (await fetch(
    `${base}/warren.dev/v1alpha1/namespaces/${TEAM_A}/volumes`, { headers: auth })).json()).items;
  const members = async () => (await (await fetch(
    `${base}/agents.kruise.io/v1alpha1/namespaces/${TEAM_A}/sandboxes`, { headers: auth })).json())
    .items.filter((s) => s.metadata.labels?.['agents.kruise.io/sandbox-pool'] === 'vct-pool');
  const available = async () => (await (await fetch(
    `${base}/agents.kruise.io/v1alpha1/namespaces/${TEAM_A}/sandboxsets/vct-pool`,
    { headers: auth })).json()).status?.availableReplicas ?? 0;
  const ready = await waitFor('two available members, each with its own volume mounted', async () => {
    const ms = await members();
    const vs = await volumes();
    // Available (Running and Ready), not only mounted: the create below must find them in stock.
    const ok = ms.length === 2 && (await available()) === 2 && ms.every((m) => vs.some((v) =>
      v.metadata.name === `work-${m.metadata.name}` && v.status?.phase === 'Available' &&
      v.status.capacityBytes === 32 * 1024 * 1024 &&
      v.status.mountedBy?.[0] === m.metadata.labels['agents.kruise.io/sandbox-id']));
    return ok ? ms : undefined;
  }, 120000);

  // A claimed member writes into its own volume; the other member's volume stays empty.
  const sbx = await Sandbox.create('vct-pool');
  await sbx.files.write('/work/mine.txt', 'member data');
  const mine = ready.find((m) => m.metadata.labels['agents.kruise.io/sandbox-id'] === sbx.sandboxId);
  assert.ok(mine, 'the create was served from the pool');
  await sbx.kill();

  const del = await fetch(`${base}/agents.kruise.io/v1alpha1/namespaces/${TEAM_A}/sandboxsets/vct-pool`,
    { method: 'DELETE', headers: auth });
  assert.equal(del.status, 200, await del.text());
  await waitFor('the members and their volumes gone', async () =>
    (await members()).length === 0 &&
    !(await volumes()).some((v) => v.metadata.name.startsWith('work-')), 60000);
});

test("the volume content API reads and writes a volume's files without a sandbox, never following a link out", async () => {
  // The SDK's Volume methods go to E2B_VOLUME_API_URL (not E2B_API_URL; useEnv sets it as
  // run.sh prints it) with the volume's token.
  const vol = await Volume.create('content');
  assert.match(vol.token, /^vol_[0-9a-f]{64}$/);
  assert.equal((await w.api('GET', `/volumes/${vol.volumeId}`, { key: keyA })).json.token, vol.token);
  try {
    const written = await vol.writeFile('/docs/readme.md', 'hello volume');
    assert.equal(written.size, 12);
    assert.equal(await vol.readFile('/docs/readme.md'), 'hello volume');
    await vol.makeDir('/empty');
    assert.deepEqual((await vol.list('/', { depth: 2 })).map((e) => [e.path, e.type]),
      [['/docs', 'directory'], ['/docs/readme.md', 'file'], ['/empty', 'directory']]);
    assert.equal((await vol.getInfo('/docs/readme.md')).type, 'file');

    // A sandbox sees it, writes back, and plants links to the host's files.
    const sbx = await Sandbox.create('base', { volumeMounts: { '/v': vol } });
    try {
      assert.equal(await sbx.files.read('/v/docs/readme.md'), 'hello volume');
      await sbx.commands.run('echo from the sandbox > /v/back.txt && ln -s /etc/shadow /v/shadow && ' +
        'ln -s / /v/root && mkfifo /v/fifo');
      assert.equal(await vol.readFile('/back.txt'), 'from the sandbox\n');
      const back = await vol.getInfo('/back.txt');
      assert.equal(back.uid, 1000, 'ids as the sandbox sees them');
      const link = await vol.getInfo('/shadow');
      assert.equal(link.type, 'symlink');
      assert.equal(link.target, '/etc/shadow');
      await assert.rejects(vol.readFile('/shadow'), /is a symlink/);
      await assert.rejects(vol.readFile('/root/etc/hostname'), /is a symlink|not a directory/);
      await assert.rejects(vol.writeFile('/root/tmp/escape', 'x'), /is a symlink|not a directory/);
      await assert.rejects(vol.readFile('/fifo'), /not a regular file/);
      await assert.rejects(vol.readFile('/../../etc/passwd'), /not a path inside the volume/);
      // What the API writes, the sandbox's user may change.
      await vol.writeFile('/shared.txt', 'v1', { uid: 1000, gid: 1000 });
      assert.equal((await sbx.commands.run('echo v2 > /v/shared.txt && cat /v/shared.txt')).stdout,
        'v2\n');
      await vol.remove('/shadow');
      assert.equal((await sbx.commands.run('ls -l /etc/shadow | wc -l')).stdout, '1\n',
        'removing the link leaves what it pointed to');
    } finally {
      await sbx.kill();
    }
    await vol.remove('/docs');
    assert.equal(await vol.exists('/docs'), false);

    // The token is the only key: none, a wrong one, or a valid one for another volume are 401.
    const url = `${w.apiUrl}/volumecontent/${vol.volumeId}/file?path=/back.txt`;
    assert.equal((await fetch(url)).status, 401);
    assert.equal((await fetch(url, { headers: { authorization: `Bearer vol_${'0'.repeat(64)}` } })).status, 401);
    const other = await Volume.create('other-content');
    assert.equal((await fetch(url, { headers: { authorization: `Bearer ${other.token}` } })).status, 401);
    assert.equal((await fetch(url, { headers: { 'x-api-key': keyA } })).status, 401);
    assert.equal((await fetch(url, { headers: { authorization: `Bearer ${keyB}` } })).status, 401);
    await Volume.destroy(other.volumeId);
  } finally {
    await Volume.destroy(vol.volumeId);
  }
});

test("a team volume mounted by a pool's members survives a member's recycle; the member's own files do not", async () => {
  const base = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/${TEAM_A}`;
  const auth = { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' };
  const cache = await Volume.create('team-cache');
  const res = await fetch(`${base}/sandboxsets`, {
    method: 'POST', headers: auth,
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet',
      metadata: { name: 'recycling', annotations: { 'agents.kruise.io/cleanup-enabled': 'true' } },
      spec: { replicas: 1, template: { spec: {
        containers: [{ name: 'main', image: 'base', workingDir: '/home/user',
          volumeMounts: [{ name: 'cache', mountPath: '/cache' }] }],
        volumes: [{ name: 'cache', persistentVolumeClaim: { claimName: 'team-cache' } }] } } },
    }),
  });
  assert.equal(res.status, 201, await res.text());
  const member = async () => (await (await fetch(`${base}/sandboxes`, { headers: auth })).json())
    .items.find((s) => s.metadata.labels?.['agents.kruise.io/sandbox-pool'] === 'recycling');
  await waitFor('the member Ready', async () =>
    (await member())?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  120000);
  // No refills: the member that comes back from recycling is the one the next create gets.
  const patched = await fetch(`${base}/sandboxsets/recycling`, {
    method: 'PATCH', headers: { ...auth, 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ spec: { scaleStrategy: { maxUnavailable: 0 } } }),
  });
  assert.equal(patched.status, 200, await patched.text());

  const first = await Sandbox.create('recycling');
  await first.files.write('/cache/kept.txt', 'cached across users');
  await first.files.write('/home/user/private.txt', 'not for the next user');
  await first.kill();
  await waitFor('the member recycled', async () => {
    const m = await member();
    return m?.status?.recycledCount === 1 &&
      m.metadata.labels['agents.kruise.io/sandbox-claimed'] === 'false' &&
      m.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  }, 60000);
  const second = await Sandbox.create('recycling');
  try {
    assert.equal(second.sandboxId, first.sandboxId, 'the recycled member');
    assert.equal(await second.files.read('/cache/kept.txt'), 'cached across users');
    assert.equal(await second.files.exists('/home/user/private.txt'), false);
  } finally {
    await second.kill();
  }
  assert.equal((await fetch(`${base}/sandboxsets/recycling`, { method: 'DELETE', headers: auth })).status,
    200);
  await waitFor('the pool gone', async () => !(await member()), 60000);
  await waitFor('the volume deletable', async () =>
    (await w.api('DELETE', `/volumes/${cache.volumeId}`, { key: keyA })).status === 204, 30000);
});
