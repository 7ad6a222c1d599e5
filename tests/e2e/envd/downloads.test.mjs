// GET /files as E2B's envd serves it: gzip by Accept-Encoding (through the real SDK's
// files.read({gzip: true}) and raw) when the file's first bytes compress, Range / 416,
// conditional requests / 304, 406, and Content-Disposition. Raw requests go through node:http, which (unlike fetch) shows the bytes on
// the wire without decompressing them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { startEnvd, debugSandbox, init } from './harness.mjs';

let envd;
let sbx;

before(async () => {
  envd = await startEnvd();
  assert.equal((await init(envd, { defaultUser: 'user' })).status, 204);
  sbx = await debugSandbox(envd);
});
after(async () => { await envd?.stop(); });

function raw(path, headers = {}, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request(`${envd.url}/files?path=${encodeURIComponent(path)}`,
        { method, headers, agent: false }, (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
            body: Buffer.concat(chunks) }));
          res.on('error', reject);
        });
    req.on('error', reject);
    req.end();
  });
}

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

test('files.read with gzip: text, bytes and an empty file round trip', async () => {
  const text = 'gzip me, gzip me again\n'.repeat(5000) + 'ünïcödé ✓\n';
  await sbx.files.write('gz/text.txt', text);
  assert.equal(await sbx.files.read('gz/text.txt', { gzip: true }), text);
  const bytes = new Uint8Array(70000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) % 256;
  await sbx.files.write('gz/data.bin', bytes.buffer);
  const back = await sbx.files.read('gz/data.bin', { format: 'bytes', gzip: true });
  assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
  await sbx.files.write('gz/empty', '');
  assert.equal(await sbx.files.read('gz/empty', { gzip: true }), '');
});

test('a 64 MiB file read gzipped through the SDK is intact and never held in memory', async () => {
  // Half repetitive, then half random: the text head makes the probe choose gzip, then both the
  // compressing and the stored paths of deflate run.
  const r = await sbx.commands.run('(yes warren | head -c 33554432; head -c 33554432 /dev/urandom) > /tmp/big.bin && sha256sum /tmp/big.bin | cut -c1-64');
  const back = await sbx.files.read('/tmp/big.bin', { format: 'bytes', gzip: true });
  assert.equal(back.byteLength, 64 * 1024 * 1024);
  assert.equal(sha256(Buffer.from(back)), r.stdout.trim());
  // envd's peak RSS over its whole life stays far below the file (it streams through zlib).
  const hwm = Number(readFileSync(`/proc/${envd.child.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+)/)[1]);
  assert.ok(hwm < 48 * 1024, `envd peak RSS ${hwm} kB`);
});

test('identity and gzip responses carry what E2B envd sends', async () => {
  const body = 'hello ranges and validators\n'.repeat(100);
  await sbx.files.write('dl.txt', body);
  const id = await raw('dl.txt', { 'accept-encoding': 'identity' });
  assert.equal(id.status, 200);
  assert.equal(id.body.toString(), body);
  assert.equal(id.headers['content-length'], String(body.length));
  assert.equal(id.headers['accept-ranges'], 'bytes');
  assert.equal(id.headers['vary'], 'Accept-Encoding');
  assert.equal(id.headers['content-encoding'], undefined);
  assert.equal(id.headers['content-disposition'], 'inline; filename="dl.txt"');
  assert.match(id.headers['etag'], /^W\/"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/);
  assert.match(id.headers['last-modified'], /^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$/);
  const none = await raw('dl.txt');  // no Accept-Encoding at all: identity
  assert.equal(none.headers['content-encoding'], undefined);
  assert.equal(none.body.toString(), body);

  const gz = await raw('dl.txt', { 'accept-encoding': 'gzip' });
  assert.equal(gz.status, 200);
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.equal(gz.headers['vary'], 'Accept-Encoding');
  assert.equal(gz.headers['content-length'], undefined);
  assert.ok(gz.body.length < body.length / 10, `gzip body ${gz.body.length} bytes`);
  assert.equal(gunzipSync(gz.body).toString(), body);
  assert.equal(gz.headers['etag'], id.headers['etag']);
  // A weight below identity's keeps identity; identity refused leaves gzip.
  assert.equal((await raw('dl.txt', { 'accept-encoding': 'gzip;q=0.5, identity' })).headers['content-encoding'], undefined);
  assert.equal((await raw('dl.txt', { 'accept-encoding': 'identity;q=0, gzip;q=0.1' })).headers['content-encoding'], 'gzip');
});

test('gzip only when it pays: random bytes come back identity, text gzip, identity;q=0 gzips', async () => {
  const noise = randomBytes(3 * 1024 * 1024 + 123);  // several 256 KiB reads past the probe
  await sbx.files.write('pay/noise.bin', noise);
  const text = 'a log line that compresses well\n'.repeat(100000);
  await sbx.files.write('pay/text.log', text);

  // Raw node:http, gzip offered (as files.read({gzip: true}) does): the wire shows the choice.
  let r = await raw('pay/noise.bin', { 'accept-encoding': 'gzip' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-encoding'], undefined);
  assert.equal(r.headers['content-length'], String(noise.length));
  assert.equal(r.headers['vary'], 'Accept-Encoding');
  assert.equal(r.headers['accept-ranges'], 'bytes');
  assert.equal(sha256(r.body), sha256(noise));
  const head = await raw('pay/noise.bin', { 'accept-encoding': 'gzip' }, 'HEAD');
  assert.equal(head.headers['content-length'], String(noise.length));
  assert.equal(head.headers['content-encoding'], undefined);
  r = await raw('pay/text.log', { 'accept-encoding': 'gzip' });
  assert.equal(r.headers['content-encoding'], 'gzip');
  assert.equal(r.headers['content-length'], undefined);
  assert.ok(r.body.length < text.length / 10, `gzip body ${r.body.length} bytes`);
  assert.equal(gunzipSync(r.body).toString(), text);
  // A client that refuses identity gets gzip whatever the bytes are.
  r = await raw('pay/noise.bin', { 'accept-encoding': 'gzip, identity;q=0' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-encoding'], 'gzip');
  assert.equal(sha256(gunzipSync(r.body)), sha256(noise));
  // Under 1 KiB gzip cannot pay: identity even for text.
  await sbx.files.write('pay/small.txt', 'tiny '.repeat(100));
  r = await raw('pay/small.txt', { 'accept-encoding': 'gzip' });
  assert.equal(r.headers['content-encoding'], undefined);
  assert.equal(r.headers['content-length'], '500');
  // A random file smaller than the 64 KiB probe: what was probed is all there is to send.
  const short = randomBytes(20000);
  await sbx.files.write('pay/short.bin', short);
  r = await raw('pay/short.bin', { 'accept-encoding': 'gzip' });
  assert.equal(r.headers['content-encoding'], undefined);
  assert.deepEqual(r.body, short);

  // Raw fetch sends "gzip, deflate" by itself and shows the headers it got.
  let f = await fetch(`${envd.url}/files?path=pay/noise.bin`);
  assert.equal(f.headers.get('content-encoding'), null);
  assert.equal(f.headers.get('content-length'), String(noise.length));
  assert.equal(sha256(Buffer.from(await f.arrayBuffer())), sha256(noise));
  f = await fetch(`${envd.url}/files?path=pay/text.log`);
  assert.equal(f.headers.get('content-encoding'), 'gzip');
  assert.equal(await f.text(), text);

  // The real SDK, with and without {gzip: true}: the same bytes either way.
  for (const opts of [{}, { gzip: true }]) {
    const back = await sbx.files.read('pay/noise.bin', { format: 'bytes', ...opts });
    assert.equal(sha256(Buffer.from(back)), sha256(noise));
    assert.equal(await sbx.files.read('pay/text.log', opts), text);
    assert.deepEqual(Buffer.from(await sbx.files.read('pay/short.bin', { format: 'bytes', ...opts })), short);
  }
});

test('406 when the client refuses identity and offers nothing we produce', async () => {
  await sbx.files.write('neg.txt', 'x');
  for (const ae of ['identity;q=0', '*;q=0', 'br, identity;q=0', 'gzip;q=0, identity;q=0']) {
    const r = await raw('neg.txt', { 'accept-encoding': ae });
    assert.equal(r.status, 406, ae);
    assert.equal(r.headers['content-type'], 'application/json');
    const j = JSON.parse(r.body.toString());
    assert.equal(j.code, 406);
    assert.match(j.message, /Content-Encoding/);
  }
  // A malformed weight drops its element instead of refusing identity.
  assert.equal((await raw('neg.txt', { 'accept-encoding': 'identity;q=zero' })).status, 200);
});

test('Range: 206 with Content-Range, 416 past the end, whole file for several or garbage', async () => {
  await sbx.files.write('r.txt', '0123456789');
  const part = async (range, extra = {}) => raw('r.txt', { range, 'accept-encoding': 'identity', ...extra });
  let r = await part('bytes=2-5');
  assert.equal(r.status, 206);
  assert.equal(r.body.toString(), '2345');
  assert.equal(r.headers['content-range'], 'bytes 2-5/10');
  assert.equal(r.headers['content-length'], '4');
  r = await part('bytes=7-');
  assert.equal(r.body.toString(), '789');
  r = await part('bytes=-3');
  assert.equal(r.body.toString(), '789');
  assert.equal(r.headers['content-range'], 'bytes 7-9/10');
  r = await part('bytes=5-999999999999999999999999');
  assert.equal(r.status, 206);
  assert.equal(r.body.toString(), '56789');
  // Ranges are answered in identity even when the client also takes gzip.
  r = await part('bytes=0-1', { 'accept-encoding': 'gzip' });
  assert.equal(r.status, 206);
  assert.equal(r.headers['content-encoding'], undefined);
  assert.equal(r.body.toString(), '01');

  for (const range of ['bytes=10-', 'bytes=99999999999999999999999-', 'bytes=-0']) {
    r = await part(range);
    assert.equal(r.status, 416, range);
    assert.equal(r.headers['content-range'], 'bytes */10');
    assert.equal(JSON.parse(r.body.toString()).code, 416);
  }
  for (const range of ['bytes=0-1,4-5', 'bytes=5-2', 'bytes=-5-2', 'bytes=abc', 'pages=1-2', 'bytes=--1',
    'x'.repeat(4000)]) {
    r = await part(range);
    assert.equal(r.status, 200, range);
    assert.equal(r.body.toString(), '0123456789');
  }
  // The same through fetch, as a browser or the SDK's downloadUrl user would do it.
  const f = await fetch(`${envd.url}/files?path=r.txt`, { headers: { range: 'bytes=3-4' } });
  assert.equal(f.status, 206);
  assert.equal(await f.text(), '34');
  assert.equal((await fetch(`${envd.url}/health`)).status, 204);
});

test('conditional requests: 304 for a current validator, 200 once the file changes; If-Range', async () => {
  await sbx.files.write('c.txt', 'version one');
  const first = await raw('c.txt', { 'accept-encoding': 'identity' });
  const etag = first.headers['etag'];
  const lastModified = first.headers['last-modified'];
  let r = await raw('c.txt', { 'if-none-match': etag });
  assert.equal(r.status, 304);
  assert.equal(r.body.length, 0);
  assert.equal(r.headers['etag'], etag);
  assert.equal((await raw('c.txt', { 'if-none-match': `"nope", ${etag}` })).status, 304);
  assert.equal((await raw('c.txt', { 'if-none-match': '*' })).status, 304);
  assert.equal((await raw('c.txt', { 'if-modified-since': lastModified })).status, 304);
  assert.equal((await raw('c.txt', { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 200);
  assert.equal((await raw('c.txt', { 'if-modified-since': 'garbage' })).status, 200);
  assert.equal((await raw('c.txt', { 'if-none-match': '"nope"', 'if-modified-since': lastModified })).status, 200);

  // If-Range: a matching date keeps the range; the weak ETag never does (RFC 9110 needs strong).
  r = await raw('c.txt', { range: 'bytes=0-6', 'if-range': lastModified, 'accept-encoding': 'identity' });
  assert.equal(r.status, 206);
  assert.equal(r.body.toString(), 'version');
  r = await raw('c.txt', { range: 'bytes=0-6', 'if-range': etag, 'accept-encoding': 'identity' });
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), 'version one');

  await sbx.files.write('c.txt', 'version two!');
  r = await raw('c.txt', { 'if-none-match': etag, 'accept-encoding': 'identity' });
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), 'version two!');
  assert.notEqual(r.headers['etag'], etag);
});

test('Content-Disposition quotes names safely; HEAD has the headers and no body', async () => {
  await sbx.files.write('résumé "final".txt', 'cv');
  const r = await raw('résumé "final".txt', { 'accept-encoding': 'identity' });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-disposition'],
      'inline; filename="r__sum__ \\"final\\".txt"; filename*=UTF-8\'\'r%C3%A9sum%C3%A9%20%22final%22.txt');
  const h = await raw('c.txt', { 'accept-encoding': 'identity' }, 'HEAD');
  assert.equal(h.status, 200);
  assert.equal(h.headers['content-length'], '12');
  assert.equal(h.body.length, 0);
  const missing = await raw('nope.txt', { range: 'bytes=0-1', 'if-none-match': '*' });
  assert.equal(missing.status, 404);
});
