// What a sandbox's link out costs, in one run on one host: cold Sandbox.create + the first
// commands.run('true') through the unmodified e2b SDK against a server with
// `--sandbox-network` and one without (interleaved, one cycle each in turn), beside
// bench/cold_create's `runc run` (its own network namespace with loopback, runc's default) and
// the native runtime alone; then HTTP download throughput from a sandbox to the simulated
// internet (tests/e2e/sdk/internet.mjs) beside the same download from the host.
// --leak-cycles C then runs C more cycles (4 at a time) that each open a connection out under a
// policy (a conntrack entry and a policy chain per sandbox) and end, and prints what the range
// left on the host: links, conntrack entries, policy chains (all should be 0).
//   node bench/network/network.mjs [--n 50] [--mb 200] [--leak-cycles 1000] [--quick]
import { spawnSync, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg, cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startWarren, useEnv, loadSdk } = await import(
  path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));
const { startInternet, dropRangeTable } = await import(
  path.resolve(here, '../../tests/e2e/sdk/internet.mjs'));
const { Sandbox } = await loadSdk();

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const arg = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? Number(argv[i + 1]) : dflt; };
const n = quick ? 3 : arg('--n', 50);
const mb = quick ? 10 : arg('--mb', 200);
const leakCycles = quick ? 0 : arg('--leak-cycles', 0);
if (process.getuid() !== 0) {
  console.log('network: needs root (real sandboxes); skipped');
  process.exit(77);
}
const RANGE = '10.252.0.0/24';

const now = () => Number(process.hrtime.bigint()) / 1e6;
const pct = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
function row(name, xs) {
  const s = [...xs].sort((a, b) => a - b);
  const f = (x) => x.toFixed(2).padStart(9);
  return `  ${name.padEnd(44)} ${String(s.length).padStart(5)} ${f(s[0])} ${f(pct(s, 50))} ${f(pct(s, 99))}`;
}

// The same python3 download inside a sandbox and on the host: MB/s of the body.
const download = (bytes, host = '1.1.1.1') => `python3 -c "
import time, urllib.request
t = time.perf_counter(); n = 0
with urllib.request.urlopen('http://${host}/bytes/${bytes}') as r:
    while True:
        b = r.read(1 << 20)
        if not b: break
        n += len(b)
print(n, time.perf_counter() - t)"`;
const mbps = (out) => { const [bytes, secs] = out.trim().split(/\s+/).map(Number); return bytes / secs / 1e6; };

// What the range left: links named after its addresses (wv + hex), conntrack entries from it,
// policy chains in its table.
function leftovers() {
  const prefix = 'wv0afc00';  // 10.252.0.x
  const links = execFileSync('ip', ['-o', 'link'], { encoding: 'utf8' })
    .split('\n').filter((l) => l.includes(` ${prefix}`)).length;
  const conntrack = execFileSync('conntrack', ['-L', '-s', RANGE],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n').filter((l) => l.trim()).length;
  const chains = execFileSync('nft', ['list', 'table', 'inet', 'warren_10_252_0_0_24'], { encoding: 'utf8' })
    .split('\n').filter((l) => /chain sandbox_/.test(l)).length;
  return { links, conntrack, chains };
}
const leak = {};
const load0 = loadavg();
const internet = await startInternet();
const servers = {};
const results = { none: [], net: [] };
let sandboxMbps = [];
let hostMbps = [];
let proxiedMbps = [];
try {
  servers.none = await startWarren();
  servers.net = await startWarren({ network: RANGE, dns: '8.8.8.8' });
  async function cycle(which, timed) {
    useEnv(servers[which]);
    const t0 = now();
    const sbx = await Sandbox.create('base');
    const r = await sbx.commands.run('true');
    const t1 = now();
    if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`);
    await sbx.kill();
    if (timed) results[which].push(t1 - t0);
  }
  for (let i = 0; i < 2; i++) { await cycle('none', false); await cycle('net', false); }
  for (let i = 0; i < n; i++) {
    // Alternate which goes first, so neither always follows the other's teardown.
    const order = i % 2 ? ['none', 'net'] : ['net', 'none'];
    for (const which of order) await cycle(which, true);
  }

  useEnv(servers.net);
  const sbx = await Sandbox.create('base');
  try {
    const bytes = mb * 1e6;
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const inside = await sbx.commands.run(download(bytes), { timeout: 120_000 });
      sandboxMbps.push(mbps(inside.stdout));
      const host = spawnSync('bash', ['-c', download(bytes)], { encoding: 'utf8', timeout: 120_000 });
      hostMbps.push(mbps(host.stdout));
    }
  } finally {
    await sbx.kill();
  }
  // The same download by name under a domain rule: through the node's SNI/Host proxy.
  const named = await Sandbox.create('base',
    { network: { allowOut: ['example.test'], denyOut: ['0.0.0.0/0'] } });
  try {
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const r = await named.commands.run(download(mb * 1e6, 'example.test'), { timeout: 120_000 });
      proxiedMbps.push(mbps(r.stdout));
    }
  } finally {
    await named.kill();
  }
  if (leakCycles > 0) {
    const t0 = now();
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < leakCycles) {
        next++;
        const s = await Sandbox.create('base', { network: { denyOut: ['9.9.9.9'] } });
        const r = await s.commands.run("timeout 2 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' && echo ok");
        if (r.stdout.trim() !== 'ok') throw new Error(`cycle ${next}: no connection out: ${r.stdout}`);
        await s.kill();
      }
    }));
    leak.seconds = (now() - t0) / 1000;
    // Teardown finishes moments after kill returns.
    for (let i = 0; i < 50; i++) {
      Object.assign(leak, leftovers());
      if (!leak.links && !leak.conntrack && !leak.chains) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
} finally {
  await servers.none?.stop();
  await servers.net?.stop();
  internet.stop();
  dropRangeTable(RANGE);
}
const load1 = loadavg();

const coldCreate = path.resolve(here, '../../build/release/bench/cold_create/cold_create');
let reference = '  (bench/cold_create not built: no reference)';
if (existsSync(coldCreate)) {
  const refN = String(quick ? 2 : n);
  const r = spawnSync(coldCreate, ['--n', refN, '--runc-n', refN, '--userns-n', '0', '--idle', '0',
    '--warmup', '1'], { encoding: 'utf8', timeout: 600_000 });
  const wanted = /^\s*(ms\s|warren native: create\+start\+ready|runc run --detach: to ready)/;
  const lines = (r.stdout ?? '').split('\n').filter((l) => wanted.test(l));
  reference = lines.length ? lines.join('\n') : `  (cold_create failed: ${r.stderr?.slice(-400)})`;
}

const median = (xs) => pct([...xs].sort((a, b) => a - b), 50);
console.log(`network: N=${n} interleaved, ${cpus().length} cores, load ${load0.map((x) => x.toFixed(2)).join(' ')} → ${load1.map((x) => x.toFixed(2)).join(' ')}`);
console.log(`  ${'ms'.padEnd(44)} ${'n'.padStart(5)} ${'min'.padStart(9)} ${'p50'.padStart(9)} ${'p99'.padStart(9)}`);
console.log(row("create + first run('true'), --sandbox-network none", results.none));
console.log(row("create + first run('true'), with a link out", results.net));
console.log(`  link out adds (p50): ${(median(results.net) - median(results.none)).toFixed(2)} ms`);
console.log('reference, same run (bench/cold_create: busybox httpd to TCP-ready; runc: own netns, loopback):');
console.log(reference);
console.log(`HTTP download of ${mb} MB from the simulated internet (python3 urllib, median of ${sandboxMbps.length}):`);
console.log(`  from a sandbox (veth, forward, masquerade): ${median(sandboxMbps).toFixed(0)} MB/s`);
console.log(`  from the host (direct route):              ${median(hostMbps).toFixed(0)} MB/s`);
console.log(`  ratio: ${(median(sandboxMbps) / median(hostMbps)).toFixed(2)}×`);
console.log(`  from a sandbox under a domain rule (allowOut example.test, through the node's proxy): ${median(proxiedMbps).toFixed(0)} MB/s (${(median(proxiedMbps) / median(hostMbps)).toFixed(2)}× the host)`);
if (leakCycles > 0) {
  console.log(`leak check: ${leakCycles} cycles (4 at a time, each a connection out under a policy) in ${leak.seconds.toFixed(1)} s; ` +
    `left on the host: ${leak.links} links, ${leak.conntrack} conntrack entries, ${leak.chains} policy chains`);
}
