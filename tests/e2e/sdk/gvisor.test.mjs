// The stock E2B SDK on a template whose pod names runtimeClassName gvisor: the sandbox runs
// under runsc (gVisor's kernel answers), commands and files work through envd over the gVisor
// runtime's stdio channel, and a kill -9 of the server leaves it running for the next server to
// adopt. Skipped where runsc is not installed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Sandbox, CommandExitError } from 'e2b';
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
