// Starts a real `warren server` for one suite: a temp data dir, the admin key made the way
// run.sh makes it (`warren apikey bootstrap`), the node agent running real sandboxes from the
// cached `base` image, the gateway on its own port. The SDK is then pointed at it with nothing
// but the three environment variables a user would export.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export function warrenBinary() {
  const bin = process.env.WARREN_BIN ??
      path.resolve(here, '../../../build/release/apps/warren/warren');
  if (!existsSync(bin)) throw new Error(`warren not found at ${bin}; build it first`);
  return bin;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitForFile(file, child, log, ms = 30000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8').trim();
      if (text) return text;
    }
    if (child.exitCode !== null) throw new Error(`warren server exited ${child.exitCode}:\n${log()}`);
    await sleep(50);
  }
  throw new Error(`warren server did not write ${file} in time:\n${log()}`);
}

export async function startWarren() {
  if (process.getuid() !== 0) throw new Error('the SDK e2e suite needs root (real sandboxes)');
  const warren = warrenBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'warren-sdk-e2e-'));
  // Sandboxes with a user namespace reach their layers through this directory.
  chmodSync(dir, 0o711);
  const dataDir = path.join(dir, 'data');
  const boot = spawnSync(warren, ['apikey', 'bootstrap', '--data-dir', dataDir,
    '--config', path.join(dir, 'config')], { encoding: 'utf8' });
  if (boot.status !== 0) throw new Error(`apikey bootstrap failed: ${boot.stderr}`);
  const adminKey = readFileSync(path.join(dataDir, 'admin-key'), 'utf8').trim();

  const portFile = path.join(dir, 'port');
  // With an ephemeral server port the gateway takes an ephemeral one too and writes it here.
  const gatewayPortFile = path.join(dataDir, 'gateway.port');
  const child = spawn(warren, ['server', '--data-dir', dataDir, '--port', '0',
    '--port-file', portFile, '--log-level', process.env.WARREN_LOG_LEVEL ?? 'info'],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const log = () => output;
  const port = await waitForFile(portFile, child, log);
  const gatewayPort = await waitForFile(gatewayPortFile, child, log);
  const apiUrl = `http://127.0.0.1:${port}`;
  const w = {
    dir, dataDir, adminKey, log, child,
    apiUrl,
    sandboxUrl: `http://127.0.0.1:${gatewayPort}`,
    // Raw HTTP to the control plane, as the Python SDK sends it.
    async api(method, target, { key = adminKey, body, headers = {} } = {}) {
      const h = { ...headers };
      if (key) h['x-api-key'] = key;
      let payload;
      if (body !== undefined) {
        h['content-type'] = 'application/json';
        payload = typeof body === 'string' ? body : JSON.stringify(body);
      }
      const res = await fetch(apiUrl + target, { method, headers: h, body: payload });
      const text = await res.text();
      let json;
      try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
      return { status: res.status, headers: res.headers, text, json };
    },
    // Sandbox objects left in the store (any namespace), through the resource API.
    async sandboxObjects() {
      const res = await fetch(`${apiUrl}/apis/agents.kruise.io/v1alpha1/sandboxes`);
      return (await res.json()).items ?? [];
    },
    // Kills every sandbox, waits until the node agent has destroyed them, stops the server.
    async stop() {
      try {
        for (const o of await w.sandboxObjects()) {
          await fetch(`${apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/${o.metadata.namespace}/sandboxes/${o.metadata.name}`,
            { method: 'DELETE' });
        }
        const deadline = Date.now() + 60000;
        while (Date.now() < deadline && (await w.sandboxObjects()).length > 0) await sleep(100);
      } catch { /* the server may be gone already */ }
      if (child.exitCode === null) {
        const done = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 15000);
        await done;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return w;
}

// Points the SDK at `w` the way a user does: the three exports run.sh prints, nothing else.
export function useEnv(w, key = w.adminKey) {
  delete process.env.E2B_DEBUG;
  delete process.env.E2B_DOMAIN;
  process.env.E2B_API_URL = w.apiUrl;
  process.env.E2B_SANDBOX_URL = w.sandboxUrl;
  process.env.E2B_API_KEY = key;
}

export { sleep };

// The SDK as this suite pins it (tests/e2e/node_modules), for scripts outside tests/e2e
// (bench/e2b_create) that cannot resolve 'e2b' from where they live.
export async function loadSdk() {
  const sdk = await import('e2b');
  const pkg = JSON.parse(readFileSync(path.resolve(here, '../node_modules/e2b/package.json'), 'utf8'));
  return { ...sdk, version: pkg.version };
}
