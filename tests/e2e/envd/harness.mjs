// Starts a real warren-envd for one suite, the way a sandbox would see it: in a private mount
// namespace where /etc/passwd, /etc/group and /home come from a temp dir that has the E2B
// template's `user` (uid 1000, home /home/user). The host's users are never touched.
//
// The SDK runs in E2B debug mode (no control plane) against E2B_SANDBOX_URL, so suites can run
// in parallel on their own ports.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, chownSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export function envdBinary() {
  const bin = process.env.WARREN_ENVD_BIN ??
      path.resolve(here, '../../../build/release/apps/warren-envd/warren-envd');
  if (!existsSync(bin)) throw new Error(`warren-envd not found at ${bin}; build it first`);
  return bin;
}

// Starts envd. `args` are extra flags; `command` (array) is the template's own command. With
// `pidNamespace`, envd is pid 1 of a new pid namespace (with its own /proc), as in a sandbox.
export async function startEnvd({ args = [], command = [], env = {}, pidNamespace = false } = {}) {
  if (process.getuid() !== 0) throw new Error('the envd e2e suite needs root (mount namespaces)');
  const root = mkdtempSync(path.join(tmpdir(), 'warren-envd-e2e-'));
  writeFileSync(path.join(root, 'passwd'),
      'root:x:0:0:root:/root:/bin/bash\n' +
      'user:x:1000:1000::/home/user:/bin/bash\n' +
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n');
  writeFileSync(path.join(root, 'group'),
      'root:x:0:\nuser:x:1000:\nsudo:x:27:user\nnogroup:x:65534:\n');
  mkdirSync(path.join(root, 'home/user'), { recursive: true });
  chownSync(path.join(root, 'home/user'), 1000, 1000);

  const script = [
    'set -e',
    `mount --bind ${root}/passwd /etc/passwd`,
    `mount --bind ${root}/group /etc/group`,
    `mount --bind ${root}/home /home`,
    'exec "$@"',
  ].join('\n');
  const pidArgs = pidNamespace ? ['--pid', '--fork', '--mount-proc', '--kill-child=SIGTERM'] : [];
  const child = spawn('unshare', [...pidArgs, '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh',
    envdBinary(), '--listen', '127.0.0.1:0', '--log-level', 'warn', ...args,
    ...(command.length ? ['--', ...command] : [])],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`envd did not start: ${stderr}`)), 10000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on [\d.]+:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`envd exited ${code}: ${stderr}`)); });
  });
  const url = `http://127.0.0.1:${port}`;
  // Without a pid namespace unshare execs into envd; with one, envd is unshare's only child
  // (unshare itself ignores SIGTERM while it waits, so signals go to envd directly).
  const envdPid = () => {
    if (!pidNamespace) return child.pid;
    const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
    return Number(kids.split(/\s+/)[0]);
  };
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    url, port, root, child,
    stderr: () => stderr,
    alive: () => !exited(),
    // Sends `signal` to envd and resolves when it (and so its namespace) is gone.
    async signal(sig) {
      const done = new Promise((r) => (exited() ? r() : child.once('exit', r)));
      process.kill(envdPid(), sig);
      await done;
    },
    async stop() {
      if (!exited()) {
        const t = setTimeout(() => { try { process.kill(envdPid(), 'SIGKILL'); } catch {} }, 8000);
        await this.signal('SIGTERM').catch(() => {});
        clearTimeout(t);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

// An SDK Sandbox bound to `envd` in debug mode (what E2B_DEBUG=true gives: no control plane,
// envdVersion 99.99.99, no access token).
export async function debugSandbox(envd) {
  process.env.E2B_DEBUG = 'true';
  const { Sandbox } = await import('e2b');
  return Sandbox.create({ sandboxUrl: envd.url, debug: true });
}

// An SDK Sandbox as Sandbox.connect() builds it after the control plane answered: with the
// envd access token and the envdVersion the agent reports (so exactly the features we claim are
// switched on). The Sandbox constructor is what connect() itself calls.
export async function securedSandbox(envd, token) {
  const { Sandbox } = await import('e2b');
  const health = await fetch(`${envd.url}/health`);
  const envdVersion = health.headers.get('x-envd-version');
  return new Sandbox({ sandboxId: 'secured_sandbox', envdAccessToken: token, envdVersion,
    sandboxUrl: envd.url, debug: true });
}

export async function init(envd, body, headers = {}) {
  return fetch(`${envd.url}/init`, { method: 'POST',
    headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}
