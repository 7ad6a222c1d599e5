// Sandbox.create + commands.run('true') + kill through the unmodified e2b SDK against a real
// warren server (cold: no pool), N times in a row; p50/p99 of the whole cycle and of each step,
// printed beside a reference measured in the same run: the raw runtime and `runc run` of
// bench/cold_create (create + start + ready, and destroy), so the cost of the control plane,
// envd, the gateway and the SDK shows against the bare sandbox.
//   node bench/e2b_create/e2b_create.mjs [--n 100] [--concurrency 1] [--quick]
// --concurrency C runs C clients at once, each doing whole cycles until N are done, and prints
// the cycles per second beside the sequential rate of `runc run` + `runc delete` in the same run.
// --quick (what ctest runs) does 3 cycles and a 2-sandbox reference, only to keep it working.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg, cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startWarren, useEnv, loadSdk } = await import(
  path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));
const { Sandbox, version: sdkVersion } = await loadSdk();

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const nIndex = argv.indexOf('--n');
const n = quick ? 3 : (nIndex >= 0 ? Number(argv[nIndex + 1]) : 100);
const cIndex = argv.indexOf('--concurrency');
const concurrency = quick ? 1 : (cIndex >= 0 ? Number(argv[cIndex + 1]) : 1);
const warmup = quick ? 1 : 3;
if (!(n >= 1) || !(concurrency >= 1) || concurrency > n) {
  console.error('e2b_create: --n and --concurrency must be positive, with concurrency <= n');
  process.exit(2);
}

if (process.getuid() !== 0) {
  console.log('e2b_create: needs root (real sandboxes); skipped');
  process.exit(77);
}

function now() { return Number(process.hrtime.bigint()) / 1e6; }
// CPU milliseconds: the whole machine's busy time (/proc/stat), and one process's own user +
// system time (/proc/PID/stat), so a run shows where the cycles' CPU went.
const tickMs = 10;  // USER_HZ is 100 on Linux
function machineBusyMs() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  return (f.reduce((a, b) => a + b, 0) - idle) * tickMs;
}
function processCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * tickMs;
}
function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
function summary(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, min: s[0], p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99) };
}
function row(name, xs) {
  const r = summary(xs);
  const f = (x) => x.toFixed(2).padStart(9);
  return `  ${name.padEnd(40)} ${String(r.n).padStart(5)} ${f(r.min)} ${f(r.p50)} ${f(r.p90)} ${f(r.p99)}`;
}

const w = await startWarren();
const total = []; const create = []; const run = []; const kill = [];
const load0 = loadavg();
let wall = 0;
let cpu = null;
try {
  useEnv(w);
  async function cycle(timed) {
    const t0 = now();
    const sbx = await Sandbox.create('base');
    const t1 = now();
    const r = await sbx.commands.run('true');
    const t2 = now();
    if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`);
    if (!(await sbx.kill())) throw new Error('kill returned false');
    const t3 = now();
    if (!timed) return;
    total.push(t3 - t0); create.push(t1 - t0); run.push(t2 - t1); kill.push(t3 - t2);
  }
  for (let i = 0; i < warmup; i++) await cycle(false);
  let next = 0;
  const cpu0 = { machine: machineBusyMs(), server: processCpuMs(w.child.pid), client: process.cpuUsage() };
  const start = now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      next++;
      await cycle(true);
    }
  }));
  wall = now() - start;
  cpu = {
    machine: machineBusyMs() - cpu0.machine,
    server: processCpuMs(w.child.pid) - cpu0.server,
    client: (() => { const u = process.cpuUsage(cpu0.client); return (u.user + u.system) / 1000; })(),
  };
} finally {
  await w.stop();
}
const load1 = loadavg();

// The reference, in the same run: bench/cold_create's native runtime and runc rows.
const coldCreate = process.env.COLD_CREATE_BIN ??
    path.resolve(here, '../../build/release/bench/cold_create/cold_create');
let reference = '  (bench/cold_create not built: no reference)';
if (existsSync(coldCreate)) {
  const refN = String(quick ? 2 : n);
  const r = spawnSync(coldCreate, ['--n', refN, '--runc-n', refN, '--userns-n', '0', '--idle', '0',
    '--warmup', '1'], { encoding: 'utf8', timeout: 600_000 });
  const wanted = /^\s*(ms\s|warren native: create\+start\+ready|warren native: destroy|runc run --detach: to ready|runc delete --force|speedup)/;
  const lines = (r.stdout ?? '').split('\n').filter((l) => wanted.test(l));
  reference = lines.length ? lines.join('\n') : `  (cold_create failed: ${r.stderr?.slice(-400)})`;
}

console.log(`e2b_create: e2b SDK ${sdkVersion}, ` +
  `cold (no pool), N=${n}, concurrency ${concurrency}, ${cpus().length} cores, load ${load0.map((x) => x.toFixed(2)).join(' ')} → ${load1.map((x) => x.toFixed(2)).join(' ')}`);
console.log(`  ${'ms'.padEnd(40)} ${'n'.padStart(5)} ${'min'.padStart(9)} ${'p50'.padStart(9)} ${'p90'.padStart(9)} ${'p99'.padStart(9)}`);
console.log(row("create + run('true') + kill (SDK)", total));
console.log(row('  Sandbox.create', create));
console.log(row("  commands.run('true')", run));
console.log(row('  kill', kill));
console.log('reference, same run (bench/cold_create: busybox httpd to TCP-ready):');
console.log(reference);
const runcRow = reference.split('\n').find((l) => l.includes('runc run --detach'));
const runcDelete = reference.split('\n').find((l) => l.includes('runc delete --force'));
const p50Of = (line) => (line ? Number(line.trim().split(/\s+/).at(-4)) : NaN);
const runcCycle = p50Of(runcRow) + p50Of(runcDelete);
console.log(`throughput: ${(n / (wall / 1000)).toFixed(1)} cycles/s with ${concurrency} client(s) ` +
  `(${n} cycles in ${(wall / 1000).toFixed(2)} s)` +
  (Number.isFinite(runcCycle)
    ? `; reference: runc run + delete in sequence at p50 = ${(1000 / runcCycle).toFixed(1)}/s`
    : ''));
if (cpu) {
  const per = (ms) => (ms / n).toFixed(1);
  console.log(`CPU per cycle: ${per(cpu.machine)} ms on the whole machine (${(cpu.machine / wall).toFixed(2)} of ` +
    `${cpus().length} cores busy): warren server ${per(cpu.server)} ms, this SDK client ${per(cpu.client)} ms, ` +
    `the rest (sandboxes: envd, bash -l; kernel; anything else running) ${per(cpu.machine - cpu.server - cpu.client)} ms`);
}
