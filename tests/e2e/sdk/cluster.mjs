// Starts a Warren cluster on one machine for one suite (issue 17): a 3-member etcd cluster
// (Debian's etcd-server), `warren node` processes (own data dirs, so own sandbox cgroup
// parents and runtime state) and `warren server --node off` replicas, all sharing the etcd
// store and one key directory (its seal.key is the cluster's: the sealed secrets and the node
// relay's credential). Every process is this suite's child, stopped by PID.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, existsSync, rmSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { warrenBinary } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ETCD = '/usr/bin/etcd';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function etcdAnswers(endpoint) {
  try {
    const res = await fetch(`http://${endpoint}/v3/kv/range`, {
      method: 'POST', body: '{"key":"AA=="}', signal: AbortSignal.timeout(500),
    });
    return res.status === 200;
  } catch {
    return false;
  }
}

async function waitForFile(file, proc, ms = 60000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8').trim();
      if (text) return text;
    }
    if (proc.child.exitCode !== null) {
      throw new Error(`${proc.name} exited ${proc.child.exitCode}:\n${proc.output.slice(-4000)}`);
    }
    await sleep(50);
  }
  throw new Error(`${proc.name} did not write ${file} in time:\n${proc.output.slice(-4000)}`);
}

// One child process with its output kept (the last 1 MiB) for failure messages.
function launch(name, bin, args, env = {}) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env } });
  const proc = { name, child, output: '' };
  const keep = (d) => { proc.output = (proc.output + d).slice(-(1 << 20)); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  return proc;
}

async function terminate(proc, signal = 'SIGTERM') {
  const { child } = proc;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  const t = setTimeout(() => child.kill('SIGKILL'), 20000);
  await done;
  clearTimeout(t);
}

export async function startCluster({ nodes = 3, servers = 2, members = 3 } = {}) {
  if (process.getuid() !== 0) throw new Error('the cluster suite needs root (real sandboxes)');
  if (!existsSync(ETCD)) throw new Error(`${ETCD} is missing (apt install etcd-server)`);
  const warren = warrenBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'warren-cluster-'));
  chmodSync(dir, 0o711);
  const c = { dir, etcd: [], nodes: [], servers: [] };

  // etcd: a real 3-member Raft cluster on loopback.
  const peers = [];
  for (let i = 0; i < members; i++) {
    c.etcd.push({ client: await freePort(), peer: await freePort() });
    peers.push(`m${i}=http://127.0.0.1:${c.etcd[i].peer}`);
  }
  c.etcd.forEach((m, i) => {
    const client = `http://127.0.0.1:${m.client}`;
    const peer = `http://127.0.0.1:${m.peer}`;
    m.endpoint = `127.0.0.1:${m.client}`;
    m.args = ['--name', `m${i}`, '--data-dir', path.join(dir, `etcd-m${i}`),
      '--listen-client-urls', client, '--advertise-client-urls', client,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', peers.join(','), '--initial-cluster-state', 'new',
      '--initial-cluster-token', path.basename(dir), '--logger', 'zap', '--log-outputs', 'stderr'];
    m.proc = launch(`etcd m${i}`, ETCD, m.args);
  });
  const deadline = Date.now() + 30000;
  for (const m of c.etcd) {
    while (!(await etcdAnswers(m.endpoint))) {
      if (Date.now() > deadline) throw new Error(`etcd ${m.endpoint} did not start:\n${m.proc.output}`);
      await sleep(50);
    }
  }
  c.storeUrl = `etcd://${c.etcd.map((m) => m.endpoint).join(',')}`;

  // The admin key, made the way run.sh makes it, in the first server's data dir; its auth dir
  // is every member's key dir.
  const firstData = path.join(dir, 'server-0');
  const boot = spawnSync(warren, ['apikey', 'bootstrap', '--data-dir', firstData,
    '--config', path.join(dir, 'config')], { encoding: 'utf8' });
  if (boot.status !== 0) throw new Error(`apikey bootstrap failed: ${boot.stderr}`);
  c.adminKey = readFileSync(path.join(firstData, 'admin-key'), 'utf8').trim();
  c.keyDir = path.join(firstData, 'auth');

  c.startServer = async (i) => {
    const dataDir = path.join(dir, `server-${i}`);
    mkdirSync(dataDir, { recursive: true });
    const portFile = path.join(dir, `server-${i}.port`);
    rmSync(portFile, { force: true });
    rmSync(path.join(dataDir, 'gateway.port'), { force: true });
    const proc = launch(`server ${i}`, warren, ['server', '--store', c.storeUrl, '--node', 'off',
      '--key-dir', c.keyDir, '--data-dir', dataDir, '--port', '0', '--port-file', portFile,
      '--metrics-address', 'off', '--sandbox-network', 'none',
      '--log-level', process.env.WARREN_LOG_LEVEL ?? 'info']);
    const port = await waitForFile(portFile, proc);
    const gatewayPort = await waitForFile(path.join(dataDir, 'gateway.port'), proc);
    c.servers[i] = { proc, dataDir, apiUrl: `http://127.0.0.1:${port}`,
      sandboxUrl: `http://127.0.0.1:${gatewayPort}` };
    return c.servers[i];
  };
  // The first server makes the cluster's seal.key; the nodes need it.
  await c.startServer(0);
  for (let i = 1; i < servers; i++) await c.startServer(i);

  c.startNode = async (i) => {
    const dataDir = path.join(dir, `node-${i}`);
    const portFile = path.join(dir, `node-${i}.port`);
    rmSync(portFile, { force: true });
    const proc = launch(`node ${i}`, warren, ['node', '--store', c.storeUrl, '--key-dir', c.keyDir,
      '--name', `node-${i}`, '--data-dir', dataDir, '--port', '0', '--port-file', portFile,
      '--sandbox-network', 'none', '--log-level', process.env.WARREN_LOG_LEVEL ?? 'info'],
    // A node stopped at the end takes its sandboxes with it (none may outlive the suite).
    { WARREN_NODE_DESTROY_ON_STOP: '1' });
    await waitForFile(portFile, proc);
    c.nodes[i] = { proc, dataDir, name: `node-${i}` };
    return c.nodes[i];
  };
  for (let i = 0; i < nodes; i++) await c.startNode(i);

  const base = (s = 0) => `${c.servers[s].apiUrl}/apis/agents.kruise.io/v1alpha1`;
  c.apiFetch = (url, init = {}) => fetch(url, {
    ...init, headers: { ...(init.headers ?? {}), authorization: `Bearer ${c.adminKey}` },
  });
  c.items = async (plural, s = 0, group = 'agents.kruise.io/v1alpha1') => {
    const res = await c.apiFetch(`${c.servers[s].apiUrl}/apis/${group}/${plural}`);
    return res.ok ? ((await res.json()).items ?? []) : [];
  };
  c.nodeObjects = async (s = 0) => {
    const res = await c.apiFetch(`${c.servers[s].apiUrl}/apis/warren.dev/v1alpha1/nodes`);
    return res.ok ? ((await res.json()).items ?? []) : [];
  };
  c.waitNodesReady = async (n, ms = 60000) => {
    const until = Date.now() + ms;
    for (;;) {
      const ready = (await c.nodeObjects()).filter((o) => o.status?.address &&
        o.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
      if (ready.length >= n) return ready;
      if (Date.now() > until) throw new Error(`only ${ready.length} of ${n} nodes ready`);
      await sleep(100);
    }
  };
  c.killNode = async (i) => terminate(c.nodes[i].proc, 'SIGKILL');
  c.killServer = async (i) => terminate(c.servers[i].proc, 'SIGKILL');
  c.killEtcd = async (i) => terminate(c.etcd[i].proc, 'SIGKILL');
  c.restartEtcd = async (i) => {
    const m = c.etcd[i];
    m.proc = launch(`etcd m${i}`, ETCD, m.args);
    const until = Date.now() + 30000;
    while (!(await etcdAnswers(m.endpoint))) {
      if (Date.now() > until) throw new Error(`etcd m${i} did not come back:\n${m.proc.output}`);
      await sleep(50);
    }
  };
  // Everything's output, for a failed assertion.
  c.logs = () => [...c.servers, ...c.nodes].filter(Boolean)
    .map((p) => `--- ${p.proc.name}\n${p.proc.output.slice(-3000)}`).join('\n');

  // Pools and claims first (nothing makes new sandboxes), then every sandbox, until the nodes
  // destroyed them all; then the processes, by PID, and the directory.
  c.stop = async () => {
    let left = [];
    try {
      const deleteAll = async (plural) => {
        for (const o of await c.items(plural)) {
          await c.apiFetch(`${base()}/namespaces/${o.metadata.namespace}/${plural}/${o.metadata.name}`,
            { method: 'DELETE' });
        }
      };
      await deleteAll('sandboxsets');
      await deleteAll('sandboxclaims');
      const until = Date.now() + 90000;
      for (;;) {
        await deleteAll('sandboxes');
        left = await c.items('sandboxes');
        if (left.length === 0 || Date.now() > until) break;
        await sleep(250);
      }
    } catch (e) {
      left = [`(could not clean up: ${e.message})`];
    }
    for (const n of c.nodes) if (n) await terminate(n.proc);
    for (const s of c.servers) if (s) await terminate(s.proc);
    for (const m of c.etcd) if (m.proc) await terminate(m.proc, 'SIGKILL');
    if (left.length > 0) {
      throw new Error(`sandboxes left in ${dir}: ` +
        left.map((o) => `${o.metadata?.name ?? o} on ${o.status?.nodeName}`).join(', '));
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return c;
}
