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

test('on a full sandbox every small files.write is NotEnoughSpaceError, never a cut connection', async () => {
  // envd answers 507 before it has read the whole upload; the gateway used to say keep-alive
  // and then cut the connection, so the next write on it failed with "fetch failed <- EPIPE"
  // (5 of 40 before the fix; issue 19's disk-full fault).
  const sbx = await Sandbox.create(TEMPLATE);
  try {
    await sbx.commands.run('dd if=/dev/zero of=/tmp/fill bs=1M count=128 2>/dev/null; true',
      { user: 'root' });
    const seen = [];
    for (let i = 0; i < 40; i++) {
      try {
        await sbx.files.write(`w-${i}.txt`, `write ${i}\n`);
        seen.push('written');
      } catch (e) {
        seen.push(e instanceof NotEnoughSpaceError ? 'NotEnoughSpaceError' : `${e?.name}: ${e?.message} ${e?.cause?.code ?? ''}`);
      }
    }
    assert.deepEqual(seen.filter((s) => s !== 'NotEnoughSpaceError'), []);
  } finally {
    await sbx.kill();
  }
});
