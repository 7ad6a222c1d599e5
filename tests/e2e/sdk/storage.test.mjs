// ephemeral-storage through the unmodified E2B SDK: a template that limits it, a files.write
// larger than what is left → NotEnoughSpaceError (envd's 507) and no partial file; a process
// writing past it gets "Disk quota exceeded"; space freed is usable again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, NotEnoughSpaceError } from 'e2b';
import { startWarren, useEnv } from './harness.mjs';

let w;
const TEMPLATE = 'small-disk';

before(async () => {
  w = await startWarren();
  useEnv(w);
  // The built-in `base`, with 64 MiB of ephemeral-storage.
  const res = await w.api('POST',
    '/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxtemplates', {
      body: {
        apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxTemplate',
        metadata: { name: TEMPLATE },
        spec: { template: { spec: { containers: [{
          name: 'main', image: 'base', workingDir: '/home/user',
          resources: { limits: { 'ephemeral-storage': '64Mi' } },
        }] } } },
      },
    });
  assert.equal(res.status, 201, res.text);
});
after(async () => { await w?.stop(); });

test('files.write past ephemeral-storage → NotEnoughSpaceError, no partial file', async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    const big = new Uint8Array(96 * 1024 * 1024).fill(120);
    await assert.rejects(sbx.files.write('big.bin', big.buffer), (e) => {
      assert.ok(e instanceof NotEnoughSpaceError, `${e?.name}: ${e?.message}`);
      return true;
    });
    assert.equal(await sbx.files.exists('big.bin'), false, 'a partial upload was left');
    // What fits is still written.
    await sbx.files.write('small.txt', 'fits\n');
    assert.equal(await sbx.files.read('small.txt'), 'fits\n');
  } finally {
    await sbx.kill();
  }
});

test('a process writing past ephemeral-storage gets EDQUOT; freed space is usable', async () => {
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    const r = await sbx.commands.run(
      'dd if=/dev/zero of=/tmp/fill bs=1M count=128 2>&1; echo "rc=$?"', { user: 'root' });
    assert.match(r.stdout, /Disk quota exceeded/);
    assert.doesNotMatch(r.stdout, /rc=0/);
    const again = await sbx.commands.run(
      'rm /tmp/fill && dd if=/dev/zero of=/tmp/again bs=1M count=16 2>&1 && echo ok',
      { user: 'root' });
    assert.match(again.stdout, /ok\n$/);
  } finally {
    await sbx.kill();
  }
});
