// The fault matrix of issue 19: each fault is injected into a running server and undone, and
// says when it ended (the clock recovery is measured from). A fault that changes the host (a
// stopped process, an immutable file, a filled tmpfs) registers its undo with `restore` first,
// so an interrupted run undoes it too. `victim` faults act on one sandbox of their own and
// report what its client saw; the workload and the witnesses go on beside them.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import path from 'node:path';
import { Sandbox, apiOpts, describeError, now, sleep } from './workload.mjs';

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

// The pid (in this pid namespace) of a sandbox's pid 1, warren-envd: the process of its cgroup
// whose NSpid ends in 1. Searched in every v1 hierarchy and the unified one.
export function envdPid(sandboxId) {
  const roots = readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((l) => l.split(' ')).filter((f) => {
      const dash = f.indexOf('-');
      return dash > 0 && (f[dash + 1] === 'cgroup' || f[dash + 1] === 'cgroup2');
    }).map((f) => f[4]);
  const seen = new Set();
  const walk = (dir, depth) => {
    if (depth > 4) return null;
    let entries;
    try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return null; }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const sub = path.join(dir, e.name);
      if (depth === 0 && !e.name.startsWith('warren')) continue;
      if (e.name.includes(sandboxId)) {
        let procs = [];
        try { procs = readFileSync(path.join(sub, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean); } catch {}
        for (const p of procs) {
          if (seen.has(p)) continue;
          seen.add(p);
          try {
            const ns = readFileSync(`/proc/${p}/status`, 'utf8').match(/^NSpid:\s+(.*)$/m)?.[1].trim().split(/\s+/);
            if (ns && ns.length > 1 && ns[ns.length - 1] === '1') return Number(p);
          } catch {}
        }
      }
      const found = walk(sub, depth + 1);
      if (found) return found;
    }
    return null;
  };
  for (const root of roots) {
    const pid = walk(root, 0);
    if (pid) return pid;
  }
  return null;
}

async function victimSandbox(requestTimeoutMs) {
  const sbx = await Sandbox.create('base', apiOpts(requestTimeoutMs, { timeoutMs: 600_000 }));
  await sbx.files.write('/home/user/victim.txt', 'victim\n', { requestTimeoutMs });
  return sbx;
}

// What a client of the victim sees when it runs a command now.
async function probeVictim(sbx, requestTimeoutMs) {
  const t = now();
  try {
    const r = await sbx.commands.run('echo alive', { requestTimeoutMs, timeoutMs: requestTimeoutMs });
    return `echo → exit ${r.exitCode} ${JSON.stringify(r.stdout)} in ${(now() - t).toFixed(0)} ms`;
  } catch (e) {
    return `echo → ${describeError(e)} in ${(now() - t).toFixed(0)} ms`;
  }
}

async function victimState(id, requestTimeoutMs) {
  try {
    return (await Sandbox.getInfo(id, apiOpts(requestTimeoutMs))).state;
  } catch (e) {
    return describeError(e);
  }
}

// Each: { name, what, tmpfsBytes?, env?, inject({ server, restore, requestTimeoutMs, notes }) →
// the time (now()) the fault ended }.
export const FAULTS = [
  {
    name: 'kill-9',
    what: 'SIGKILL of the server, then a restart on the same data dir and ports',
    async inject({ server }) {
      await server.kill9();
      const end = now();
      await server.launch();
      return end;
    },
  },
  {
    name: 'sigstop',
    what: 'SIGSTOP of the server for 5 s, then SIGCONT',
    async inject({ server, restore }) {
      const pid = server.pid;
      restore.add('sigcont', () => { try { process.kill(pid, 'SIGCONT'); } catch {} });
      process.kill(pid, 'SIGSTOP');
      await sleep(5000);
      process.kill(pid, 'SIGCONT');
      restore.delete('sigcont');
      return now();
    },
  },
  {
    name: 'envd-kill',
    what: "SIGKILL of one sandbox's envd (its pid 1, found through its cgroup)",
    async inject({ requestTimeoutMs, notes }) {
      const sbx = await victimSandbox(requestTimeoutMs);
      const pid = envdPid(sbx.sandboxId);
      if (!pid) throw new Error(`no envd process found for ${sbx.sandboxId}`);
      process.kill(pid, 'SIGKILL');
      const killedAt = now();
      await sleep(500);
      notes.push(`victim ${sbx.sandboxId} (envd pid ${pid}) 0.5 s after: ${await probeVictim(sbx, requestTimeoutMs)}, ` +
        `state ${await victimState(sbx.sandboxId, requestTimeoutMs)}`);
      // Does the victim come back by itself (restartPolicy Always restarts an exited sandbox)?
      let last = '';
      for (;;) {
        const seen = await probeVictim(sbx, requestTimeoutMs);
        const state = await victimState(sbx.sandboxId, requestTimeoutMs);
        last = `${seen}, state ${state}`;
        if (seen.includes('exit 0')) {
          notes.push(`victim answered again ${((now() - killedAt) / 1000).toFixed(1)} s after the kill; its file: ` +
            `${await sbx.files.read('/home/user/victim.txt', { requestTimeoutMs }).then(JSON.stringify, describeError)}`);
          break;
        }
        if (now() - killedAt > 60000) { notes.push(`victim still not answering 60 s after the kill: ${last}`); break; }
        await sleep(1000);
      }
      const killed = await sbx.kill(apiOpts(requestTimeoutMs)).then(String, describeError);
      notes.push(`victim kill → ${killed}`);
      return now();
    },
  },
  {
    name: 'memory',
    what: 'a command in one sandbox allocating past its 512Mi memory limit (dd bs=800M)',
    async inject({ requestTimeoutMs, notes }) {
      const sbx = await victimSandbox(requestTimeoutMs);
      const t = now();
      let seen;
      try {
        const r = await sbx.commands.run('dd if=/dev/zero of=/dev/null bs=800M count=1',
          { requestTimeoutMs, timeoutMs: 60000 });
        seen = `exit ${r.exitCode}`;
      } catch (e) {
        seen = `${describeError(e)}${e.exitCode !== undefined ? ` (exitCode ${e.exitCode})` : ''}`;
      }
      const end = now();
      notes.push(`victim ${sbx.sandboxId}: dd → ${seen} in ${(end - t).toFixed(0)} ms`);
      notes.push(`victim afterwards: ${await probeVictim(sbx, requestTimeoutMs)}; its file: ` +
        `${await sbx.files.read('/home/user/victim.txt', { requestTimeoutMs }).then(JSON.stringify, describeError)}`);
      await sbx.kill(apiOpts(requestTimeoutMs)).catch(() => {});
      return end;
    },
  },
  {
    name: 'disk-full',
    what: "the data dir's file system (a 2.5 GiB tmpfs) filled by a file for 10 s, then the file removed",
    tmpfsBytes: 2560 * 1024 * 1024,
    // The node's btrfs image is sparse on that tmpfs: filling the tmpfs under a mounted btrfs
    // is a different fault (README, "Left"), so this server keeps sandboxes' files on the tmpfs.
    env: { WARREN_NODE_STORAGE: 'off' },
    async inject({ server, restore, notes }) {
      const fill = path.join(server.dataDir, 'soak-fill');
      restore.add('fill', () => rmSync(fill, { force: true }));
      // Most of it at once, then the rest (what sandboxes wrote meanwhile moved the mark) until
      // the file system says no more.
      const s = statfsSync(server.dataDir);
      run('fallocate', ['-l', String(Math.max(0, s.bavail * s.bsize - (64 << 20))), fill]);
      spawnSync('dd', ['if=/dev/zero', `of=${fill}`, 'bs=1M', 'oflag=append', 'conv=notrunc'],
        { encoding: 'utf8' });  // ends with ENOSPC
      const after = statfsSync(server.dataDir);
      notes.push(`filled: ${after.bavail * after.bsize} bytes free`);
      const probe = await server.fetch(`/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets/soak-pool`,
        { method: 'PATCH', body: { metadata: { annotations: { 'soak/probe': 'disk-full' } } } })
        .then((r) => `${r.status} ${r.text.slice(0, 160)}`, describeError);
      notes.push(`a store write while full: ${probe}`);
      await sleep(10000);
      rmSync(fill, { force: true });
      restore.delete('fill');
      return now();
    },
  },
  {
    name: 'store-ro',
    what: 'store.db and its -wal made immutable (chattr +i: every SQLite write fails EPERM) for 5 s',
    async inject({ server, restore, notes }) {
      const files = ['store.db', 'store.db-wal'].map((f) => path.join(server.dataDir, f)).filter(existsSync);
      restore.add('chattr', () => spawnSync('chattr', ['-i', ...files]));
      run('chattr', ['+i', ...files]);
      const probe = await server.fetch(`/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets/soak-pool`,
        { method: 'PATCH', body: { metadata: { annotations: { 'soak/probe': 'store-ro' } } } })
        .then((r) => `${r.status} ${r.text.slice(0, 160)}`, describeError);
      notes.push(`a store write while immutable: ${probe}`);
      await sleep(5000);
      run('chattr', ['-i', ...files]);
      restore.delete('chattr');
      return now();
    },
  },
];
