// What a team can read about its sandboxes through E2B's own routes: the template command's log
// with timestamps (v1 and v2 logs), the usage samples (a 64 MiB allocation shows), the latest
// sample of several sandboxes, its team's history of concurrent sandboxes and starts, and the
// audit journal of a sandbox (`GET /sandboxes/{id}/audit`, `warren audit`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';
import { spawnSync } from 'node:child_process';
import { startWarren, useEnv, TEMPLATE, warrenBinary, waitFor } from './harness.mjs';

let w;
let otherKey;
const NS = 'default';

before(async () => {
  w = await startWarren();
  useEnv(w);
  const made = await w.api('POST', '/api-keys', { body: { team: 'observe-other' } });
  assert.equal(made.status, 201, made.text);
  otherKey = made.json.key;
  // A template whose command writes to both streams, then stays up.
  const res = await w.apiFetch(
    `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/${NS}/sandboxtemplates`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
        metadata: { name: 'chatty' },
        spec: { template: { spec: { containers: [{ name: 'main', image: 'base',
          workingDir: '/home/user',
          command: ['bash', '-c',
            'echo first line; sleep 0.05; echo "an error" >&2; sleep 0.05; echo third line; ' +
            'exec sleep infinity'] }] } } },
      }),
    });
  assert.equal(res.status, 201, await res.text());
});
after(async () => { await w?.stop(); });

test("the logs routes return the template command's lines in order, with time and stream", async () => {
  const sbx = await Sandbox.create('chatty');
  try {
    const id = sbx.sandboxId;
    const v2 = await waitFor('three log lines', async () => {
      const r = await w.api('GET', `/v2/sandboxes/${id}/logs`);
      assert.equal(r.status, 200, r.text);
      return r.json.logs.length >= 3 ? r.json.logs : undefined;
    });
    assert.deepEqual(v2.map((e) => e.message), ['first line', 'an error', 'third line']);
    assert.deepEqual(v2.map((e) => e.level), ['info', 'error', 'info']);
    assert.deepEqual(v2.map((e) => e.fields.stream), ['stdout', 'stderr', 'stdout']);
    const times = v2.map((e) => Date.parse(e.timestamp));
    assert.ok(times.every((t, i) => !Number.isNaN(t) && (i === 0 || t >= times[i - 1])), v2);
    assert.ok(Math.abs(times[0] - Date.now()) < 120000, `timestamp ${v2[0].timestamp}`);

    // Backward from the newest; forward from a cursor; a level and a search filter.
    const back = await w.api('GET', `/v2/sandboxes/${id}/logs?direction=backward&limit=2`);
    assert.deepEqual(back.json.logs.map((e) => e.message), ['third line', 'an error']);
    const fwd = await w.api('GET', `/v2/sandboxes/${id}/logs?cursor=${times[1]}&limit=10`);
    assert.deepEqual(fwd.json.logs.map((e) => e.message), ['an error', 'third line']);
    const errs = await w.api('GET', `/v2/sandboxes/${id}/logs?level=error`);
    assert.deepEqual(errs.json.logs.map((e) => e.message), ['an error']);
    const found = await w.api('GET', `/v2/sandboxes/${id}/logs?search=third`);
    assert.deepEqual(found.json.logs.map((e) => e.message), ['third line']);

    // The deprecated v1 route: lines and structured entries, forward from `start`.
    const v1 = await w.api('GET', `/sandboxes/${id}/logs?start=${times[2]}`);
    assert.equal(v1.status, 200, v1.text);
    assert.deepEqual(v1.json.logs.map((l) => l.line), ['third line']);
    assert.equal(v1.json.logEntries[0].message, 'third line');

    // Bad parameters name themselves; another team sees no such sandbox.
    for (const [q, word] of [['direction=up', 'direction'], ['limit=5000', 'limit'],
      ['cursor=yesterday', 'cursor'], ['level=loud', 'level']]) {
      const bad = await w.api('GET', `/v2/sandboxes/${id}/logs?${q}`);
      assert.equal(bad.status, 400, q);
      assert.match(bad.json.message, new RegExp(word), q);
    }
    assert.equal((await w.api('GET', `/v2/sandboxes/${id}/logs`, { key: otherKey })).status, 404);
    assert.equal((await w.api('GET', `/sandboxes/${id}/logs`, { key: otherKey })).status, 404);
  } finally {
    await sbx.kill();
  }
});

test('getMetrics shows a 64 MiB allocation inside the sandbox', async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    const first = await waitFor('a first sample', async () => {
      const m = await sbx.getMetrics();
      return m.length > 0 ? m[m.length - 1] : undefined;
    });
    await sbx.commands.run(
      'python3 -c "import time; b = bytearray(b\'x\') * (64 << 20); time.sleep(120)"',
      { background: true });
    const grown = await waitFor('memUsed up by 64 MiB', async () => {
      const m = await sbx.getMetrics();
      const last = m[m.length - 1];
      return last && last.memUsed - first.memUsed >= 60 * 1024 * 1024 ? last : undefined;
    }, 40000);
    assert.ok(grown.memUsed <= grown.memTotal || grown.memTotal === 0, JSON.stringify(grown));
  } finally {
    await sbx.kill();
  }
});

test('GET /sandboxes/metrics gives the latest sample of the caller\'s sandboxes only', async () => {
  const a = await Sandbox.create(TEMPLATE);
  const theirs = await Sandbox.create(TEMPLATE, { apiKey: otherKey });
  try {
    const ids = `${a.sandboxId},${theirs.sandboxId},no-such-sandbox`;
    const got = await waitFor('a sample of the sandbox', async () => {
      const r = await w.api('GET', `/sandboxes/metrics?sandbox_ids=${ids}`, { key: otherKey });
      assert.equal(r.status, 200, r.text);
      return r.json.sandboxes[theirs.sandboxId] ? r.json : undefined;
    });
    assert.deepEqual(Object.keys(got.sandboxes), [theirs.sandboxId], 'only its own');
    const m = got.sandboxes[theirs.sandboxId];
    for (const k of ['cpuCount', 'cpuUsedPct', 'memUsed', 'memTotal', 'diskUsed', 'diskTotal',
      'timestampUnix']) {
      assert.equal(typeof m[k], 'number', k);
    }
    const missing = await w.api('GET', '/sandboxes/metrics');
    assert.equal(missing.status, 400);
    assert.match(missing.json.message, /sandbox_ids/);
  } finally {
    await a.kill();
    await theirs.kill();
  }
});

test('a team reads its own concurrency and start rate, not another team\'s', async () => {
  const teams = await w.api('GET', '/teams', { key: otherKey });
  assert.equal(teams.status, 200, teams.text);
  assert.deepEqual(teams.json.map((t) => t.teamID), ['observe-other']);
  const since = Math.floor(Date.now() / 1000) - 1;
  const sbx = await Sandbox.create(TEMPLATE, { apiKey: otherKey });
  try {
    const samples = await waitFor('a sample counting the sandbox', async () => {
      const r = await w.api('GET', `/teams/observe-other/metrics?start=${since}`, { key: otherKey });
      assert.equal(r.status, 200, r.text);
      return r.json.some((s) => s.concurrentSandboxes >= 1) ? r.json : undefined;
    }, 20000);
    assert.ok(samples.some((s) => s.sandboxStartRate > 0), JSON.stringify(samples));
    assert.ok(samples.every((s) => s.timestampUnix >= since), JSON.stringify(samples));
    const max = await w.api('GET',
      `/teams/observe-other/metrics/max?metric=concurrent_sandboxes&start=${since}`,
      { key: otherKey });
    assert.equal(max.status, 200, max.text);
    assert.ok(max.json.value >= 1, max.text);
    // Another team's history is refused, the admin reads any.
    const denied = await w.api('GET', `/teams/${NS}/metrics`, { key: otherKey });
    assert.equal(denied.status, 403, denied.text);
    const deniedMax = await w.api('GET', `/teams/${NS}/metrics/max?metric=concurrent_sandboxes`,
      { key: otherKey });
    assert.equal(deniedMax.status, 403, deniedMax.text);
    assert.equal((await w.api('GET', '/teams/observe-other/metrics')).status, 200);
  } finally {
    await sbx.kill();
  }
});

test('the audit journal lists who did what, commands with exit codes, and survives a restart', async () => {
  const teams = await w.api('GET', '/teams');
  const adminTeam = teams.json.find((t) => t.isDefault).teamID;
  const sbx = await Sandbox.create(TEMPLATE);
  const id = sbx.sandboxId;
  try {
    const run = await sbx.commands.run('echo audited; exit 3').catch((e) => e);
    assert.equal(run.exitCode, 3);
    await sbx.files.write('/home/user/audited.txt', 'x');
    await sbx.files.remove('/home/user/audited.txt');
    await sbx.setTimeout(120_000);
    // Another team's attempt finds no such sandbox: nothing of it lands in any journal.
    assert.equal((await w.api('POST', `/sandboxes/${id}/pause`, { key: otherKey })).status, 404);

    const audit = async (key = w.adminKey) => w.api('GET', `/sandboxes/${id}/audit`, { key });
    const entries = await waitFor('the command in the journal', async () => {
      const r = await audit();
      assert.equal(r.status, 200, r.text);
      return r.json.items.some((e) => e.action === 'process.end') ? r.json.items : undefined;
    });
    const create = entries.find((e) => e.action === 'create');
    assert.ok(create, JSON.stringify(entries));
    assert.equal(create.source, 'api');
    assert.equal(create.team, adminTeam);
    assert.equal(create.status, 201);
    assert.ok(create.actor && create.keyId, JSON.stringify(create));
    assert.ok(entries.some((e) => e.action === 'set_timeout' && e.status === 204));
    const start = entries.find((e) => e.action === 'process.start' && e.args?.join(' ').includes('audited'));
    assert.ok(start, JSON.stringify(entries));
    assert.equal(start.source, 'envd');
    assert.equal(start.user, 'user');
    const end = entries.find((e) => e.action === 'process.end' && e.pid === start.pid);
    assert.equal(end.exitCode, 3, JSON.stringify(end));
    assert.equal(typeof end.durationMs, 'number');
    assert.ok(entries.some((e) => e.action === 'file.write' && e.path === '/home/user/audited.txt'));
    assert.ok(entries.some((e) => e.action === 'file.remove' && e.path === '/home/user/audited.txt'));
    assert.ok(!entries.some((e) => e.team === 'observe-other'), 'no other team in our journal');
    const times = entries.map((e) => Date.parse(e.time));
    assert.ok(times.every((t) => !Number.isNaN(t)), JSON.stringify(entries));
    // Another team cannot read it, by id or by Sandbox name.
    assert.equal((await audit(otherKey)).status, 404);
    const named = await w.sandboxObject(id);
    const byName = await fetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/` +
      `${named.metadata.namespace}/sandboxes/${named.metadata.name}/audit`,
    { headers: { authorization: `Bearer ${otherKey}` } });
    assert.equal(byName.status, 404);
    const mine = await w.apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/` +
      `${named.metadata.namespace}/sandboxes/${named.metadata.name}/audit`);
    assert.equal(mine.status, 200);

    // A server restart keeps it; the CLI prints it by Sandbox name.
    await w.restart();
    useEnv(w);
    const after = await audit();
    assert.equal(after.status, 200, after.text);
    assert.ok(after.json.items.length >= entries.length, 'nothing lost in the restart');
    const obj = await w.sandboxObject(id);
    const cli = spawnSync(warrenBinary(), ['audit', obj.metadata.name, '-n', obj.metadata.namespace,
      '--server', w.apiUrl.replace('http://', '')], { encoding: 'utf8', env: { ...process.env, WARREN_API_KEY: w.adminKey } });
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /process\.end\s+.*exit 3/);
    assert.match(cli.stdout, /create\s+HTTP 201/);
    // A write through the resource API (kubectl style) is journalled too.
    const patched = await w.apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/` +
      `${obj.metadata.namespace}/sandboxes/${obj.metadata.name}`, {
      method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { labels: { audited: 'yes' } } }),
    });
    assert.equal(patched.status, 200, await patched.text());
    const withPatch = (await audit()).json.items;
    assert.ok(withPatch.some((e) => e.action === 'resource.patch' && e.status === 200 &&
      e.source === 'api'), JSON.stringify(withPatch.slice(-3)));
  } finally {
    await Sandbox.kill(id);
  }
  // The kill is recorded, and the journal is still there by id once the sandbox is gone.
  const gone = await waitFor('the kill in the journal', async () => {
    const r = await w.api('GET', `/sandboxes/${id}/audit`);
    return r.status === 200 && r.json.items.some((e) => e.action === 'kill') ? r.json : undefined;
  });
  assert.equal(gone.items.at(-1).status, 204);
});
