// The soak's mixed cycle through the unmodified e2b SDK, as an agent uses a sandbox: create
// (cold from `base`, or pooled: a claim from a SandboxSet, by naming the set as the template) →
// a command with output (stdout checked) → a file written and read back (content checked) →
// pause → connect (the file read again through the new handle: state survived) → a command
// past its timeoutMs (the SDK's TimeoutError is expected, counted apart, not a failure) → kill.
// Every step runs under a watchdog: one that outlives the request timeout by `hangGraceMs` is
// counted as a hang. Also exports `Witnesses`, the long-lived sandboxes whose acknowledged
// writes a fault must not lose.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const harness = await import(path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));
const sdk = await harness.loadSdk();
const { Sandbox } = sdk;
export const sdkVersion = sdk.version;
const { describeError, now, pct, socketErrorsFor } = await import(path.resolve(here, 'cycles.mjs'));
export { describeError, now, pct };

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The admin key also as a Bearer token on every control-plane call, and a request deadline.
export function apiOpts(requestTimeoutMs, extra = {}) {
  return { requestTimeoutMs, apiHeaders: { authorization: `Bearer ${process.env.E2B_API_KEY}` },
    ...extra };
}

export class Hang extends Error {
  constructor(step, ms) { super(`no answer in ${ms} ms`); this.name = 'Hang'; this.step = step; }
}

// Per-step latencies, outcomes and failures of a run. Single-threaded (the event loop).
export class Tally {
  constructor() {
    this.steps = {};        // step → { ms: [], ok, expected }
    this.failures = [];     // { at (ms, now()), cycle, step, sandboxId, error }
    this.hangs = 0;
    this.cycles = 0;
    this.cyclesOk = 0;
    this.calls = 0;
  }
  step(name) { return (this.steps[name] ??= { ms: [], ok: 0, expected: 0 }); }
  fail(f) { this.failures.push({ at: now(), ...f }); }
}

// Runs `fn` as step `name`, timed; a step still unanswered `hangMs` after it began fails as a
// Hang (the SDK call is left to finish on its own; its outcome is then ignored).
// An error `expected(e)` accepts is counted (and timed) as expected and returned, not thrown.
export async function timed(tally, name, hangMs, fn, expected = () => false) {
  const t = now();
  tally.calls++;
  let timer;
  const work = fn();
  work.catch(() => {});
  const watchdog = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Hang(name, hangMs)), hangMs);
  });
  const s = tally.step(name);
  try {
    const r = await Promise.race([work, watchdog]);
    s.ms.push(now() - t);
    s.ok++;
    return r;
  } catch (e) {
    if (e instanceof Hang || !expected(e)) throw e;
    s.ms.push(now() - t);
    s.expected++;
    return e;
  } finally {
    clearTimeout(timer);
  }
}

function isTimeout(e) { return e?.name === 'TimeoutError' || e instanceof sdk.TimeoutError; }

// One cycle of the mix. `live` holds the ids of sandboxes whose create was acknowledged and
// whose kill was not (a fault run checks they are still listed).
export async function cycle({ index, tally, template, requestTimeoutMs, hangMs, live }) {
  let stepName = template === 'base' ? 'create-cold' : 'create-pooled';
  let sbx;
  tally.cycles++;
  try {
    // Cold (a new sandbox started) and pooled (a warm member claimed) are timed apart.
    sbx = await timed(tally, stepName, hangMs, () =>
      Sandbox.create(template, apiOpts(requestTimeoutMs, { timeoutMs: 600_000 })));
    live.add(sbx.sandboxId);
    stepName = 'run';
    const out = await timed(tally, 'run', hangMs, () =>
      sbx.commands.run(`echo soak-${index}`, { requestTimeoutMs }));
    if (out.exitCode !== 0 || out.stdout !== `soak-${index}\n`) {
      throw new Error(`echo printed ${JSON.stringify(out.stdout)} exit ${out.exitCode}`);
    }
    const file = `/home/user/soak-${index}.txt`;
    const content = `cycle ${index} ${'x'.repeat(index % 512)}\n`;
    stepName = 'write';
    await timed(tally, 'write', hangMs, () => sbx.files.write(file, content, { requestTimeoutMs }));
    stepName = 'read';
    const back = await timed(tally, 'read', hangMs, () => sbx.files.read(file, { requestTimeoutMs }));
    if (back !== content) throw new Error(`read back ${back.length} bytes, wrote ${content.length}`);
    stepName = 'pause';
    const paused = await timed(tally, 'pause', hangMs, () => sbx.pause(apiOpts(requestTimeoutMs)));
    if (paused !== true) throw new Error(`pause returned ${paused}`);
    stepName = 'connect';
    const again = await timed(tally, 'connect', hangMs, () =>
      Sandbox.connect(sbx.sandboxId, apiOpts(requestTimeoutMs, { timeoutMs: 600_000 })));
    const kept = await timed(tally, 'read', hangMs, () => again.files.read(file, { requestTimeoutMs }));
    if (kept !== content) throw new Error(`after pause and connect the file has ${kept.length} bytes, not ${content.length}`);
    stepName = 'timeout';
    const late = await timed(tally, 'timeout', hangMs, () =>
      again.commands.run('sleep 30', { timeoutMs: 500, requestTimeoutMs }), isTimeout);
    if (!isTimeout(late)) throw new Error('sleep 30 with timeoutMs 500 finished without a TimeoutError');
    stepName = 'kill';
    const killed = await timed(tally, 'kill', hangMs, () => sbx.kill(apiOpts(requestTimeoutMs)));
    if (killed !== true) throw new Error(`kill returned ${killed}`);
    live.delete(sbx.sandboxId);
    tally.cyclesOk++;
  } catch (e) {
    if (e instanceof Hang) tally.hangs++;
    const socket = socketErrorsFor(sbx?.sandboxId).pop();
    tally.fail({ cycle: index, step: stepName, sandboxId: sbx?.sandboxId,
      error: describeError(e) + (socket ? ` (socket: ${socket})` : '') });
    if (sbx && stepName !== 'kill') {
      const k = await sbx.kill(apiOpts(requestTimeoutMs)).catch(() => null);
      if (k !== null) live.delete(sbx.sandboxId);
    }
    // As a client that retries would: not at once (a fault's fast failures would spin).
    await sleep(250);
  }
}

// C clients running cycles until `n` are started, `until()` says stop, or `deadline` passes.
// Cycle i is pooled when a pool is given and i is odd.
export async function runClients({ concurrency, n = Infinity, deadline = Infinity, stop = () => false,
  tally, pool, requestTimeoutMs, hangMs, live, onFailure = () => {} }) {
  let next = 0;
  const seen = { count: 0 };
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n && Date.now() < deadline && !stop()) {
      const index = next++;
      const template = pool && index % 2 === 1 ? pool : 'base';
      await cycle({ index, tally, template, requestTimeoutMs, hangMs, live });
      while (seen.count < tally.failures.length) onFailure(tally.failures[seen.count++]);
    }
  }));
}

// The ids of every sandbox the control plane lists (all pages).
export async function listedIds(requestTimeoutMs) {
  const ids = new Set();
  const pages = Sandbox.list(apiOpts(requestTimeoutMs));
  while (pages.hasNext) for (const s of await pages.nextItems()) ids.add(s.sandboxId);
  return ids;
}

// Long-lived sandboxes written to before, during and after a fault; every write the SDK
// acknowledged must read back afterwards, from a sandbox that is still listed.
export class Witnesses {
  constructor({ count, requestTimeoutMs, tally }) {
    Object.assign(this, { count, requestTimeoutMs, tally });
    this.boxes = [];      // { id, sbx, acked: Map<file, content> }
    this.writes = 0;
  }
  async create() {
    for (let i = 0; i < this.count; i++) {
      const sbx = await Sandbox.create('base', apiOpts(this.requestTimeoutMs, { timeoutMs: 3_600_000 }));
      this.boxes.push({ id: sbx.sandboxId, sbx, acked: new Map() });
    }
    await this.writeOnce();
  }
  // One write to each witness; an acknowledged one is remembered, a failed one is counted as
  // a client-visible error of step `witness-write`.
  async writeOnce() {
    await Promise.all(this.boxes.map(async (b) => {
      const file = `/home/user/witness-${this.writes}.txt`;
      const content = `witness ${b.id} write ${this.writes}\n`;
      try {
        await timed(this.tally, 'witness-write', this.requestTimeoutMs + 5000, () =>
          b.sbx.files.write(file, content, { requestTimeoutMs: this.requestTimeoutMs }));
        b.acked.set(file, content);
      } catch (e) {
        if (e instanceof Hang) this.tally.hangs++;
        this.tally.fail({ cycle: -1, step: 'witness-write', sandboxId: b.id, error: describeError(e) });
      }
    }));
    this.writes++;
  }
  // Writes every `everyMs` until stop() is true.
  async writeLoop(stop, everyMs = 500) {
    while (!stop()) {
      await this.writeOnce();
      await sleep(everyMs);
    }
  }
  // What was lost: sandboxes no longer listed, acknowledged files missing or changed.
  async verify() {
    const lost = [];
    const listed = await listedIds(this.requestTimeoutMs);
    for (const b of this.boxes) {
      if (!listed.has(b.id)) { lost.push(`sandbox ${b.id} (${b.acked.size} acknowledged files) not listed`); continue; }
      let sbx;
      try {
        sbx = await Sandbox.connect(b.id, apiOpts(this.requestTimeoutMs, { timeoutMs: 3_600_000 }));
      } catch (e) {
        lost.push(`sandbox ${b.id}: connect failed: ${describeError(e)}`);
        continue;
      }
      for (const [file, content] of b.acked) {
        let got;
        try { got = await sbx.files.read(file, { requestTimeoutMs: this.requestTimeoutMs }); } catch (e) { got = e; }
        if (got !== content) {
          lost.push(`${b.id}:${file}: ${got instanceof Error ? describeError(got) : `${String(got).length} bytes differ`}`);
        }
      }
    }
    return lost;
  }
  acknowledged() { return this.boxes.reduce((a, b) => a + b.acked.size, 0); }
  async kill() {
    for (const b of this.boxes) await b.sbx.kill(apiOpts(this.requestTimeoutMs)).catch(() => {});
  }
}

export { Sandbox, sdk };
