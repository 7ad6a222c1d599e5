// The stock E2B SDK on a template whose pod names runtimeClassName gvisor: the sandbox runs
// under runsc (gVisor's kernel answers), commands and files work through envd over the gVisor
// runtime's stdio channel, and a kill -9 of the server leaves it running for the next server to
// adopt. Skipped where runsc is not installed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Sandbox, CommandExitError, SandboxError } from 'e2b';
import { startWarren, useEnv } from './harness.mjs';

const HAVE_RUNSC = existsSync('/usr/bin/runsc');
let w;
before(async () => {
  if (!HAVE_RUNSC) return;
  w = await startWarren();
  useEnv(w);
  const res = await w.apiFetch(
    `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
        metadata: { name: 'base-gvisor' },
        spec: { template: { spec: { runtimeClassName: 'gvisor',
          containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } } },
      }),
    });
  assert.equal(res.status, 201, await res.text());
});
after(async () => { await w?.stop(); });

test('a gvisor sandbox runs commands and files through the SDK and survives a kill -9 of the server',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    const kernel = await sbx.commands.run('dmesg | head -1');
    assert.match(kernel.stdout, /gVisor/);
    const who = await sbx.commands.run('whoami && pwd');
    assert.equal(who.stdout, 'user\n/home/user\n');
    await assert.rejects(sbx.commands.run('echo on-stderr >&2; exit 3'), (e) => {
      assert.ok(e instanceof CommandExitError, String(e));
      assert.equal(e.exitCode, 3);
      assert.equal(e.stderr, 'on-stderr\n');
      return true;
    });
    await sbx.files.write('/home/user/note.txt', 'written in gvisor');
    assert.equal(await sbx.files.read('/home/user/note.txt'), 'written in gvisor');
    const sleeper = await sbx.commands.run('sleep 3600', { background: true });

    await w.crash();
    useEnv(w);

    const info = await w.api('GET', `/sandboxes/${sbx.sandboxId}`);
    assert.equal(info.status, 200, info.text);
    assert.equal(info.json.state, 'running');
    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal((await again.commands.run(`kill -0 ${sleeper.pid} && echo alive`)).stdout,
      'alive\n');
    assert.equal(await again.files.read('/home/user/note.txt'), 'written in gvisor');
    await again.kill();
  });

function pausedReason(o) {
  return (o?.status?.conditions ?? []).find((c) => c.type === 'SandboxPaused')?.reason;
}

// A Python counter keeps its count in memory: after a restore it goes on from where it was; a
// process started afresh would count from 1 again. It renames each count into place: a reader
// of a file truncated and rewritten can see it empty (read as 0, "the counter started over").
const COUNTER = `python3 -c "
import os, time
i = 0
while True:
    i += 1
    open('/tmp/count.new', 'w').write(str(i))
    os.replace('/tmp/count.new', '/tmp/count')
    time.sleep(0.05)
"`;

// 0 until the counter has written its first count (Python starts slowly under gVisor's ptrace).
async function count(sbx) {
  return Number((await sbx.commands.run('cat /tmp/count 2>/dev/null || echo 0')).stdout);
}

test('pause writes a gvisor sandbox\'s processes and memory to disk; connect restores them',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    const counter = await sbx.commands.run(COUNTER, { background: true });
    await sbx.files.write('/home/user/kept.txt', 'files too');
    // Python starts slowly under ptrace on a loaded host: wait for it to count.
    let before = 0;
    for (let i = 0; before <= 3; i++) {
      assert.ok(i < 300, `the counter did not run: ${before}`);
      await new Promise((r) => setTimeout(r, 100));
      before = await count(sbx);
    }

    // Copies keeping memory are not done on gVisor: refused, naming why, the source untouched.
    for (const copy of [() => sbx.createSnapshot(), () => sbx.fork({ count: 1 })]) {
      await assert.rejects(copy(), (e) => {
        assert.ok(e instanceof SandboxError, `${e?.name}: ${e?.message}`);
        assert.equal(e.statusCode, 409, e.message);
        assert.match(e.message, /runtime class gvisor.*no snapshots or forks/);
        return true;
      });
    }

    assert.equal(await sbx.pause(), true);
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused');
    const obj = await w.sandboxObject(sbx.sandboxId);
    assert.equal(pausedReason(obj), 'HibernatePauseSucceed', JSON.stringify(obj?.status));
    await new Promise((r) => setTimeout(r, 1000));

    const again = await Sandbox.connect(sbx.sandboxId);
    const after = await count(again);
    assert.ok(after >= before, `the counter started over (${before} → ${after})`);
    assert.ok(after < before + 60, `it counted while hibernated (${before} → ${after})`);
    assert.equal((await again.commands.run(`kill -0 ${counter.pid} && echo same`)).stdout,
      'same\n');
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(await count(again) > after, 'and it counts on');
    assert.equal(await again.files.read('/home/user/kept.txt'), 'files too');
    await again.kill();
  });

// runsc 20221219 cannot save a TCP socket that a process watches with epoll (an asyncio
// server): the checkpoint ends the processes, and the pause keeps the files, saying why.
test('a gvisor sandbox whose processes cannot be saved is paused with its files only, and says why',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const sbx = await Sandbox.create('base-gvisor', { timeoutMs: 600_000 });
    await sbx.commands.run(`python3 -c "
import asyncio
async def main():
    await asyncio.start_server(lambda r, w: None, '127.0.0.1', 7000)
    await asyncio.sleep(3600)
asyncio.run(main())
"`, { background: true });
    await sbx.files.write('/home/user/kept.txt', 'still here');
    for (let i = 0; ; i++) {
      const up = await sbx.commands.run('netstat -tln 2>/dev/null | grep -c :7000 || true');
      if (up.stdout.trim() === '1' || i > 50) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    assert.equal(await sbx.pause(), true);
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused');
    const obj = await w.sandboxObject(sbx.sandboxId);
    assert.equal(pausedReason(obj), 'HibernateFailed', JSON.stringify(obj?.status));
    assert.match(obj.status.message, /epoll cannot be saved.*files are kept/);

    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal(await again.files.read('/home/user/kept.txt'), 'still here');
    assert.equal((await again.commands.run('pgrep -f start_[s]erver || true')).stdout, '',
      'the server survived a checkpoint that could not save it');
    await again.kill();
  });

test('an idle gvisor sandbox hibernates; the next request is parked while it is restored',
  { skip: !HAVE_RUNSC && 'runsc is not installed' }, async () => {
    const ns = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default`;
    const res = await w.apiFetch(`${ns}/sandboxtemplates`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
        metadata: { name: 'gvisor-idle-2s' },
        spec: {
          pauseStrategy: { idleSeconds: 2 },
          template: { spec: { runtimeClassName: 'gvisor',
            containers: [{ name: 'main', image: 'base', workingDir: '/home/user' }] } },
        },
      }),
    });
    assert.equal(res.status, 201, await res.text());
    const sbx = await Sandbox.create('gvisor-idle-2s', { timeoutMs: 600_000 });
    const counter = await sbx.commands.run(COUNTER, { background: true });
    await counter.disconnect();  // a streamed command is traffic: let go of it
    await new Promise((r) => setTimeout(r, 500));
    const before = await count(sbx);
    for (let i = 0; (await Sandbox.getInfo(sbx.sandboxId)).state !== 'paused'; i++) {
      assert.ok(i < 400, 'an idle gvisor sandbox was not paused');
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; ; i++) {
      const reason = pausedReason(await w.sandboxObject(sbx.sandboxId));
      if (reason === 'HibernatePauseSucceed') break;
      assert.ok(i < 200, `not hibernated: ${reason}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Parked in the gateway while the restore runs; the counter goes on from its memory.
    const after = await count(sbx);
    assert.ok(after >= before, `the counter started over (${before} → ${after})`);
    assert.equal((await sbx.commands.run(`kill -0 ${counter.pid} && echo same`)).stdout, 'same\n');
    await sbx.kill();
    await w.apiFetch(`${ns}/sandboxtemplates/gvisor-idle-2s`, { method: 'DELETE' });
  });
