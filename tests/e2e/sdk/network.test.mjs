// Sandbox egress through the stock E2B SDK against a simulated internet the test builds
// (internet.mjs: 1.1.1.1 and 8.8.8.8 with HTTP, DNS on 8.8.8.8; no packet leaves the machine).
// The server runs with a sandbox range of its own and 8.8.8.8 as the sandboxes' resolver.
import { test, before, after } from 'node:test';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';
import { startWarren, useEnv } from './harness.mjs';
import { startInternet, dropRangeTable } from './internet.mjs';

// Small, so the suite's sandboxes reuse addresses (13 of them) as a busy node's would.
const RANGE = '10.251.0.0/28';
let w;
let internet;

before(async () => {
  internet = await startInternet();
  w = await startWarren({ network: RANGE, dns: '8.8.8.8' });
  useEnv(w);
});
after(async () => {
  await w?.stop();
  internet?.stop();
  dropRangeTable(RANGE);
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

// curl in the sandbox: the body, or FAILED.
async function curl(sbx, args) {
  const r = await sbx.commands.run(`curl -sS --max-time 5 ${args} 2>/dev/null || echo FAILED`,
    { timeout: 15_000 });
  return r.stdout.trim();
}

test('allowOut domains are matched on the TLS server name and the HTTP Host, as E2B does', async () => {
  const sbx = await Sandbox.create({
    network: { allowOut: ['example.test', '*.pypi.test', '8.8.8.8'], denyOut: ['0.0.0.0/0'] },
  });
  try {
    // Named ones pass over HTTP and HTTPS; their names resolve (the resolver stays open).
    assert.equal(await curl(sbx, 'http://example.test/'), 'hello from 1.1.1.1');
    assert.equal(await curl(sbx, '-k https://example.test/'), 'hello from 1.1.1.1 over tls');
    // A wildcard is its subdomains, not the domain itself.
    assert.equal(await curl(sbx, '-k https://files.pypi.test/'), 'hello from 8.8.8.8 over tls');
    assert.equal(await curl(sbx, '-k --resolve pypi.test:443:1.1.1.1 https://pypi.test/'), 'FAILED');
    // The same address under a name not allowed, or by its bare address: closed.
    assert.equal(await curl(sbx, 'http://other.test/'), 'FAILED');
    assert.equal(await curl(sbx, '-k https://other.test/'), 'FAILED');
    assert.equal(await curl(sbx, 'http://1.1.1.1/'), 'FAILED');
    // An allowed address needs no name; the name decides for the rest (as E2B's SNI match).
    assert.equal(await curl(sbx, 'http://8.8.8.8/'), 'hello from 8.8.8.8');
    assert.equal(await curl(sbx, '-k --resolve example.test:443:1.1.1.1 https://example.test/'),
      'hello from 1.1.1.1 over tls');
    // Replaced: the domain closes for the next connection.
    await sbx.updateNetwork({ allowOut: ['*.pypi.test'], denyOut: ['0.0.0.0/0'] });
    assert.equal(await curl(sbx, 'http://example.test/'), 'FAILED');
    assert.equal(await curl(sbx, '-k https://files.pypi.test/'), 'hello from 8.8.8.8 over tls');
    // Without a deny, a domain list closes nothing.
    await sbx.updateNetwork({ allowOut: ['example.test'] });
    assert.equal(await curl(sbx, 'http://other.test/'), 'hello from 1.1.1.1');
  } finally {
    await sbx.kill();
  }
});

// Polls `probe` until it returns `want` (within 10 s); the last value otherwise.
async function until(probe, want) {
  let got;
  for (let i = 0; i < 50; i++) {
    got = await probe();
    if (got === want) return got;
    await new Promise((r) => setTimeout(r, 200));
  }
  return got;
}

test('a TrafficPolicy selecting a sandbox is enforced like its network fields, and goes with it', async () => {
  const sbx = await Sandbox.create();
  const tps = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/trafficpolicies`;
  const post = (spec, name = 'only-example') => w.apiFetch(tps, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'TrafficPolicy',
      metadata: { name }, spec }),
  });
  try {
    assert.equal(await reach(sbx, '8.8.8.8'), 'hello from 8.8.8.8');
    const made = await post({
      selector: { matchLabels: { 'agents.kruise.io/sandbox-id': sbx.sandboxId } },
      egress: { rules: [{ action: 'reject', to: [{ cidr: '0.0.0.0/0' }] },
        { action: 'allow', to: [{ fqdn: 'example.test' }] }] },
    });
    assert.equal(made.status, 201, await made.text());
    // Port 80 now goes through the domain proxy, which closes it with nothing sent on.
    const open = async () => ((await reach(sbx, '8.8.8.8')).startsWith('hello') ? 'open' : 'closed');
    assert.equal(await until(open, 'closed'), 'closed');
    assert.equal(await curl(sbx, 'http://8.8.8.8/'), 'FAILED');
    assert.equal(await curl(sbx, 'http://example.test/'), 'hello from 1.1.1.1');
    const status = (await (await w.apiFetch(`${tps}/only-example`)).json()).status;
    assert.equal(status.sandboxes, 1);
    assert.equal(status.conditions[0].type, 'Accepted');
    assert.equal(status.conditions[0].status, 'True');

    // What Warren cannot enforce as written is refused at the door, naming the field.
    const ports = await post({ egress: { rules: [{ action: 'allow', to: [{ cidr: '1.1.1.1' }],
      ports: [{ protocol: 'TCP', port: 443 }] }] } }, 'with-ports');
    assert.equal(ports.status, 422);
    assert.match(await ports.text(), /spec\.egress\.rules\[0\]\.ports: Unsupported value/);

    const gone = await w.apiFetch(`${tps}/only-example`, { method: 'DELETE' });
    assert.equal(gone.status, 200);
    assert.equal(await until(() => reach(sbx, '8.8.8.8'), 'hello from 8.8.8.8'),
      'hello from 8.8.8.8');
  } finally {
    await w.apiFetch(`${tps}/only-example`, { method: 'DELETE' });
    await sbx.kill();
  }
});

test('creates with network rules, a private network or a Host mask from a pool claim warm members with them in force', async () => {
  const sets = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets`;
  const made = await w.apiFetch(sets, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet',
      metadata: { name: 'netpool' }, spec: { replicas: 1, templateRef: { name: 'base' } } }),
  });
  assert.equal(made.status, 201, await made.text());
  let sbx;
  let priv;
  try {
    await w.waitPool('netpool');
    sbx = await Sandbox.create('netpool', { network: { denyOut: ['8.8.8.8'] } });
    const object = await w.sandboxObject(sbx.sandboxId);
    assert.notEqual(object.metadata.name, sbx.sandboxId, 'a claimed member keeps its own name');
    // The first command already meets the rule: no retry, no wait.
    assert.match(await reach(sbx, '8.8.8.8'), /FAILED/);
    assert.equal(await reach(sbx, '1.1.1.1'), 'hello from 1.1.1.1');

    // A private one with a Host mask from the same pool (refilled meanwhile): a warm member too.
    await w.waitPool('netpool');
    priv = await Sandbox.create('netpool',
      { network: { allowPublicTraffic: false, maskRequestHost: 'localhost:${PORT}' } });
    const privObject = await w.sandboxObject(priv.sandboxId);
    assert.notEqual(privObject.metadata.name, priv.sandboxId, 'a claimed member');
    assert.match(priv.trafficAccessToken ?? '', /^[0-9a-f]{32,}$/);
    await priv.commands.run(`python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = self.headers.get('Host', '').encode()
        self.send_response(200); self.send_header('content-length', str(len(b))); self.end_headers()
        self.wfile.write(b)
http.server.HTTPServer(('0.0.0.0', 8001), H).serve_forever()" >/dev/null 2>&1`, { background: true });
    await priv.commands.run("for i in $(seq 50); do timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8001' 2>/dev/null && break; sleep 0.1; done");
    const get = (headers = {}) => fetch(`${w.sandboxUrl}/`, {
      headers: { 'E2b-Sandbox-Id': priv.sandboxId, 'E2b-Sandbox-Port': '8001', ...headers } });
    assert.equal((await get()).status, 401);
    const masked = await get({ 'e2b-traffic-access-token': priv.trafficAccessToken });
    assert.equal(masked.status, 200);
    assert.equal(await masked.text(), 'localhost:8001');
  } finally {
    await priv?.kill();
    await sbx?.kill();
    await w.apiFetch(`${sets}/netpool`, { method: 'DELETE' });
  }
});

test('bad network input is refused naming what is wrong', async () => {
  await assert.rejects(Sandbox.create({ network: { denyOut: ['example.test'] } }),
    /denyOut\[0\].*domain name; denyOut takes/);
  await assert.rejects(Sandbox.create({ network: { allowOut: ['not a name'] } }),
    /allowOut\[0\].*nor a domain name/);
  await assert.rejects(Sandbox.create({ network: { denyOut: ['10.0.0.0/40'] } }),
    /denyOut\[0\]/);
  await assert.rejects(Sandbox.create({ network: { maskRequestHost: 'local host' } }),
    /maskRequestHost/);
});

test('the base image has what agents reach for: password-less sudo, curl, git, pip', async () => {
  const sbx = await Sandbox.create();
  try {
    const sudo = await sbx.commands.run('sudo -n id -u');
    assert.equal(sudo.stdout.trim(), '0', 'user becomes root inside the sandbox');
    const curl = await sbx.commands.run('curl -sS --max-time 5 http://example.test/');
    assert.equal(curl.stdout, 'hello from 1.1.1.1');
    const tools = await sbx.commands.run('git --version && pip --version');
    assert.match(tools.stdout, /^git version [\d.]+\npip [\d.]+/);
  } finally {
    await sbx.kill();
  }
});

test('allowPublicTraffic: false closes every port but envd\'s to requests without the traffic token', async () => {
  const sbx = await Sandbox.create({ network: { allowPublicTraffic: false } });
  const open = await Sandbox.create();
  try {
    assert.match(sbx.trafficAccessToken ?? '', /^[0-9a-f]{32,}$/, 'create returns the token');
    assert.equal(open.trafficAccessToken ?? null, null);
    for (const s of [sbx, open]) {
      await s.commands.run('python3 -m http.server 8000 >/dev/null 2>&1', { background: true });
      await s.commands.run("for i in $(seq 50); do timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8000' 2>/dev/null && break; sleep 0.1; done");
    }
    const get = (s, headers = {}) => fetch(`${w.sandboxUrl}/`, {
      headers: { 'E2b-Sandbox-Id': s.sandboxId, 'E2b-Sandbox-Port': '8000', ...headers } });
    assert.equal((await get(sbx)).status, 401);
    assert.equal((await get(sbx, { 'e2b-traffic-access-token': 'wrong' })).status, 401);
    assert.equal((await get(sbx, { 'e2b-traffic-access-token': sbx.trafficAccessToken })).status, 200);
    assert.equal((await get(open)).status, 200, 'a public sandbox needs no token');
    // envd keeps its own token: the SDK still works.
    assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n');
  } finally {
    await Promise.all([sbx.kill(), open.kill()]);
  }
});

// What a sandbox range leaves on the host: links (wv<hex address>…), conntrack entries from its
// addresses, per-sandbox policy chains.
function leftovers() {
  const links = execFileSync('ip', ['-o', 'link'], { encoding: 'utf8' })
    .split('\n').filter((l) => / wv0afb00[0-9a-f]{2}[0-9a-f]{2}[@:]/.test(l));
  const ct = execFileSync('conntrack', ['-L', '-s', RANGE], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .split('\n').filter((l) => l.trim());
  const chains = execFileSync('nft', ['list', 'table', 'inet', 'warren_10_251_0_0_28'], { encoding: 'utf8' })
    .split('\n').filter((l) => /chain sandbox_/.test(l));
  return { links, ct, chains };
}
async function settled(ms = 10_000) {
  const deadline = Date.now() + ms;
  let seen;
  while (Date.now() < deadline) {
    seen = leftovers();
    if (!seen.links.length && !seen.ct.length && !seen.chains.length) return seen;
    await new Promise((r) => setTimeout(r, 200));
  }
  return seen;
}

test('cycles, a kill -9 of the server and adoption leave no link, conntrack entry or chain', async () => {
  // Sandboxes that opened connections out (conntrack entries) under a policy (a chain) and were
  // killed, many times over (with the suite's others, more than the range's 13 addresses).
  for (let i = 0; i < 3; i++) {
    await Promise.all(Array.from({ length: 4 }, async () => {
      const s = await Sandbox.create({ network: { denyOut: ['9.9.9.9'] } });
      assert.equal(await reach(s, '1.1.1.1'), 'hello from 1.1.1.1');
      await s.kill();
    }));
  }
  assert.deepEqual(await settled(), { links: [], ct: [], chains: [] });

  // A policy survives a kill -9 of the server (the new one adopts the sandbox and puts its
  // chain back), and the sandbox's end afterwards still cleans up.
  const kept = await Sandbox.create({ network: { denyOut: ['1.1.1.1'] } });
  assert.match(await reach(kept, '1.1.1.1'), /FAILED/);
  await w.crash();
  useEnv(w);
  const again = await Sandbox.connect(kept.sandboxId);
  assert.match(await reach(again, '1.1.1.1'), /FAILED/, 'the adopted sandbox keeps its policy');
  assert.equal(await reach(again, '8.8.8.8'), 'hello from 8.8.8.8');
  await again.kill();
  assert.deepEqual(await settled(), { links: [], ct: [], chains: [] });
});

test('maskRequestHost is the Host a sandbox\'s server sees', async () => {
  const sbx = await Sandbox.create({ network: { maskRequestHost: 'localhost:${PORT}' } });
  try {
    await sbx.commands.run(`python3 -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = self.headers.get('Host', '').encode()
        self.send_response(200); self.send_header('content-length', str(len(b))); self.end_headers()
        self.wfile.write(b)
http.server.HTTPServer(('0.0.0.0', 8001), H).serve_forever()" >/dev/null 2>&1`, { background: true });
    await sbx.commands.run("for i in $(seq 50); do timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8001' 2>/dev/null && break; sleep 0.1; done");
    const res = await fetch(`${w.sandboxUrl}/`, {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8001' } });
    assert.equal(await res.text(), 'localhost:8001');
  } finally {
    await sbx.kill();
  }
});

test('a server killed before it recorded a sandbox\'s address finds it in the sandbox', async () => {
  const sbx = await Sandbox.create({ network: { denyOut: ['1.1.1.1'] } });
  let current = sbx;  // the handle made after the restart knows the new ports
  try {
    assert.match(await reach(sbx, '1.1.1.1'), /FAILED/);
    await w.crash({
      // As if the server had died between making the link and writing the state record.
      whileDown: () => {
        const dirs = execFileSync('sh', ['-c', `ls -d /run/warren/*/${sbx.sandboxId} /run/warren/sandboxes/${sbx.sandboxId} 2>/dev/null || true`],
          { encoding: 'utf8' }).split('\n').filter(Boolean);
        assert.equal(dirs.length, 1, `state dir of ${sbx.sandboxId}: ${dirs}`);
        const file = `${dirs[0]}/state.json`;
        const record = JSON.parse(readFileSync(file, 'utf8'));
        assert.ok(record.egress, 'the record names the link');
        delete record.egress;
        writeFileSync(file, JSON.stringify(record));
      },
    });
    useEnv(w);
    const again = await Sandbox.connect(sbx.sandboxId);
    current = again;
    assert.match(await reach(again, '1.1.1.1'), /FAILED/, 'its policy came back with its address');
    assert.equal(await reach(again, '8.8.8.8'), 'hello from 8.8.8.8');
  } finally {
    await current.kill();
  }
  assert.deepEqual(await settled(), { links: [], ct: [], chains: [] });
});
