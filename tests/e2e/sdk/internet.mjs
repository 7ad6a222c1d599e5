// A simulated internet for the network suite and bench/network: a network namespace holding
// 1.1.1.1 and 8.8.8.8 (HTTP on port 80 and HTTPS on 443 of both, with a certificate made here;
// DNS on 8.8.8.8 naming example.test and other.test → 1.1.1.1, pypi.test and files.pypi.test
// → 8.8.8.8), linked to the host by a veth over 203.0.113.4/30. Host routes send only those two
// addresses there, so no packet leaves the machine. Names are per process, so two users on one
// host do not collide (the addresses do: one simulated internet per host at a time).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ip = (...args) => execFileSync('ip', args, { stdio: 'pipe' });

export async function startInternet() {
  const ns = `wsim${process.pid}`;
  const link = `wtsim${process.pid % 100000}`;
  const inNs = (...args) => ip('netns', 'exec', ns, ...args);
  let servers;
  let certDir;
  const stop = () => {
    servers?.kill('SIGKILL');
    if (certDir) rmSync(certDir, { recursive: true, force: true });
    try { ip('route', 'del', '1.1.1.1/32'); } catch { /* gone with the link */ }
    try { ip('route', 'del', '8.8.8.8/32'); } catch { /* gone with the link */ }
    try { ip('link', 'del', link); } catch { /* gone with the namespace */ }
    try { ip('netns', 'del', ns); } catch { /* never made */ }
  };
  stop();
  try {
    ip('netns', 'add', ns);
    ip('link', 'add', link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
    ip('addr', 'add', '203.0.113.5/30', 'dev', link);
    ip('link', 'set', link, 'up');
    inNs('ip', 'link', 'set', 'lo', 'up');
    inNs('ip', 'addr', 'add', '203.0.113.6/30', 'dev', 'eth0');
    inNs('ip', 'addr', 'add', '1.1.1.1/32', 'dev', 'lo');
    inNs('ip', 'addr', 'add', '8.8.8.8/32', 'dev', 'lo');
    inNs('ip', 'link', 'set', 'eth0', 'up');
    inNs('ip', 'route', 'add', 'default', 'via', '203.0.113.5');
    ip('route', 'add', '1.1.1.1/32', 'via', '203.0.113.6', 'dev', link);
    ip('route', 'add', '8.8.8.8/32', 'via', '203.0.113.6', 'dev', link);
    certDir = mkdtempSync(path.join(tmpdir(), 'warren-simnet-'));
    const key = path.join(certDir, 'key.pem');
    const cert = path.join(certDir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
      '-nodes', '-days', '2', '-subj', '/CN=simulated internet', '-keyout', key, '-out', cert,
      '-addext', 'subjectAltName=DNS:example.test,DNS:other.test,DNS:pypi.test,DNS:*.pypi.test'],
    { stdio: 'pipe' });
    servers = spawn('ip', ['netns', 'exec', ns, process.execPath,
      path.join(here, 'fixtures', 'internet.mjs'), '1.1.1.1,8.8.8.8', '8.8.8.8',
      'example.test=1.1.1.1,other.test=1.1.1.1,pypi.test=8.8.8.8,files.pypi.test=8.8.8.8',
      key, cert], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve, reject) => {
      servers.stdout.on('data', (d) => { if (String(d).includes('ready')) resolve(); });
      servers.on('exit', (code) => reject(new Error(`internet servers exited ${code}`)));
    });
  } catch (e) {
    stop();
    throw e;
  }
  return { stop, hostAddress: '203.0.113.5' };
}

// Deletes the nftables table a server leaves for its range (sandboxes outlive a server; a
// test's or bench's do not).
export function dropRangeTable(range) {
  const [addr, len] = range.split('/');
  try {
    execFileSync('nft', ['delete', 'table', 'inet', `warren_${addr.replaceAll('.', '_')}_${len}`],
      { stdio: 'pipe' });
  } catch { /* none */ }
}
