// Sandbox egress through the stock E2B SDK against a simulated internet the test builds: a
// network namespace holding 1.1.1.1 and 8.8.8.8 (HTTP on both, DNS on 8.8.8.8 naming
// example.test), reached from the host through a veth; host routes send only those two
// addresses there, so no packet leaves the machine. The server runs with a sandbox range of its
// own and 8.8.8.8 as the sandboxes' resolver.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Sandbox } from 'e2b';
import { startWarren, useEnv } from './harness.mjs';

const NS = `wsim${process.pid}`;
const LINK = `wtsim${process.pid % 100000}`;
const RANGE = '10.251.0.0/24';
let w;
let servers;

const ip = (...args) => execFileSync('ip', args, { stdio: 'pipe' });
const inNs = (...args) => ip('netns', 'exec', NS, ...args);

function buildInternet() {
  ip('netns', 'add', NS);
  ip('link', 'add', LINK, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', NS);
  ip('addr', 'add', '203.0.113.5/30', 'dev', LINK);
  ip('link', 'set', LINK, 'up');
  inNs('ip', 'link', 'set', 'lo', 'up');
  inNs('ip', 'addr', 'add', '203.0.113.6/30', 'dev', 'eth0');
  inNs('ip', 'addr', 'add', '1.1.1.1/32', 'dev', 'lo');
  inNs('ip', 'addr', 'add', '8.8.8.8/32', 'dev', 'lo');
  inNs('ip', 'link', 'set', 'eth0', 'up');
  inNs('ip', 'route', 'add', 'default', 'via', '203.0.113.5');
  ip('route', 'add', '1.1.1.1/32', 'via', '203.0.113.6', 'dev', LINK);
  ip('route', 'add', '8.8.8.8/32', 'via', '203.0.113.6', 'dev', LINK);
}

function tearDownInternet() {
  servers?.kill('SIGKILL');
  try { ip('link', 'del', LINK); } catch { /* gone with the namespace */ }
  try { ip('netns', 'del', NS); } catch { /* never made */ }
}

before(async () => {
  tearDownInternet();
  buildInternet();
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'internet.mjs');
  servers = spawn('ip', ['netns', 'exec', NS, process.execPath, script, '1.1.1.1,8.8.8.8',
    '8.8.8.8', 'example.test=1.1.1.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    servers.stdout.on('data', (d) => { if (String(d).includes('ready')) resolve(); });
    servers.on('exit', (code) => reject(new Error(`internet servers exited ${code}`)));
  });
  w = await startWarren({ network: RANGE, dns: '8.8.8.8' });
  useEnv(w);
});
after(async () => {
  await w?.stop();
  tearDownInternet();
  // The server leaves its range's table for the sandboxes that outlive it; this one is ours.
  try { execFileSync('nft', ['delete', 'table', 'inet', 'warren_10_251_0_0_24']); } catch { /* none */ }
});

// An HTTP GET through bash's /dev/tcp (the base image has no curl): the body, or the error.
const get = (host) => `exec 3<>/dev/tcp/${host}/80 && printf 'GET / HTTP/1.0\\r\\nHost: ${host}\\r\\n\\r\\n' >&3 && tail -n1 <&3`;
async function reach(sbx, host) {
  const r = await sbx.commands.run(`timeout 2 bash -c "${get(host)}" 2>&1 || echo FAILED`, { timeout: 10_000 });
  return r.stdout.trim();
}

test('a default sandbox reaches the internet by address and by name, and nothing of the host', async () => {
  const sbx = await Sandbox.create();
  try {
    assert.equal(await reach(sbx, '1.1.1.1'), 'hello from 1.1.1.1');
    assert.equal(await reach(sbx, 'example.test'), 'hello from 1.1.1.1', 'resolved through 8.8.8.8');
    const resolv = await sbx.files.read('/etc/resolv.conf');
    assert.match(resolv, /nameserver 8\.8\.8\.8/);
    // The host: its address on the simulated internet's link, Warren's API port on it, and the
    // sandbox range's gateway.
    const apiPort = new URL(w.apiUrl).port;
    assert.match(await reach(sbx, '203.0.113.5'), /FAILED/);
    const r = await sbx.commands.run(
      `timeout 2 bash -c 'exec 3<>/dev/tcp/203.0.113.5/${apiPort}' 2>&1 || echo FAILED`);
    assert.match(r.stdout, /FAILED/);
    assert.match(await reach(sbx, '10.251.0.1'), /FAILED/);
  } finally {
    await sbx.kill();
  }
});

test('another sandbox is out of reach', async () => {
  const [a, b] = await Promise.all([Sandbox.create(), Sandbox.create()]);
  try {
    await b.commands.run('python3 -m http.server 8000 >/dev/null 2>&1', { background: true });
    const addr = (await b.commands.run(`python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('1.1.1.1', 80)); print(s.getsockname()[0])"`)).stdout.trim();
    assert.match(addr, /^10\.251\.0\.\d+$/);
    // b reaches its own server on that address (so a's failure below is the rules' doing).
    const own = await b.commands.run(`for i in $(seq 50); do timeout 1 bash -c 'exec 3<>/dev/tcp/${addr}/8000' 2>/dev/null && echo OPEN && break; sleep 0.1; done`);
    assert.match(own.stdout, /OPEN/);
    const r = await a.commands.run(`timeout 2 bash -c 'exec 3<>/dev/tcp/${addr}/8000' 2>&1 && echo OPEN || echo FAILED`);
    assert.match(r.stdout, /FAILED/, `sandbox a reached b at ${addr}`);
  } finally {
    await Promise.all([a.kill(), b.kill()]);
  }
});

test('allowInternetAccess: false, allowOut/denyOut, and updateNetwork at once', async () => {
  const closed = await Sandbox.create({ allowInternetAccess: false });
  try {
    assert.match(await reach(closed, '1.1.1.1'), /FAILED/);
    assert.match(await reach(closed, '8.8.8.8'), /FAILED/);
  } finally {
    await closed.kill();
  }

  const { ALL_TRAFFIC } = await import('e2b');
  const listed = await Sandbox.create({ network: { denyOut: [ALL_TRAFFIC], allowOut: ['1.1.1.1'] } });
  try {
    assert.equal(await reach(listed, '1.1.1.1'), 'hello from 1.1.1.1', 'allowOut wins over denyOut');
    assert.match(await reach(listed, '8.8.8.8'), /FAILED/);
    // Replaced as a whole, in force when the call returns.
    await listed.updateNetwork({ denyOut: ['1.1.1.1'] });
    assert.match(await reach(listed, '1.1.1.1'), /FAILED/);
    assert.equal(await reach(listed, '8.8.8.8'), 'hello from 8.8.8.8');
    await listed.updateNetwork({});
    assert.equal(await reach(listed, '1.1.1.1'), 'hello from 1.1.1.1');
  } finally {
    await listed.kill();
  }
});

test('bad network input is refused naming what is wrong', async () => {
  await assert.rejects(Sandbox.create({ network: { allowOut: ['example.test'] } }),
    /allowOut\[0\].*domain/);
  await assert.rejects(Sandbox.create({ network: { denyOut: ['10.0.0.0/40'] } }),
    /denyOut\[0\]/);
  await assert.rejects(Sandbox.create({ network: { allowPublicTraffic: false } }),
    /allowPublicTraffic/);
});
