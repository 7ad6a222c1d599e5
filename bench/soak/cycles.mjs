// The cycle workload of issue 19: each of C clients runs Sandbox.create → commands.run('true')
// → kill() through the unmodified e2b SDK until N cycles are done, and every failure is kept
// with its step and its whole cause chain (undici's `fetch failed` hides the socket error in
// `cause`). Reusable: `runCycles` drives any server the SDK's environment points at.
//   node bench/soak/cycles.mjs [--n 2000] [--concurrency 10] [--template base]
// Without E2B_API_URL in the environment it starts its own `warren server` (tests/e2e/sdk's
// harness); with it, it drives that server (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY).
// Exits 1 when any cycle failed.

import diagnostics from 'node:diagnostics_channel';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = await import(path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));
const { Sandbox } = await harness.loadSdk();

export function now() { return Number(process.hrtime.bigint()) / 1e6; }

// The SDK's SandboxError keeps only "fetch failed"; the socket error under it is published by
// undici on a diagnostics channel. The last few are kept with the sandbox their request named,
// so a failure can say what the connection saw ("UND_ERR_SOCKET: other side closed").
const socketErrors = [];
diagnostics.subscribe('undici:request:error', ({ request, error }) => {
  const headers = Array.isArray(request.headers) ? request.headers.join(' ') : String(request.headers ?? '');
  socketErrors.push({ at: Date.now(), path: request.path, headers,
    error: `${error?.name ?? 'Error'} ${error?.code ?? ''}: ${error?.message ?? error}` });
  if (socketErrors.length > 200) socketErrors.shift();
});
export function socketErrorsFor(sandboxId) {
  if (!sandboxId) return [];
  return socketErrors.filter((e) => e.headers.includes(sandboxId)).map((e) => `${e.path}: ${e.error}`);
}

// "TypeError: fetch failed <- SocketError UND_ERR_SOCKET: other side closed" and so on.
export function describeError(e) {
  const parts = [];
  for (let c = e, depth = 0; c && depth < 6; c = c.cause, depth++) {
    if (typeof c !== 'object') { parts.push(String(c)); break; }
    const code = c.code !== undefined ? ` ${c.code}` : '';
    parts.push(`${c.name ?? c.constructor?.name ?? 'Error'}${code}: ${c.message ?? ''}`.trim());
  }
  return parts.join(' <- ');
}

// Runs `n` cycles on `concurrency` clients. Returns { ok, failures: [{cycle, step, sandboxId,
// error, at}], wallMs, steps: {create: [ms], run: [ms], kill: [ms]} }.
export async function runCycles({ n, concurrency, template = 'base', onFailure = () => {} }) {
  const failures = [];
  const steps = { create: [], run: [], kill: [] };
  let next = 0;
  let ok = 0;
  async function cycle(index) {
    let step = 'create';
    let sbx;
    try {
      let t = now();
      sbx = await Sandbox.create(template);
      steps.create.push(now() - t);
      step = 'run';
      t = now();
      const r = await sbx.commands.run('true');
      steps.run.push(now() - t);
      if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`);
      step = 'kill';
      t = now();
      if (!(await sbx.kill())) throw new Error('kill returned false');
      steps.kill.push(now() - t);
      ok++;
    } catch (e) {
      const f = { cycle: index, step, sandboxId: sbx?.sandboxId, error: describeError(e),
        socket: socketErrorsFor(sbx?.sandboxId).join('; '), at: new Date().toISOString() };
      failures.push(f);
      onFailure(f);
      if (sbx && step !== 'kill') await sbx.kill().catch(() => {});
    }
  }
  const start = now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await cycle(next++);
  }));
  return { ok, failures, wallMs: now() - start, steps };
}

export function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN;
}

async function main() {
  const argv = process.argv.slice(2);
  const arg = (name, dflt) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : dflt;
  };
  const n = Number(arg('--n', 2000));
  const concurrency = Number(arg('--concurrency', 10));
  const template = arg('--template', 'base');
  if (!(n >= 1) || !(concurrency >= 1)) {
    console.error('cycles: --n and --concurrency must be positive whole numbers');
    process.exit(2);
  }
  let w = null;
  if (!process.env.E2B_API_URL) {
    if (process.getuid() !== 0) {
      console.log('cycles: needs root to start its own server (real sandboxes); skipped');
      process.exit(77);
    }
    w = await harness.startWarren();
    harness.useEnv(w);
  }
  let result;
  try {
    result = await runCycles({
      n, concurrency, template,
      onFailure: (f) => console.log(`FAIL cycle=${f.cycle} step=${f.step} sandbox=${f.sandboxId} ` +
        `at=${f.at} error=${f.error}` + (f.socket ? ` socket=${f.socket}` : '')),
    });
  } finally {
    if (w) await w.stop();
  }
  console.log(`cycles: ${result.ok}/${n} ok, ${result.failures.length} failed, concurrency ` +
    `${concurrency}, ${(n / (result.wallMs / 1000)).toFixed(1)} cycles/s`);
  for (const [step, xs] of Object.entries(result.steps)) {
    console.log(`  ${step.padEnd(7)} p50 ${pct(xs, 50).toFixed(2)} ms  p99 ${pct(xs, 99).toFixed(2)} ms`);
  }
  process.exit(result.failures.length ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
