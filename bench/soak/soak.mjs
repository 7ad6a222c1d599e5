// The soak and the fault matrix of issue 19 (README.md). Drives the unmodified e2b SDK against
// a `warren server` of its own (temp data dir, admin key) through the mixed cycle of
// workload.mjs, and prints calls/s, every failure by step and cause, p50/p99 per step, and the
// leak census (scripts/census, plus the server's fds, threads and RSS) before and after.
//   node bench/soak/soak.mjs [--n 10000 | --duration 600] [--concurrency 10] [--pool 10]
//   node bench/soak/soak.mjs --fault kill-9|sigstop|envd-kill|memory|disk-full|store-ro
//   node bench/soak/soak.mjs --faults all [--concurrency 4]
//   node bench/soak/soak.mjs --smoke      (what ctest runs: 4 cycles, then the sigstop fault)
// Options: --request-timeout-ms (30000; a step unanswered 5 s past it is a hang).
// Exit 1 on any unexpected failure, hang, lost write or leak; 77 when not root (skipped).
// SIGINT/SIGTERM stop the workload and run the cleanup (faults undone, sandboxes deleted,
// server stopped, tmpfs unmounted); a second signal exits at once.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from './server.mjs';
import { FAULTS } from './faults.mjs';
import { Sandbox, Tally, Witnesses, apiOpts, describeError, listedIds, now, pct, runClients,
  sdkVersion, sleep } from './workload.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const censusScript = path.resolve(here, '../../scripts/census');
const POOL = 'soak-pool';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const arg = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const smoke = flag('--smoke');
const concurrency = Number(arg('--concurrency', smoke ? 2 : 10));
const n = smoke ? 4 : Number(arg('--n', argv.includes('--duration') ? Infinity : 10000));
const durationS = Number(arg('--duration', Infinity));
const poolReplicas = Number(arg('--pool', smoke ? 2 : concurrency));
const requestTimeoutMs = Number(arg('--request-timeout-ms', 30000));
const hangMs = requestTimeoutMs + 5000;
const faultArg = smoke ? 'sigstop' : (arg('--faults') === 'all' ? 'all' : arg('--fault'));
const faultNames = faultArg === 'all' ? FAULTS.map((f) => f.name) : faultArg ? [faultArg] : [];
if (!(n >= 1) || !(concurrency >= 1) || !(durationS > 0) || !(requestTimeoutMs > 0) ||
    !(poolReplicas >= 0)) {
  console.error('soak: --n, --duration, --concurrency, --pool and --request-timeout-ms must be positive numbers');
  process.exit(2);
}
for (const f of faultNames) {
  if (!FAULTS.some((x) => x.name === f)) {
    console.error(`soak: no fault "${f}"; the faults are ${FAULTS.map((x) => x.name).join(', ')}, or --faults all`);
    process.exit(2);
  }
}
if (process.getuid() !== 0) {
  console.log('soak: needs root (real sandboxes, mounts, signals to its server); skipped');
  process.exit(77);
}

// ---- stop signals and undo of whatever a fault changed on the host ----
let stopRequested = false;
const restore = new Map();  // name → undo, run on exit whatever happens
const servers = new Set();
function undoAll() {
  for (const [, undo] of restore) { try { undo(); } catch {} }
  restore.clear();
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    if (stopRequested) {
      undoAll();
      for (const s of servers) { try { s.child.kill('SIGCONT'); s.child.kill('SIGKILL'); } catch {} }
      process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 })[sig]);
    }
    stopRequested = true;
    console.log(`soak: ${sig}: stopping the workload and cleaning up (again to exit at once)`);
  });
}
const restoreApi = { add: (k, f) => restore.set(k, f), delete: (k) => restore.delete(k) };

// ---- census ----
function census() {
  const r = spawnSync(censusScript, [], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`scripts/census: ${r.stderr}`);
  return r.stdout;
}
function censusSummary(text) {
  const counts = {};
  for (const line of text.split('\n').filter(Boolean)) {
    const kind = line.split('\t')[0];
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ');
}
// Compares with an earlier census; returns the entries left (empty: nothing).
function censusLeft(before) {
  const dir = mkdtempSync(path.join(tmpdir(), 'warren-soak-census-'));
  const file = path.join(dir, 'before');
  writeFileSync(file, before);
  const r = spawnSync(censusScript, ['--compare', file, '--settle', '30'], { encoding: 'utf8' });
  rmSync(dir, { recursive: true, force: true });
  if (r.status === 0) return [];
  return r.stderr.split('\n').filter((l) => l && !l.startsWith('census:'));
}
const fmtStats = (s) => (s ? `fds ${s.fds}, threads ${s.threads}, RSS ${s.rssMb} MB` : 'not running');

// ---- reporting ----
// "step: cause ×count" for failures; causes with sandbox ids and numbers folded together.
function byCause(failures) {
  const m = new Map();
  for (const f of failures) {
    const cause = f.error.replace(/\bi[a-z0-9]{20}\b/g, '<id>').replace(/\d+ ms/g, 'N ms')
      .replace(/'\/home\/user\/[^']*'/g, "'<file>'").slice(0, 200);
    const k = `${f.step}: ${cause}`;
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}
function printSteps(tally) {
  for (const [step, s] of Object.entries(tally.steps)) {
    const extra = s.expected ? `, ${s.expected} expected TimeoutError` : '';
    console.log(`  ${step.padEnd(14)} ${String(s.ok).padStart(6)} ok${extra}  p50 ${pct(s.ms, 50).toFixed(1)} ms  p99 ${pct(s.ms, 99).toFixed(1)} ms`);
  }
}
function hostFacts(label) {
  const l = loadavg().map((x) => x.toFixed(2)).join(' ');
  return `${label}: kernel ${release()}, ${cpus().length} cores, load ${l}`;
}

// ---- the soak ----
async function soak() {
  const before = census();
  console.log(hostFacts('host'));
  console.log(`soak: e2b ${sdkVersion}, ${Number.isFinite(n) ? `${n} cycles` : `${durationS} s`}, ` +
    `concurrency ${concurrency}, pool ${poolReplicas}, request timeout ${requestTimeoutMs} ms`);
  console.log(`census before: ${censusSummary(before)}`);
  const server = new Server();
  servers.add(server);
  const tally = new Tally();
  const live = new Set();
  let unexpected = 0;
  let left = [];
  let wallMs = 0;
  try {
    await server.init();
    if (poolReplicas > 0) await server.applyPool(POOL, poolReplicas);
    const statsBefore = server.procStats();
    console.log(`server pid ${server.pid} at start: ${fmtStats(statsBefore)}`);
    const start = now();
    const progress = setInterval(() => {
      const s = (now() - start) / 1000;
      console.log(`  ${s.toFixed(0)} s: ${tally.cyclesOk}/${tally.cycles} cycles ok, ` +
        `${tally.failures.length} failed, ${(tally.calls / s).toFixed(1)} calls/s, server ${fmtStats(server.procStats())}`);
    }, 120000);
    const deadline = Date.now() + (Number.isFinite(durationS) ? durationS * 1000 : 1e12);
    await runClients({ concurrency, n, deadline, stop: () => stopRequested, tally,
      pool: poolReplicas > 0 ? POOL : null, requestTimeoutMs, hangMs, live,
      onFailure: (f) => {
        console.log(`FAIL cycle=${f.cycle} step=${f.step} sandbox=${f.sandboxId} error=${f.error}`);
      } });
    clearInterval(progress);
    wallMs = now() - start;
    unexpected = tally.failures.length;
    console.log(`server at end: ${fmtStats(server.procStats())}`);
    const listed = await listedIds(requestTimeoutMs).catch(() => new Set());
    const stray = [...live].filter((id) => listed.has(id));
    for (const id of stray) await Sandbox.kill(id, apiOpts(requestTimeoutMs)).catch(() => {});
  } finally {
    left = await server.stop().catch((e) => [`stop: ${e.message}`]);
    undoAll();
  }
  console.log(`soak: ${tally.cyclesOk}/${tally.cycles} cycles ok, ${tally.failures.length} failed, ` +
    `${tally.hangs} hangs, ${tally.calls} calls in ${(wallMs / 1000).toFixed(0)} s: ` +
    `${(tally.calls / (wallMs / 1000)).toFixed(1)} calls/s, ${(tally.cycles / (wallMs / 1000)).toFixed(2)} cycles/s`);
  printSteps(tally);
  for (const [k, c] of byCause(tally.failures)) console.log(`  failure ×${c} ${k}`);
  if (left.length) console.log(`sandboxes left after stop: ${left.join(', ')}`);
  const leaks = censusLeft(before);
  console.log(`census after: ${censusSummary(census())}; ${leaks.length ? `LEFT: ${leaks.join('; ')}` : 'nothing left behind'}`);
  console.log(hostFacts('host after'));
  return unexpected === 0 && tally.hangs === 0 && leaks.length === 0 && left.length === 0;
}

// ---- the fault matrix ----
async function faultRun(fault) {
  const before = census();
  const server = new Server({ tmpfsBytes: fault.tmpfsBytes ?? 0, env: fault.env ?? {} });
  servers.add(server);
  const tally = new Tally();
  const live = new Set();
  const notes = [];
  const witnesses = new Witnesses({ count: 3, requestTimeoutMs, tally });
  const row = { fault: fault.name, errors: '', hangs: 0, recoveryMs: NaN, lost: [], leaks: [], notes };
  let faultStart = 0;
  let faultEnd = 0;
  let recoveredAt = 0;
  let stopWork = false;
  let running = [];  // the workload and the witness writer, stopped and awaited whatever happens
  try {
    await server.init();
    const faultConcurrency = Math.max(1, concurrency);
    await server.applyPool(POOL, Math.min(poolReplicas || 2, faultConcurrency));
    await witnesses.create();
    const statsBefore = server.procStats();
    const work = runClients({ concurrency: faultConcurrency, stop: () => stopWork || stopRequested,
      tally, pool: POOL, requestTimeoutMs, hangMs, live });
    const writing = witnesses.writeLoop(() => stopWork || stopRequested);
    running = [work, writing];
    await sleep(smoke ? 3000 : 10000);
    const warmFailures = tally.failures.length;
    faultStart = now();
    console.log(`fault ${fault.name}: ${fault.what}`);
    faultEnd = await fault.inject({ server, restore: restoreApi, requestTimeoutMs, notes });
    // Recovery: the first create → run → kill that succeeds after the fault ended.
    const giveUp = now() + 180000;
    while (!stopRequested && now() < giveUp) {
      try {
        const sbx = await Sandbox.create('base', apiOpts(requestTimeoutMs, { timeoutMs: 60_000 }));
        const r = await sbx.commands.run('echo ok', { requestTimeoutMs });
        await sbx.kill(apiOpts(requestTimeoutMs)).catch(() => {});
        if (r.stdout === 'ok\n') { recoveredAt = now(); break; }
      } catch (e) {
        notes.push(`recovery probe: ${describeError(e).slice(0, 160)}`);
        await sleep(500);
      }
    }
    row.recoveryMs = recoveredAt ? recoveredAt - faultEnd : NaN;
    await sleep(smoke ? 1000 : 5000);
    stopWork = true;
    await Promise.all([work, writing]);
    const afterRecovery = tally.failures.filter((f) => recoveredAt && f.at > recoveredAt + 2000);
    row.unexpected = warmFailures + afterRecovery.length;
    row.lost = await witnesses.verify().catch((e) => [`verify: ${describeError(e)}`]);
    const listed = await listedIds(requestTimeoutMs).catch(() => new Set());
    for (const id of live) {
      if (!listed.has(id)) row.lost.push(`sandbox ${id} (create acknowledged, not killed) not listed`);
      else await Sandbox.kill(id, apiOpts(requestTimeoutMs)).catch(() => {});
      live.delete(id);
    }
    row.stats = `${fmtStats(statsBefore)} → ${fmtStats(server.procStats())}`;
  } catch (e) {
    row.error = describeError(e);
  } finally {
    stopWork = true;
    await Promise.allSettled(running);
    for (const id of live) await Sandbox.kill(id, apiOpts(requestTimeoutMs)).catch(() => {});
    await witnesses.kill();
    undoAll();
    const left = await server.stop().catch((e) => [`stop: ${e.message}`]);
    if (left.length) row.leaks.push(`sandboxes: ${left.join(', ')}`);
  }
  const during = tally.failures.filter((f) => f.at >= faultStart);
  row.errors = byCause(during);
  row.hangs = tally.hangs;
  row.acked = witnesses.acknowledged();
  row.cycles = `${tally.cyclesOk}/${tally.cycles}`;
  row.leaks.push(...censusLeft(before));
  return row;
}

function printMatrix(rows) {
  console.log('\n| fault | client-visible errors | recovery time | data lost | leaks |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    const errs = r.errors.length
      ? r.errors.slice(0, 4).map(([k, c]) => `${c}× ${k}`).join('<br>') + (r.errors.length > 4 ? `<br>(+${r.errors.length - 4} more kinds)` : '')
      : 'none';
    const hang = r.hangs ? `<br>**${r.hangs} hangs**` : '';
    const rec = Number.isFinite(r.recoveryMs) ? `${(r.recoveryMs / 1000).toFixed(1)} s` : '**not recovered**';
    const lost = r.lost.length ? `**${r.lost.length}**: ${r.lost.slice(0, 3).join('; ')}` : `none (${r.acked} acknowledged writes read back)`;
    const leaks = r.leaks.length ? `**${r.leaks.join('; ')}**` : 'none';
    console.log(`| ${r.fault} | ${errs}${hang}${r.error ? `<br>run error: ${r.error}` : ''} | ${rec} | ${lost} | ${leaks} |`);
  }
  console.log('');
  for (const r of rows) {
    console.log(`${r.fault}: cycles ${r.cycles}; server ${r.stats ?? '-'}`);
    for (const note of r.notes) console.log(`  ${note}`);
    if (r.unexpected) console.log(`  ${r.unexpected} failures outside the fault window (before it, or 2 s after recovery)`);
  }
}

async function matrix() {
  console.log(hostFacts('host'));
  console.log(`fault matrix: e2b ${sdkVersion}, concurrency ${concurrency}, request timeout ${requestTimeoutMs} ms, faults ${faultNames.join(', ')}`);
  const rows = [];
  for (const name of faultNames) {
    if (stopRequested) break;
    const row = await faultRun(FAULTS.find((f) => f.name === name));
    rows.push(row);
    console.log(`fault ${name} done: recovery ${(row.recoveryMs / 1000).toFixed(1)} s, ` +
      `${row.errors.reduce((a, [, c]) => a + c, 0)} client errors, ${row.hangs} hangs, ` +
      `${row.lost.length} lost, ${row.leaks.length} leaks${row.error ? `, run error: ${row.error}` : ''}`);
  }
  printMatrix(rows);
  console.log(hostFacts('host after'));
  return rows.every((r) => !r.error && r.hangs === 0 && r.lost.length === 0 && r.leaks.length === 0 &&
    Number.isFinite(r.recoveryMs) && !r.unexpected);
}

let ok = true;
try {
  if (smoke || faultNames.length === 0) ok = await soak();
  if (faultNames.length && !stopRequested) ok = (await matrix()) && ok;
} catch (e) {
  console.error(`soak: ${e.stack ?? e}`);
  ok = false;
} finally {
  undoAll();
}
process.exit(stopRequested ? 130 : ok ? 0 : 1);
