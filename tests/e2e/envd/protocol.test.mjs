// Protocol details below the SDK: keepalives, stream deadlines, polling watchers, /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startEnvd, init } from './harness.mjs';

let envd;

before(async () => {
  envd = await startEnvd();
  assert.equal((await init(envd, { defaultUser: 'user' })).status, 204);
});
after(async () => { await envd?.stop(); });

function envelope(payload) {
  const body = Buffer.from(JSON.stringify(payload));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

function frames(buf) {
  const out = [];
  for (let i = 0; i + 5 <= buf.length;) {
    const len = buf.readUInt32BE(i + 1);
    out.push({ flags: buf[i], json: JSON.parse(buf.subarray(i + 5, i + 5 + len).toString()) });
    i += 5 + len;
  }
  return out;
}

async function stream(path, payload, headers) {
  const r = await fetch(`${envd.url}${path}`, { method: 'POST', body: envelope(payload),
    headers: { 'content-type': 'application/connect+json', 'connect-protocol-version': '1', ...headers } });
  assert.equal(r.status, 200);
  return frames(Buffer.from(await r.arrayBuffer()));
}

async function unary(path, payload) {
  const r = await fetch(`${envd.url}${path}`, { method: 'POST', body: JSON.stringify(payload),
    headers: { 'content-type': 'application/json' } });
  return { status: r.status, body: await r.json() };
}

test('a quiet stream gets keepalives, then exactly one end-of-stream frame', async () => {
  const f = await stream('/process.Process/Start',
      { process: { cmd: '/bin/sh', args: ['-c', 'sleep 2.5; echo x'] } },
      { 'keepalive-ping-interval': '1', 'connect-timeout-ms': '20000' });
  assert.deepEqual(f[0].json.event.start !== undefined, true);
  assert.ok(f.filter((x) => x.json.event?.keepalive).length >= 2, JSON.stringify(f));
  assert.equal(f.filter((x) => x.flags === 2).length, 1);
  assert.equal(f.at(-1).flags, 2);
  assert.deepEqual(f.at(-1).json, {});
  assert.deepEqual(f.at(-2).json, { event: { end: { exited: true, status: 'exit status 0' } } });
});

test('WatchDir deadline ends with deadline_exceeded; its messages have no event wrapper', async () => {
  const f = await stream('/filesystem.Filesystem/WatchDir', { path: '/home/user' },
      { 'connect-timeout-ms': '500' });
  assert.deepEqual(f[0].json, { start: {} });
  assert.deepEqual(f.at(-1).json, { error: { code: 'deadline_exceeded', message: 'deadline exceeded' } });
});

test('polling watchers: create, collect events, remove', async () => {
  await unary('/filesystem.Filesystem/MakeDir', { path: 'polled' });
  const created = await unary('/filesystem.Filesystem/CreateWatcher', { path: 'polled', recursive: true });
  assert.equal(created.status, 200);
  assert.match(created.body.watcherId, /^w/);
  const form = new FormData();
  form.append('file', new Blob(['x']), 'polled/a.txt');
  assert.equal((await fetch(`${envd.url}/files`, { method: 'POST', body: form })).status, 200);
  let events = [];
  for (let i = 0; i < 40 && !events.some((e) => e.type === 'EVENT_TYPE_WRITE'); i++) {
    await new Promise((r) => setTimeout(r, 50));
    const got = await unary('/filesystem.Filesystem/GetWatcherEvents', { watcherId: created.body.watcherId });
    events = events.concat(got.body.events ?? []);
  }
  assert.ok(events.some((e) => e.name === 'a.txt' && e.type === 'EVENT_TYPE_CREATE'), JSON.stringify(events));
  assert.ok(events.some((e) => e.name === 'a.txt' && e.type === 'EVENT_TYPE_WRITE'));
  const again = await unary('/filesystem.Filesystem/GetWatcherEvents', { watcher_id: created.body.watcherId });
  assert.deepEqual(again.body, {});  // drained
  assert.equal((await unary('/filesystem.Filesystem/RemoveWatcher', { watcherId: created.body.watcherId })).status, 200);
  const gone = await unary('/filesystem.Filesystem/RemoveWatcher', { watcherId: created.body.watcherId });
  assert.equal(gone.status, 404);
  assert.equal(gone.body.code, 'not_found');
});

test('Stat answers in proto3 JSON: int64 size as a string, RFC 3339 nanos', async () => {
  await fetch(`${envd.url}/files?path=four.txt`, { method: 'POST',
    headers: { 'content-type': 'application/octet-stream' }, body: 'abcd' });
  const r = await unary('/filesystem.Filesystem/Stat', { path: 'four.txt' });
  assert.equal(r.body.entry.size, '4');
  assert.equal(r.body.entry.mode, 420);
  assert.equal(r.body.entry.type, 'FILE_TYPE_FILE');
  assert.match(r.body.entry.modifiedTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
  const missing = await unary('/filesystem.Filesystem/Stat', { path: 'missing.txt' });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.code, 'not_found');
});

test('/files download carries length and disposition; /metrics reports the machine', async () => {
  // fetch asks for gzip by itself; identity is what carries the length.
  const r = await fetch(`${envd.url}/files?path=four.txt`, { headers: { 'accept-encoding': 'identity' } });
  assert.equal(r.headers.get('content-length'), '4');
  assert.equal(r.headers.get('content-disposition'), 'inline; filename="four.txt"');
  const m = await (await fetch(`${envd.url}/metrics`)).json();
  for (const k of ['ts', 'cpu_count', 'cpu_used_pct', 'mem_total', 'mem_used', 'mem_cache',
    'mem_total_mib', 'mem_used_mib', 'disk_used', 'disk_total']) {
    assert.ok(k in m, k);
  }
  assert.ok(m.mem_total > 0 && m.cpu_count > 0);
  assert.equal(m.envd_version, '0.6.4');
});
