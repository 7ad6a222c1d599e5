// What the stateful lifecycle costs through the unmodified e2b SDK against a real warren server,
// each row beside a reference measured in the same run:
//   - snapshot of a sandbox that wrote 100 MB (100 files of 1 MiB), and a create from that
//     snapshot to its first command answered, beside `cp -a` of the same tree on the host;
//   - fork ×10 wall time (10 new sandboxes with those files, all answering a command);
//   - the first command after a pause, seen by the caller while the gateway resumes the
//     sandbox (memory kept: thaw; memory not kept: a boot on its files), beside the same
//     command on a running sandbox; on gVisor (where runsc is installed) the pause is a
//     hibernate and the parked command waits for the restore;
//   - on gVisor, fork ×10 of a sandbox holding 100 MB in memory (every fork restored from it),
//     beside one hibernate + restore of the same sandbox.
//   node bench/lifecycle/lifecycle.mjs [--n 10] [--mb 100] [--quick]
// --quick (what ctest runs) does 2 rounds of 4 MB, only to keep it working.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startWarren, useEnv, loadSdk } = await import(
  path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));
const { Sandbox, version: sdkVersion } = await loadSdk();

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const arg = (name, def) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const n = quick ? 2 : arg('--n', 10);
const mb = quick ? 4 : arg('--mb', 100);
const forks = quick ? 2 : 10;
if (!(n >= 1) || !(mb >= 1)) {
  console.error('lifecycle: --n and --mb must be positive');
  process.exit(2);
}
if (process.getuid() !== 0) {
  console.log('lifecycle: needs root (real sandboxes); skipped');
  process.exit(77);
}

const now = () => Number(process.hrtime.bigint()) / 1e6;
function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
function row(name, xs) {
  const s = [...xs].sort((a, b) => a - b);
  const f = (x) => x.toFixed(1).padStart(9);
  return `  ${name.padEnd(58)} ${String(s.length).padStart(4)} ${f(s[0])} ${f(pct(s, 50))} ${f(pct(s, 99))}`;
}
const p50 = (xs) => pct([...xs].sort((a, b) => a - b), 50);

// The tree the sandbox writes, and the host's copy of it for the reference.
const writeTree = (dir) => `mkdir -p ${dir} && for i in $(seq 1 ${mb}); do ` +
  `head -c 1048576 /dev/urandom > ${dir}/f$i; done`;

const rows = [];
const w = await startWarren();
const load0 = loadavg();
try {
  useEnv(w);
  const src = await Sandbox.create('base', { timeoutMs: 3_600_000 });
  await src.commands.run(writeTree('/home/user/data'), { timeoutMs: 300_000 });

  const snap = []; const fromSnap = []; const firstRun = [];
  for (let i = 0; i < n; i++) {
    let t0 = now();
    const info = await src.createSnapshot();
    snap.push(now() - t0);
    t0 = now();
    const copy = await Sandbox.create(info.snapshotId);
    const r = await copy.commands.run('test -f /home/user/data/f1');
    fromSnap.push(now() - t0);
    if (r.exitCode !== 0) throw new Error('the snapshot lacks the tree');
    t0 = now();
    await copy.commands.run('true');
    firstRun.push(now() - t0);
    await copy.kill();
    await Sandbox.deleteSnapshot(info.snapshotId);
  }
  rows.push(row(`snapshot (${mb} MB written) [createSnapshot]`, snap));
  rows.push(row('create from the snapshot → first command answered', fromSnap));

  const host = mkdtempSync(path.join(tmpdir(), 'lifecycle-ref-'));
  const cp = [];
  try {
    execFileSync('sh', ['-c', writeTree(`${host}/data`)]);
    for (let i = 0; i < n; i++) {
      const t0 = now();
      execFileSync('cp', ['-a', `${host}/data`, `${host}/copy${i}`]);
      cp.push(now() - t0);
    }
  } finally {
    rmSync(host, { recursive: true, force: true });
  }
  rows.push(row(`  reference: cp -a of the same tree on the host`, cp));

  const forkWall = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const t0 = now();
    const made = await src.fork({ count: forks, timeoutMs: 600_000 });
    await Promise.all(made.map((s) => {
      if (!(s instanceof Sandbox)) throw new Error(`a fork failed: ${s?.message}`);
      return s.commands.run('test -f /home/user/data/f1');
    }));
    forkWall.push(now() - t0);
    await Promise.all(made.map((s) => s.kill()));
  }
  rows.push(row(`fork ×${forks}, all answering a command (wall)`, forkWall));

  // Parked requests: the sandbox resumes on its first call through the gateway.
  const resumed = { memory: [], files: [] };
  const running = [];
  const sbx = await Sandbox.create('base', {
    timeoutMs: 3_600_000, lifecycle: { onTimeout: 'pause', autoResume: true },
  });
  for (let i = 0; i < n; i++) {
    let t0 = now();
    await sbx.commands.run('true');
    running.push(now() - t0);
    for (const [kind, keepMemory] of [['memory', true], ['files', false]]) {
      await sbx.pause({ keepMemory });
      t0 = now();
      await sbx.commands.run('true');
      resumed[kind].push(now() - t0);
    }
  }
  rows.push(row('first command after pause (memory kept: thaw), parked', resumed.memory));
  rows.push(row('first command after pause (files only: boot), parked', resumed.files));
  rows.push(row('  reference: the same command, sandbox running', running));
  await sbx.kill();
  await src.kill();

  // gVisor: a pause writes the processes and memory to disk (hibernate); the parked command
  // waits for the restore. Where runsc is installed.
  if (existsSync('/usr/bin/runsc')) {
    const res = await w.apiFetch(
      `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
          metadata: { name: 'bench-gvisor' },
          spec: { template: { spec: { runtimeClassName: 'gvisor',
            containers: [{ name: 'main', image: 'base' }] } } },
        }),
      });
    if (res.status !== 201) throw new Error(`gvisor template: ${res.status} ${await res.text()}`);
    const gv = await Sandbox.create('bench-gvisor', {
      timeoutMs: 3_600_000, lifecycle: { onTimeout: 'pause', autoResume: true },
    });
    const hibernated = []; const gvRunning = []; const pauses = [];
    for (let i = 0; i < n; i++) {
      let t0 = now();
      await gv.commands.run('true');
      gvRunning.push(now() - t0);
      t0 = now();
      await gv.pause();
      pauses.push(now() - t0);
      t0 = now();
      await gv.commands.run('true');
      hibernated.push(now() - t0);
    }
    rows.push(row('gvisor: pause (hibernate: memory to disk) [pause()]', pauses));
    rows.push(row('gvisor: first command after pause (restore), parked', hibernated));
    rows.push(row('  reference: the same command, gvisor sandbox running', gvRunning));

    // Forks restored from the source's memory, with `mb` MB held by a process in it; beside
    // one hibernate + restore of the same sandbox (pause, then a parked command). The holder
    // is detached: a background command's open stream, cut by the pause, would reconnect and
    // wake the sandbox (autoResume) before the pause is through.
    await gv.commands.run(`nohup python3 -c "import os, time; x = os.urandom(${mb} << 20); ` +
      `open('/tmp/held', 'w').write('1'); time.sleep(86400)" >/dev/null 2>&1 &`);
    for (let i = 0; (await gv.commands.run('cat /tmp/held 2>/dev/null || true')).stdout !== '1'; i++) {
      if (i > 600) throw new Error('the memory holder did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const gvForks = []; const gvCycle = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      let t0 = now();
      await gv.pause();
      await gv.commands.run('true');
      gvCycle.push(now() - t0);
      t0 = now();
      const made = await gv.fork({ count: forks, timeoutMs: 600_000 });
      for (const s of made) {
        if (!(s instanceof Sandbox)) throw new Error(`a gvisor fork failed: ${s?.message}`);
      }
      await Promise.all(made.map((s) => s.commands.run('test -s /tmp/held')));
      gvForks.push(now() - t0);
      await Promise.all(made.map((s) => s.kill()));
    }
    rows.push(row(`gvisor: fork ×${forks} keeping ${mb} MB of memory, all answering (wall)`, gvForks));
    rows.push(row('  reference: one hibernate + restore of it (pause, parked command)', gvCycle));
    await gv.kill();
  }
} catch (e) {
  const saved = path.join(tmpdir(), `lifecycle-server-${process.pid}.log`);
  writeFileSync(saved, w.log());
  console.error(`lifecycle: ${e?.message ?? e}; the server's log: ${saved}`);
  throw e;
} finally {
  await w.stop();
}
const load1 = loadavg();
console.log(`lifecycle: e2b SDK ${sdkVersion}, N=${n}, ${mb} MB written, ${cpus().length} cores, ` +
  `load ${load0.map((x) => x.toFixed(2)).join(' ')} → ${load1.map((x) => x.toFixed(2)).join(' ')}`);
console.log(`  ${'ms'.padEnd(58)} ${'n'.padStart(4)} ${'min'.padStart(9)} ${'p50'.padStart(9)} ${'p99'.padStart(9)}`);
for (const r of rows) console.log(r);
