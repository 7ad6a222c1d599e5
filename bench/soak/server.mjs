// A `warren server` of the soak's own, which a fault can kill -9, stop and restart in place:
// fixed ports (the gateway on port + 1) so that the SDK's environment and every Sandbox handle
// stay valid across a restart, a temp data dir (optionally on a small tmpfs the soak fills), the
// admin key made as run.sh makes it. The SDK is pointed at it by E2B_API_URL, E2B_SANDBOX_URL
// and E2B_API_KEY; the resource API gets the key on both X-API-Key and Authorization Bearer.
// Owns the child process, the temp dir and the tmpfs; `stop()` deletes every pool, claim and
// sandbox through the API first, so nothing of it is left on the host.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const GROUP = '/apis/agents.kruise.io/v1alpha1';

const { warrenBinary } = await import(path.resolve(here, '../../tests/e2e/sdk/harness.mjs'));

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

// A port P the kernel hands out with P + 1 free too (the gateway's).
async function freePortPair() {
  for (let i = 0; i < 50; i++) {
    const p = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    });
    if (p < 65535 && await portFree(p + 1)) return p;
  }
  throw new Error('no free pair of ports on 127.0.0.1');
}

export class Server {
  // tmpfsBytes: the data dir on a tmpfs of that size, mounted here (the disk-full fault).
  constructor({ tmpfsBytes = 0, env = {}, logLevel = 'info' } = {}) {
    this.tmpfsBytes = tmpfsBytes;
    this.env = env;
    this.logLevel = logLevel;
    this.output = '';
    this.child = null;
  }

  async init() {
    this.dir = mkdtempSync(path.join(tmpdir(), 'warren-soak-'));
    // Sandboxes with a user namespace reach their layers through this directory.
    chmodSync(this.dir, 0o711);
    this.dataDir = path.join(this.dir, 'data');
    if (this.tmpfsBytes) {
      mkdirSync(this.dataDir);
      const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${this.tmpfsBytes},mode=0711`,
        'warren-soak', this.dataDir], { encoding: 'utf8' });
      if (m.status !== 0) throw new Error(`mounting a tmpfs at ${this.dataDir}: ${m.stderr}`);
      this.mounted = true;
    }
    const boot = spawnSync(warrenBinary(), ['apikey', 'bootstrap', '--data-dir', this.dataDir,
      '--config', path.join(this.dir, 'config')], { encoding: 'utf8' });
    if (boot.status !== 0) throw new Error(`apikey bootstrap failed: ${boot.stderr}`);
    this.adminKey = readFileSync(path.join(this.dataDir, 'admin-key'), 'utf8').trim();
    this.port = await freePortPair();
    this.apiUrl = `http://127.0.0.1:${this.port}`;
    this.sandboxUrl = `http://127.0.0.1:${this.port + 1}`;
    process.env.E2B_API_URL = this.apiUrl;
    process.env.E2B_SANDBOX_URL = this.sandboxUrl;
    process.env.E2B_API_KEY = this.adminKey;
    delete process.env.E2B_DEBUG;
    delete process.env.E2B_DOMAIN;
    await this.launch();
  }

  get pid() { return this.child?.pid; }
  get running() { return this.child && this.child.exitCode === null && this.child.signalCode === null; }
  log() { return this.output; }

  // Starts the server on the data dir and ports it had (a restart after kill -9 adopts the
  // sandboxes that kept running) and waits until it answers /readyz.
  async launch() {
    const portFile = path.join(this.dir, 'port');
    rmSync(portFile, { force: true });
    const child = spawn(warrenBinary(), ['server', '--data-dir', this.dataDir, '--port',
      String(this.port), '--port-file', portFile, '--log-level', this.logLevel,
      '--sandbox-network', 'none'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } });
    child.stdout.on('data', (d) => this.keep(d));
    child.stderr.on('data', (d) => this.keep(d));
    this.child = child;
    const deadline = Date.now() + 60000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`warren server exited ${child.exitCode}:\n${this.output.slice(-4000)}`);
      if (existsSync(portFile)) {
        const r = await this.fetch('/readyz', { timeoutMs: 2000 }).catch(() => null);
        if (r && r.status === 200) return;
      }
      if (Date.now() > deadline) throw new Error(`warren server not ready in 60 s:\n${this.output.slice(-4000)}`);
      await sleep(50);
    }
  }

  // The last 2 MB of the server's log (a long soak must not grow the driver without bound).
  keep(d) {
    this.output += d;
    if (this.output.length > 4e6) this.output = this.output.slice(-2e6);
  }

  // The resource API as an operator calls it: the admin key on both headers, a deadline.
  async fetch(target, { method = 'GET', body, timeoutMs = 30000 } = {}) {
    const headers = { 'x-api-key': this.adminKey, authorization: `Bearer ${this.adminKey}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.apiUrl + target, { method, headers,
      body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let json;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.status, text, json };
  }

  async kill9() {
    if (!this.running) return;
    const done = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await done;
  }

  async terminate() {
    if (!this.running) return;
    const child = this.child;
    const done = new Promise((r) => child.once('exit', r));
    child.kill('SIGCONT');  // a fault may have left it stopped
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 20000);
    await done;
    clearTimeout(t);
  }

  // The server's own footprint from /proc: open fds, threads, resident memory.
  procStats() {
    if (!this.running) return null;
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const field = (k) => Number((status.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm')) ?? [])[1]);
      return { fds: readdirSync(`/proc/${this.pid}/fd`).length, threads: field('Threads'),
        rssMb: Math.round(field('VmRSS') / 1024) };
    } catch {
      return null;
    }
  }

  // Applies SandboxSet `name` of the built-in `base` template (so pooled and cold sandboxes
  // are the same sandbox) and waits until `replicas` members are Available.
  async applyPool(name, replicas) {
    const sets = `${GROUP}/namespaces/default/sandboxsets`;
    const res = await this.fetch(sets, { method: 'POST', body: {
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name },
      spec: { replicas, templateRef: { name: 'base' } } } });
    if (res.status !== 201) throw new Error(`applying SandboxSet ${name}: ${res.status} ${res.text}`);
    const deadline = Date.now() + 300000;
    for (;;) {
      const set = (await this.fetch(`${sets}/${name}`)).json;
      if ((set?.status?.availableReplicas ?? 0) >= replicas) return;
      if (Date.now() > deadline) {
        throw new Error(`SandboxSet ${name} not filled in 300 s: ${JSON.stringify(set?.status)}`);
      }
      await sleep(200);
    }
  }

  // Deletes every pool and claim, then every sandbox, waits until the node agent has destroyed
  // them, stops the server and removes its data dir (and tmpfs). Returns the names of sandboxes
  // still there after two minutes (then the data dir is kept for a look).
  async stop() {
    let left = [];
    if (this.child) {
      if (!this.running) await this.launch().catch(() => {});
      this.child.kill('SIGCONT');
      const items = async (plural) => {
        const r = await this.fetch(`${GROUP}/${plural}`).catch(() => null);
        return r?.status === 200 ? (r.json.items ?? []) : [];
      };
      const deleteAll = async (plural) => {
        for (const o of await items(plural)) {
          await this.fetch(`${GROUP}/namespaces/${o.metadata.namespace}/${plural}/${o.metadata.name}`,
            { method: 'DELETE' }).catch(() => {});
        }
      };
      await deleteAll('sandboxsets');
      await deleteAll('sandboxclaims');
      const deadline = Date.now() + 120000;
      for (;;) {
        await deleteAll('sandboxes');
        left = (await items('sandboxes')).map((o) => o.metadata.name);
        if (left.length === 0 || Date.now() > deadline) break;
        await sleep(250);
      }
      await this.terminate();
    }
    if (left.length === 0) this.removeDir();
    return left;
  }

  removeDir() {
    if (this.mounted) {
      const u = spawnSync('umount', [this.dataDir], { encoding: 'utf8' });
      if (u.status === 0) this.mounted = false;
      else console.error(`soak: umount ${this.dataDir}: ${u.stderr.trim()}`);
    }
    if (!this.mounted && this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
