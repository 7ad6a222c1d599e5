// Warren on an etcd cluster beside the embedded single-process server, in one run (issue 17):
// (a) `warren server` as run.sh starts it (SQLite store, node agent in the process) and
// (b) a cluster on one machine (tests/e2e/sdk/cluster.mjs): a 3-member etcd, 2 `warren server
// --node off --store etcd://…` replicas and 3 `warren node` processes. On each:
//   - pool claim: a SandboxSet of `base` filled, then E2B Sandbox.create(<the set>) through the
//     unmodified SDK, one at a time (c=1), in bursts the pool holds (wait until full, claim what
//     it holds, kill the claimed sandboxes untimed, repeat) until N claims: p50/p99 and claims/s
//     (over the bursts' time). `create-on-no-stock: false`, so a claim never turns into a cold
//     create. On the cluster, bursts alternate between the replicas;
//   - creates/s of a cheap object: SandboxTemplate POSTs to the resource API at concurrency 16
//     (the store-bound write path: admission, the store's write, its answer), against the
//     embedded server, against each cluster replica, and against both replicas at once.
// Printed as metric | SQLite embedded | etcd cluster | ratio, with the host's facts.
//
//   node bench/cluster/cluster_bench.mjs [--claims 200] [--pool 20] [--creates 1000]
//                                        [--nodes 3] [--quick]
// --quick (what bench/run-all --quick runs): 1 node, a pool of 4, 8 claims, 100 creates.
// WARREN_BIN names the warren binary (default build/release/apps/warren/warren).

import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startWarren, loadSdk } = await import(path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));
const { startCluster } = await import(path.resolve(here, '../../tests/e2e/sdk/cluster.mjs'));
const { Sandbox, version: sdkVersion } = await loadSdk();

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const arg = (name, full, q) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : (quick ? q : full);
};
const claims = arg('--claims', 200, 8);
const poolSize = arg('--pool', 20, 4);
const creates = arg('--creates', 1000, 100);
const nodes = arg('--nodes', 3, 1);
const CONCURRENCY = 16;
const POOL = 'bench-pool';
if (![claims, poolSize, creates, nodes].every((x) => Number.isInteger(x) && x >= 1)) {
  console.error('cluster_bench: --claims, --pool, --creates and --nodes must be positive integers');
  process.exit(2);
}
if (process.getuid() !== 0) {
  console.log('cluster_bench: needs root (real sandboxes); skipped');
  process.exit(77);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint()) / 1e6;
function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const log = (...a) => console.error(`[${new Date().toISOString().slice(11, 19)}]`, ...a);

// One API endpoint of a deployment: what the SDK and the resource API are given.
// t: { apiUrl, sandboxUrl, adminKey, apiFetch }.
const sdkOpts = (t) => ({ apiKey: t.adminKey, apiUrl: t.apiUrl, sandboxUrl: t.sandboxUrl,
  domain: 'localhost', requestTimeoutMs: 60000 });
const resources = (t) => `${t.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default`;

async function applyPool(t) {
  const res = await t.apiFetch(`${resources(t)}/sandboxsets`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name: POOL },
      spec: { replicas: poolSize, templateRef: { name: 'base' } },
    }),
  });
  if (res.status !== 201) throw new Error(`applying SandboxSet ${POOL}: ${await res.text()}`);
}

// Waits until the set has every member Available; returns the seconds it took.
async function waitFull(t, ms = 300000) {
  const t0 = now();
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await t.apiFetch(`${resources(t)}/sandboxsets/${POOL}`);
    const set = res.ok ? await res.json() : {};
    if ((set.status?.availableReplicas ?? 0) >= poolSize) return (now() - t0) / 1000;
    if (Date.now() > deadline) {
      throw new Error(`SandboxSet ${POOL} not full in ${ms / 1000} s: ${JSON.stringify(set.status)}`);
    }
    await sleep(50);
  }
}

// Bursts of c=1 claims through targets[burst % targets.length]; kills are not timed.
async function claimBench(targets) {
  await applyPool(targets[0]);
  const fill = await waitFull(targets[0]);
  log(`pool of ${poolSize} full in ${fill.toFixed(1)} s`);
  // One claim through each target first, not counted (the SDK's connections, the server's
  // first-use caches).
  for (const t of targets) {
    const sbx = await Sandbox.create(POOL, { ...sdkOpts(t), timeoutMs: 300000 });
    await sbx.kill();
  }
  const lat = [];
  const perTarget = targets.map(() => []);
  let timed = 0;
  for (let burst = 0; lat.length < claims; burst++) {
    await waitFull(targets[0]);
    const k = burst % targets.length;
    const t = targets[k];
    const got = [];
    const b0 = now();
    while (got.length < poolSize && lat.length < claims) {
      const c0 = now();
      const sbx = await Sandbox.create(POOL, { ...sdkOpts(t), timeoutMs: 300000,
        metadata: { 'e2b.agents.kruise.io/create-on-no-stock': 'false' } });
      const ms = now() - c0;
      lat.push(ms);
      perTarget[k].push(ms);
      got.push(sbx);
    }
    timed += now() - b0;
    await Promise.all(got.map((s) => s.kill()));
  }
  return { fill, lat, perTarget, perSecond: lat.length / (timed / 1000) };
}

// `count` SandboxTemplate POSTs at CONCURRENCY in flight, spread over `targets` (workers
// alternate between them).
let createRun = 0;
async function createBench(targets, count) {
  const run = createRun++;
  const lat = [];
  let next = 0;
  const failed = [];
  const t0 = now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
    const t = targets[w % targets.length];
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const name = `bench-${run}-${i}`;
      const c0 = now();
      const res = await t.apiFetch(`${resources(t)}/sandboxtemplates`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
          metadata: { name, namespace: 'default' },
          spec: { template: { spec: { containers: [{ name: 'main', image: 'base' }] } } } }),
      });
      lat.push(now() - c0);
      if (res.status !== 201) failed.push(`${name}: ${res.status} ${await res.text()}`);
    }
  }));
  const wall = now() - t0;
  if (failed.length) throw new Error(`${failed.length} creates failed: ${failed.slice(0, 3)}`);
  return { lat, perSecond: count / (wall / 1000) };
}

const host = { kernel: release(), cores: cpus().length,
  mem: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`, loadBefore: load() };
const fig = {};

// (a) The embedded server: SQLite, node agent in the process.
log(`embedded server (load ${load()})`);
fig.loadEmbedded = load();
const w = await startWarren();
try {
  const t = { apiUrl: w.apiUrl, sandboxUrl: w.sandboxUrl, adminKey: w.adminKey, apiFetch: w.apiFetch };
  fig.embClaim = await claimBench([t]);
  log(`embedded: claims p50 ${pct(fig.embClaim.lat, 50).toFixed(2)} ms`);
  await createBench([t], Math.min(50, creates));  // warm-up, not counted
  fig.embCreate = await createBench([t], creates);
  log(`embedded: ${fig.embCreate.perSecond.toFixed(0)} creates/s`);
} finally {
  await w.stop();
}

// (b) The cluster: 3 etcd members, 2 servers (--node off), `nodes` node processes.
log(`cluster: ${nodes} node(s) (load ${load()})`);
fig.loadCluster = load();
const c = await startCluster({ nodes, servers: 2, members: 3 });
try {
  await c.waitNodesReady(nodes);
  const ts = c.servers.map((s) => ({ apiUrl: s.apiUrl, sandboxUrl: s.sandboxUrl,
    adminKey: c.adminKey, apiFetch: c.apiFetch }));
  fig.cluClaim = await claimBench(ts);
  log(`cluster: claims p50 ${pct(fig.cluClaim.lat, 50).toFixed(2)} ms`);
  // The pool stays (full, idle) during the create runs, as on the embedded server.
  await createBench(ts, Math.min(50, creates));  // warm-up, not counted
  fig.cluCreate = [await createBench([ts[0]], creates), await createBench([ts[1]], creates),
    await createBench(ts, creates)];
  log(`cluster: ${fig.cluCreate.map((x) => x.perSecond.toFixed(0)).join(', ')} creates/s`);
} catch (e) {
  console.error(c.logs());
  throw e;
} finally {
  await c.stop();
}
host.loadAfter = load();

// The table.
const rows = [];
const row = (metric, a, b, unit, digits = 2) => rows.push([metric,
  `${a.toFixed(digits)} ${unit}`, `${b.toFixed(digits)} ${unit}`, `${(b / a).toFixed(2)}×`]);
const e = fig.embClaim; const k = fig.cluClaim;
row(`pool of ${poolSize}: filled in`, e.fill, k.fill, 's', 1);
row(`claim c=1 (n=${claims}): p50`, pct(e.lat, 50), pct(k.lat, 50), 'ms');
row(`claim c=1: p99`, pct(e.lat, 99), pct(k.lat, 99), 'ms');
row(`claim c=1: claims/s`, e.perSecond, k.perSecond, '/s', 0);
k.perTarget.forEach((xs, i) => {
  if (xs.length) row(`  through replica ${i} (n=${xs.length}): p50`, pct(e.lat, 50), pct(xs, 50), 'ms');
});
const ec = fig.embCreate;
const names = ['replica 0', 'replica 1', 'both replicas (8 + 8)'];
fig.cluCreate.forEach((x, i) => {
  row(`creates/s c=${CONCURRENCY} (n=${creates}), etcd: ${names[i]}`, ec.perSecond, x.perSecond, '/s', 0);
});
row(`create POST p50 (replica 0)`, pct(ec.lat, 50), pct(fig.cluCreate[0].lat, 50), 'ms');
row(`create POST p99 (replica 0)`, pct(ec.lat, 99), pct(fig.cluCreate[0].lat, 99), 'ms');

console.log(`cluster_bench: e2b SDK ${sdkVersion}; embedded = warren server (SQLite, node in ` +
  `process); cluster = 3 etcd members, 2 servers --node off, ${nodes} warren node process(es)`);
console.log(`host: kernel ${host.kernel}, ${host.cores} cores, ${host.mem}; load ${host.loadBefore} ` +
  `before, ${fig.loadEmbedded} at the embedded start, ${fig.loadCluster} at the cluster start, ` +
  `${host.loadAfter} after`);
const widths = [54, 16, 16, 7];
const line = (cols) => '  ' + cols.map((x, i) => (i === 0 ? x.padEnd(widths[i]) : x.padStart(widths[i]))).join(' ');
console.log(line(['metric', 'SQLite embedded', 'etcd cluster', 'ratio']));
for (const r of rows) console.log(line(r));
