// files.* through the real e2b SDK against warren-envd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FileNotFoundError, FileType, FilesystemEventType, InvalidArgumentError } from 'e2b';
import { startEnvd, debugSandbox, init } from './harness.mjs';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd();
  assert.equal((await init(envd, { defaultUser: 'user' })).status, 204);
  sbx = await debugSandbox(envd);
});
after(async () => { await envd?.stop(); });

test('write and read text; the result names the file', async () => {
  const info = await sbx.files.write('hello.txt', 'Hello, Warren!\n');
  assert.deepEqual({ path: info.path, name: info.name, type: info.type },
      { path: '/home/user/hello.txt', name: 'hello.txt', type: 'file' });
  assert.equal(info.metadata, undefined);
  assert.equal(await sbx.files.read('hello.txt'), 'Hello, Warren!\n');
  assert.equal(await sbx.files.read('/home/user/hello.txt'), 'Hello, Warren!\n');
  assert.equal((await sbx.commands.run('cat ~/hello.txt')).stdout, 'Hello, Warren!\n');
  await sbx.files.write('empty.txt', '');
  assert.equal(await sbx.files.read('empty.txt'), '');
});

test('bytes round trip, all 256 values', async () => {
  const bytes = new Uint8Array(4096);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
  await sbx.files.write('bin/data.bin', bytes.buffer);
  const back = await sbx.files.read('bin/data.bin', { format: 'bytes' });
  assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
  const sum = await sbx.commands.run('sha256sum bin/data.bin | cut -c1-64');
  const { createHash } = await import('node:crypto');
  assert.equal(sum.stdout.trim(), createHash('sha256').update(bytes).digest('hex'));
});

test('multi-file write keeps directories of filenames', async () => {
  const infos = await sbx.files.write([
    { path: 'multi/a.txt', data: 'A' },
    { path: '/tmp/warren-multi/b.txt', data: 'B' },
  ]);
  assert.deepEqual(infos.map((i) => i.path), ['/home/user/multi/a.txt', '/tmp/warren-multi/b.txt']);
  assert.equal(await sbx.files.read('multi/a.txt'), 'A');
  assert.equal(await sbx.files.read('/tmp/warren-multi/b.txt'), 'B');
});

test('getInfo: owner, group, mode, permissions, type, size', async () => {
  await sbx.files.write('info.txt', 'abcd');
  const i = await sbx.files.getInfo('info.txt');
  assert.equal(i.name, 'info.txt');
  assert.equal(i.type, FileType.FILE);
  assert.equal(i.path, '/home/user/info.txt');
  assert.equal(i.size, 4);
  assert.equal(i.mode, 0o644);
  assert.equal(i.permissions, '-rw-r--r--');
  assert.equal(i.owner, 'user');
  assert.equal(i.group, 'user');
  assert.ok(i.modifiedTime instanceof Date && Math.abs(i.modifiedTime - Date.now()) < 60000);
  const d = await sbx.files.getInfo('/home/user');
  assert.equal(d.type, FileType.DIR);
  assert.equal(d.permissions, 'drwxr-xr-x');
  await sbx.commands.run('ln -s /home/user/info.txt /home/user/info-link');
  const l = await sbx.files.getInfo('info-link');
  assert.equal(l.type, FileType.FILE);
  assert.equal(l.symlinkTarget, '/home/user/info.txt');
  await assert.rejects(sbx.files.getInfo('nope.txt'), (e) => e instanceof FileNotFoundError);
});

test('list: depth and lexical pre-order', async () => {
  await sbx.commands.run('mkdir -p tree/subdir1/subdir1_1 tree/subdir1/subdir1_2 tree/subdir2 && ' +
      'touch tree/file1.txt tree/subdir1/subdir1_2/deep.txt tree/subdir2/x.txt');
  const one = await sbx.files.list('tree');
  assert.deepEqual(one.map((e) => e.name), ['file1.txt', 'subdir1', 'subdir2']);
  assert.deepEqual(one.map((e) => e.type), [FileType.FILE, FileType.DIR, FileType.DIR]);
  const two = await sbx.files.list('tree', { depth: 2 });
  assert.deepEqual(two.map((e) => e.path.replace('/home/user/tree/', '')),
      ['file1.txt', 'subdir1', 'subdir1/subdir1_1', 'subdir1/subdir1_2', 'subdir2', 'subdir2/x.txt']);
  const three = await sbx.files.list('tree', { depth: 3 });
  assert.equal(three.length, 7);
  await assert.rejects(sbx.files.list('no-such-dir'), (e) => e instanceof FileNotFoundError);
});

test('makeDir: true when created (owned by user), false when it exists', async () => {
  assert.equal(await sbx.files.makeDir('made/deep/er'), true);
  assert.equal(await sbx.files.makeDir('made/deep/er'), false);
  const i = await sbx.files.getInfo('made/deep');
  assert.equal(i.owner, 'user');
  assert.equal(i.permissions, 'drwxr-xr-x');
});

test('rename, remove, exists', async () => {
  await sbx.files.write('old.txt', 'x');
  const moved = await sbx.files.rename('old.txt', 'moved/new.txt');
  assert.equal(moved.path, '/home/user/moved/new.txt');
  assert.equal(await sbx.files.exists('old.txt'), false);
  assert.equal(await sbx.files.exists('moved/new.txt'), true);
  await assert.rejects(sbx.files.rename('old.txt', 'x.txt'), (e) => e instanceof FileNotFoundError);
  await sbx.files.remove('moved');
  assert.equal(await sbx.files.exists('moved'), false);
  await sbx.files.remove('moved');  // removing what is gone is fine
  await assert.rejects(sbx.files.read('moved/new.txt'), (e) => e instanceof FileNotFoundError);
});

test('reading a directory or escaping home is refused', async () => {
  await assert.rejects(sbx.files.read('/home/user'), (e) => e instanceof InvalidArgumentError);
  await assert.rejects(sbx.files.read('../../etc/hostname'),
      (e) => e instanceof InvalidArgumentError && /escapes the home directory/.test(e.message));
});

test('watchDir: write and create events, recursive into new directories, with entries', async () => {
  await sbx.files.makeDir('watched');
  await sbx.files.write('watched/existing.txt', 'v1');
  const events = [];
  const handle = await sbx.files.watchDir('watched', (e) => events.push(e),
      { recursive: true, includeEntry: true });
  await sbx.files.write('watched/existing.txt', 'v2');
  await sbx.files.makeDir('watched/nested');
  const has = (name, type) => events.some((e) => e.name === name && e.type === type);
  // envd watches a new directory before it reports its CREATE.
  for (let i = 0; i < 100 && !has('nested', FilesystemEventType.CREATE); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await sbx.files.write('watched/nested/test_watch.txt', 'hi');
  for (let i = 0; i < 100 && !has('nested/test_watch.txt', FilesystemEventType.WRITE); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await handle.stop();
  assert.ok(has('existing.txt', FilesystemEventType.WRITE), JSON.stringify(events));
  assert.ok(has('nested', FilesystemEventType.CREATE), JSON.stringify(events));
  assert.ok(has('nested/test_watch.txt', FilesystemEventType.CREATE));
  const w = events.find((e) => e.name === 'nested/test_watch.txt' && e.type === FilesystemEventType.WRITE);
  assert.ok(w);
  assert.equal(w.entry?.path, '/home/user/watched/nested/test_watch.txt');
  await assert.rejects(sbx.files.watchDir('not-there', () => {}), (e) => e instanceof FileNotFoundError);
});

test('file metadata is kept and replaced', async () => {
  const info = await sbx.files.write('meta.txt', 'x', { metadata: { owner: 'me', purpose: 'test' } });
  assert.deepEqual(info.metadata, { owner: 'me', purpose: 'test' });
  const again = await sbx.files.write('meta.txt', 'y');
  assert.equal(again.metadata, undefined);
});

test('gzip and octet-stream uploads', async () => {
  const big = 'line of text\n'.repeat(10000);
  await sbx.files.write('gz.txt', big, { gzip: true });
  assert.equal(await sbx.files.read('gz.txt'), big);
  await sbx.files.write('octet.txt', 'raw bytes', { useOctetStream: true });
  assert.equal(await sbx.files.read('octet.txt', { gzip: true }), 'raw bytes');
});
