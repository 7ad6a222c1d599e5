// bench/claim/claim_steps.mjs: where a pool claim's time goes, step by step, from the server's
// own spans. Starts `warren server` with tracing on (every request sampled) to an OTLP receiver
// in this process, fills a pool, makes claims at c=1 (or --concurrency N) over HTTP the way
// claim_bench does (bursts the pool can serve, kills after each burst, so no refill or teardown
// runs during a claim) and prints, per span name, the count and p50 / p99 / max durations,
// beside the client's own latency. What the root span does not account for in its children is
// printed as "(root, not in a child)". See README.md.
//
//   sudo node bench/claim/claim_steps.mjs [--pool 50] [--claims 500] [--concurrency 1]
//                                         [--no-refill] [--no-tracing]
//   sudo node bench/claim/claim_steps.mjs --cold 100
//
// --cold N: no pool; N cold creates of the `base` template, one at a time, each killed right
// after it answered (as bench/e2b_create does: its teardown overlaps the next create), with the
// same per-step rows (the node agent's create, start, readiness and /init are in each trace).
//
// With CLAIM_STEPS_MARK=1 in the environment each burst's start is printed with the server's
// pid ("burst start pid N"), for `perf record -p N` to attach. With CLAIM_STEPS_LOG=<file> the
// server's log is written there at the end.
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { startWarren } from '../../tests/e2e/sdk/harness.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const POOL = arg('pool', 50);
// One burst with refills stopped (scaleStrategy.maxUnavailable 0) once the pool is full: the
// claims alone, for a profiler attached during it.
const NO_REFILL = process.argv.includes('--no-refill');
const CLAIMS = NO_REFILL ? Math.min(arg('claims', 500), POOL) : arg('claims', 500);
const CONCURRENCY = arg('concurrency', 1);
const COLD = arg('cold', 0);

const spans = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    try {
      for (const rs of JSON.parse(body).resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) spans.push(s);
        }
      }
    } catch { /* a malformed batch is not ours to judge here */ }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const endpoint = `http://127.0.0.1:${receiver.address().port}`;

// --no-tracing: the same claims with tracing off (CPU and latency only, no steps).
const w = await startWarren({
  args: process.argv.includes('--no-tracing') ? [] : ['--tracing-endpoint', endpoint] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SETS = '/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets';
const client = [];
let writes = 0;
let cpu = 0;
// The store's revision counts its writes (every kind).
const revision = async () => Number((await (await w.apiFetch(
  `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets`)).json())
  .metadata?.resourceVersion ?? 0);
// CPU the server process spent (user + system), in ms, from /proc (clock ticks of 10 ms).
const cpuMs = () => {
  const f = readFileSync(`/proc/${w.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
const createOne = async (templateID, metadata) => {
  const t0 = performance.now();
  const r = await fetch(`${w.apiUrl}/sandboxes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-API-Key': w.adminKey },
    body: JSON.stringify({ templateID, metadata }),
  });
  const body = await r.json();
  client.push(performance.now() - t0);
  if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(body)}`);
  return body.sandboxID;
};
const kill = (id) => fetch(`${w.apiUrl}/sandboxes/${id}`, { method: 'DELETE',
  headers: { 'X-API-Key': w.adminKey } });

// Cold creates: the whole create path, no pool.
const runCold = async () => {
  const before = await revision();
  const cpuBefore = cpuMs();
  for (let i = 0; i < COLD; i++) await kill(await createOne('base', {}));
  cpu = cpuMs() - cpuBefore;
  writes = (await revision()) - before;
};

try {
  if (COLD > 0) {
    await runCold();
  } else {
    await runClaims();
  }
  await sleep(6000);  // the exporter's batch interval
  report();
} finally {
  // CLAIM_STEPS_LOG=<file>: the server's log, for what the spans do not break down.
  if (process.env.CLAIM_STEPS_LOG) writeFileSync(process.env.CLAIM_STEPS_LOG, w.log());
  if (COLD === 0) await w.apiFetch(`${w.apiUrl}${SETS}/steps`, { method: 'DELETE' }).catch(() => {});
  await w.stop();
  receiver.close();
}

async function runClaims() {
  const res = await w.apiFetch(w.apiUrl + SETS, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name: 'steps' },
      spec: { replicas: POOL, template: { spec: { containers: [{ name: 'main', image: 'base' }] } } },
    }),
  });
  if (res.status !== 201) throw new Error(`pool: ${res.status} ${await res.text()}`);
  const available = async () =>
    (await (await w.apiFetch(`${w.apiUrl}${SETS}/steps`)).json()).status?.availableReplicas ?? 0;
  const count = async () => (await w.sandboxObjects()).length;
  let done = 0;
  while (done < CLAIMS) {
    for (let i = 0; (await available()) < POOL || (await count()) !== POOL; i++) {
      if (i > 6000) throw new Error('the pool did not refill');
      await sleep(50);
    }
    if (NO_REFILL) {
      const r = await w.apiFetch(`${w.apiUrl}${SETS}/steps`, {
        method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ spec: { scaleStrategy: { maxUnavailable: 0 } } }),
      });
      if (r.status !== 200) throw new Error(`stop refills: ${r.status}`);
      await sleep(500);
    }
    const ids = [];
    if (process.env.CLAIM_STEPS_MARK) console.log(`burst start pid ${w.child.pid}`);
    const burst = Math.min(POOL, CLAIMS - done);
    const before = await revision();
    const cpuBefore = cpuMs();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < burst; i = next++) {
        ids.push(await createOne('steps', { 'e2b.agents.kruise.io/create-on-no-stock': 'false' }));
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    cpu += cpuMs() - cpuBefore;
    await sleep(1500);  // what the claims set off (status writes, the set's status) lands
    writes += (await revision()) - before;
    for (const id of ids) await kill(id);
    done += burst;
  }
}

function report() {
  const q = (xs, p) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.round(p * (s.length - 1)))] : 0;
  };
  const ms = (s) => (Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6);
  // The claim requests' traces: their root is the POST /sandboxes span.
  const byTrace = new Map();
  for (const s of spans) {
    if (!byTrace.has(s.traceId)) byTrace.set(s.traceId, []);
    byTrace.get(s.traceId).push(s);
  }
  const rows = new Map();
  const add = (name, v) => { if (!rows.has(name)) rows.set(name, []); rows.get(name).push(v); };
  for (const trace of byTrace.values()) {
    const root = trace.find((s) => !s.parentSpanId);
    if (!root || !/POST \/sandboxes$/.test(root.name)) continue;
    add(`${root.name} (root)`, ms(root));
    let children = 0;
    for (const s of trace) {
      if (s === root) continue;
      add(s.name, ms(s));
      if (s.parentSpanId === root.spanId) children += ms(s);
    }
    // A cold create's node spans overlap its own infra.waitReady: no remainder to print.
    if (COLD === 0) add('(root, not in a child)', ms(root) - children);
  }
  console.log(COLD > 0
    ? `create steps: ${client.length} cold creates of 'base' (no pool), c=1, each killed after it answered`
    : `claim steps: pool of ${POOL}, ${client.length} claims at c=${CONCURRENCY}, kills after each burst`);
  console.log(`${'step'.padEnd(40)} ${'n'.padStart(6)} ${'p50 ms'.padStart(8)} ${
    'p99 ms'.padStart(8)} ${'max ms'.padStart(8)}`);
  const line = (name, xs) => console.log(
    `${name.padEnd(40)} ${String(xs.length).padStart(6)} ${q(xs, 0.5).toFixed(3).padStart(8)} ` +
    `${q(xs, 0.99).toFixed(3).padStart(8)} ${q(xs, 1).toFixed(3).padStart(8)}`);
  line('client: POST /sandboxes', client);
  console.log(`store writes per ${COLD > 0 ? 'create (and its kill)' : 'claim (all kinds, the burst and 1.5 s after it)'}: ${
    (writes / client.length).toFixed(2)}; server CPU per ${COLD > 0 ? 'create' : 'claim during the bursts'}: ${
    (cpu / client.length).toFixed(2)} ms`);
  for (const [name, xs] of rows) line(name, xs);
}
