// Starts a real `warren server` for one suite: a temp data dir, the admin key made the way
// run.sh makes it (`warren apikey bootstrap`), the node agent running real sandboxes from the
// cached `base` image, the gateway on its own port. The SDK is then pointed at it with nothing
// but the environment variables a user would export (the ones the bootstrap prints).

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

// The template the suites create from: `base` (a SandboxTemplate: every create starts a
// sandbox), or with WARREN_SDK_TEMPLATE=pool a SandboxSet of `base` (templateRef) that startWarren
// applies and fills first, so every create claims a warm member (ctest e2e_sdk_pool).
export const POOLED = process.env.WARREN_SDK_TEMPLATE === 'pool';
export const TEMPLATE = POOLED ? 'base-pool' : 'base';
const POOL_REPLICAS = 4;

// `env`: extra environment for the server (e.g. its own WARREN_IMAGE_ROOT).
// `network`: the sandboxes' range (warren server --sandbox-network) and `dns` their resolvers;
// none by default, so suites running side by side do not share one range's table.
// `address`: what the server (and its gateway) listen on; `args`: more `warren server` flags.
export async function startWarren({ env = {}, network = 'none', dns = '8.8.8.8',
  address = '127.0.0.1', args = [] } = {}) {
  if (process.getuid() !== 0) throw new Error('the SDK e2e suite needs root (real sandboxes)');
  const networkArgs = ['--sandbox-network', network, '--sandbox-dns', dns];
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
  let output = '';
  const log = () => output;
  async function launch() {
    rmSync(portFile, { force: true });
    rmSync(gatewayPortFile, { force: true });
    const child = spawn(warren, ['server', '--data-dir', dataDir, '--address', address,
      '--port', '0', '--port-file', portFile,
      '--log-level', process.env.WARREN_LOG_LEVEL ?? 'info', ...networkArgs, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const port = await waitForFile(portFile, child, log);
    const gatewayPort = await waitForFile(gatewayPortFile, child, log);
    return { child, apiUrl: `http://${address}:${port}`,
      sandboxUrl: `http://${address}:${gatewayPort}` };
  }
  async function terminate(child) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const done = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 15000);
    await done;
    clearTimeout(t);
  }
  // The resource API and /metrics as an operator reaches them: with the admin key.
  const apiFetch = (url, init = {}) => fetch(url, {
    ...init, headers: { ...(init.headers ?? {}), authorization: `Bearer ${adminKey}` },
  });
  const w = {
    dir, dataDir, adminKey, log, apiFetch,
    ...(await launch()),
    // Stops the server (SIGTERM: its sandboxes keep running) and starts it again on the same
    // data dir; the new process adopts them. Ports are new: call useEnv again.
    async restart() {
      await terminate(w.child);
      Object.assign(w, await launch());
    },
    // kill -9 of the server and a new one on the same data dir (ports are new: useEnv again);
    // `whileDown` runs between the two.
    async crash({ whileDown } = {}) {
      const done = new Promise((r) => w.child.once('exit', r));
      w.child.kill('SIGKILL');
      await done;
      if (whileDown) await whileDown();
      Object.assign(w, await launch());
    },
    // Raw HTTP to the control plane, as the Python SDK sends it.
    async api(method, target, { key = adminKey, body, headers = {} } = {}) {
      const h = { ...headers };
      if (key) h['x-api-key'] = key;
      let payload;
      if (body !== undefined) {
        h['content-type'] = 'application/json';
        payload = typeof body === 'string' ? body : JSON.stringify(body);
      }
      const res = await fetch(w.apiUrl + target, { method, headers: h, body: payload });
      const text = await res.text();
      let json;
      try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
      return { status: res.status, headers: res.headers, text, json };
    },
    // Sandbox objects left in the store (any namespace), through the resource API.
    async sandboxObjects() {
      const res = await apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/sandboxes`);
      return (await res.json()).items ?? [];
    },
    // The Sandbox object of an E2B sandbox id (a claimed pool member keeps its own name).
    async sandboxObject(sandboxId) {
      return (await w.sandboxObjects()).find((o) =>
        o.metadata.labels?.['agents.kruise.io/sandbox-id'] === sandboxId);
    },
    // Waits until SandboxSet `name` (namespace default) has `replicas` members in stock: its
    // status says so and so do the members themselves. The status alone follows on the
    // controller's next pass, so right after a claim it may still count the member just taken.
    async waitPool(name, replicas = 1, ms = 180000) {
      const url = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets/${name}`;
      const deadline = Date.now() + ms;
      for (;;) {
        const set = await (await apiFetch(url)).json();
        if ((set.status?.availableReplicas ?? 0) >= replicas &&
            (await w.sandboxObjects()).filter((o) => isStockOf(name, o)).length >= replicas) {
          return;
        }
        if (Date.now() > deadline) {
          throw new Error(`SandboxSet ${name} not filled in ${ms / 1000} s: ` +
            `${JSON.stringify(set.status)}\n${w.log().slice(-4000)}`);
        }
        await sleep(100);
      }
    },
    // Deletes every pool and claim (so nothing makes new sandboxes), then every sandbox, waits
    // until the node agent has destroyed them all, and stops the server. A sandbox still there
    // after a minute fails the suite rather than being left running.
    async stop() {
      const base = () => `${w.apiUrl}/apis/agents.kruise.io/v1alpha1`;
      const items = async (plural) => {
        const res = await apiFetch(`${base()}/${plural}`);
        return res.ok ? ((await res.json()).items ?? []) : [];
      };
      const deleteAll = async (plural) => {
        for (const o of await items(plural)) {
          await apiFetch(`${base()}/namespaces/${o.metadata.namespace}/${plural}/${o.metadata.name}`,
            { method: 'DELETE' });
        }
      };
      let left = [];
      try {
        await deleteAll('sandboxsets');
        await deleteAll('sandboxclaims');
        // Snapshots hold images in the node's image store until their node removes them.
        await deleteAll('checkpoints');
        const deadline = Date.now() + 60000;
        for (;;) {
          await deleteAll('sandboxes');
          left = [...await items('sandboxes'), ...await items('checkpoints')];
          if (left.length === 0 || Date.now() > deadline) break;
          await sleep(200);
        }
      } catch (e) {
        left = [`(could not clean up: ${e.message})`];
      }
      await terminate(w.child);
      if (left.length > 0) {
        throw new Error(`sandboxes or checkpoints left in ${dataDir}: ` +
          left.map((o) => o.metadata?.name ?? o).join(', '));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (POOLED) {
    try {
      await applyPool(w);
    } catch (e) {
      // stop() deletes the set and its members before the server goes (a SIGTERM alone would
      // leave them running).
      await w.stop().catch(() => {});
      throw e;
    }
  }
  return w;
}

// Applies the SandboxSet TEMPLATE names and waits until all its members are Available.
async function applyPool(w) {
  const sets = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets`;
  const res = await w.apiFetch(sets, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet', metadata: { name: TEMPLATE },
      // The members are made from the built-in `base` template itself (its image, its
      // /home/user working directory), so pooled and cold sandboxes are the same sandbox.
      spec: { replicas: POOL_REPLICAS, templateRef: { name: 'base' } },
    }),
  });
  if (res.status !== 201) throw new Error(`applying SandboxSet ${TEMPLATE}: ${await res.text()}`);
  await w.waitPool(TEMPLATE, POOL_REPLICAS);
}

// Points the SDK at `w` the way a user does: the exports run.sh prints, nothing else.
export function useEnv(w, key = w.adminKey) {
  delete process.env.E2B_DEBUG;
  delete process.env.E2B_DOMAIN;
  process.env.E2B_API_URL = w.apiUrl;
  process.env.E2B_SANDBOX_URL = w.sandboxUrl;
  process.env.E2B_API_KEY = key;
  process.env.E2B_VOLUME_API_URL = w.apiUrl;
}

// A member of pool `name` (namespace default) a claim can take, running or hibernated
// (ClassifyMember's rule in src/controller/sandboxset_member.cc).
function isStockOf(name, o) {
  const m = o.metadata ?? {};
  if (m.namespace !== 'default' || m.deletionTimestamp) return false;
  if (m.labels?.['agents.kruise.io/sandbox-pool'] !== name) return false;
  if (m.labels?.['agents.kruise.io/sandbox-claimed'] === 'true') return false;
  if (!(m.ownerReferences ?? []).some((r) => r.kind === 'SandboxSet' && r.controller)) return false;
  const annotations = m.annotations ?? {};
  if ('agents.kruise.io/lock' in annotations || 'warren.dev/recycling' in annotations) return false;
  const phase = o.status?.phase;
  const ready = (o.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  return o.spec?.paused === true ? phase === 'Paused' && !ready : phase === 'Running' && ready;
}

export { sleep };

// Polls `fn` until it returns something truthy (returned), failing the test after `ms`.
export async function waitFor(what, fn, ms = 30000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what} not within ${ms / 1000} s`);
    await sleep(200);
  }
}

// The checkpoint of a fork that a crash of the server cut short, once the restarted node agent
// has looked at it. It should be Failed, saying why: its request died with the server, so it is
// not captured again (which would stop the source's processes once more, cutting its commands).
export async function forkCheckpointAfterCrash(w) {
  return waitFor('the fork checkpoint is looked at after the restart', async () => {
    const res = await w.apiFetch(`${w.apiUrl}/apis/agents.kruise.io/v1alpha1/checkpoints`);
    const cp = ((await res.json()).items ?? []).find((c) => c.metadata.name.startsWith('fork-'));
    return cp && cp.status?.phase !== 'Creating' ? cp : null;
  });
}

// The SDK as this suite pins it (tests/e2e/node_modules), for scripts outside tests/e2e
// (bench/e2b_create) that cannot resolve 'e2b' from where they live.
export async function loadSdk() {
  const sdk = await import('e2b');
  const pkg = JSON.parse(readFileSync(path.resolve(here, '../node_modules/e2b/package.json'), 'utf8'));
  return { ...sdk, version: pkg.version };
}
