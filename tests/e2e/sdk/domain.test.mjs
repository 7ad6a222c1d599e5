// Domain mode (`warren server --domain`): the stock SDK given only the API URL, the key and the
// domain (no E2B_SANDBOX_URL) reaches envd and a sandbox's ports over HTTPS at
// <port>-<id>.<domain>, trusting the CA Warren made on first start, and its signed file URLs
// work, expire and are required by secure sandboxes. The server listens on a loopback address
// of its own with the HTTPS port at 443, as a real domain's would be; the client process alone
// resolves *.<domain> to it (fixtures/resolve_domain.mjs).
import { test, before, after } from 'node:test';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { startWarren, TEMPLATE } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const DOMAIN = 'sbx.warren.test';
// A loopback address few others use, so port 443 on it is free.
const ADDRESS = `127.44.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
let w;

before(async () => {
  w = await startWarren({ address: ADDRESS, args: ['--domain', DOMAIN] });
});
after(async () => { await w?.stop(); });

function runClient(env) {
  return new Promise((resolve, reject) => {
    const clean = { ...process.env };
    for (const k of ['E2B_SANDBOX_URL', 'E2B_DEBUG', 'E2B_DOMAIN', 'E2B_API_URL', 'E2B_API_KEY']) delete clean[k];
    execFile(process.execPath, [path.join(here, 'fixtures/domain_client.mjs')],
      { env: { ...clean, ...env }, timeout: 240_000 }, (err, stdout, stderr) => {
        const line = stdout.trim().split('\n').pop();
        try {
          resolve(JSON.parse(line));
        } catch {
          reject(new Error(`client failed (${err?.message}):\n${stdout}\n${stderr}`));
        }
      });
  });
}

test('the stock SDK with a domain and Warren CA: envd, getHost and signed URLs over HTTPS', async () => {
  const ca = path.join(w.dataDir, 'tls/ca.crt');
  assert.ok(existsSync(ca), 'the CA is made on first start');
  assert.match(w.log(), new RegExp(`export NODE_EXTRA_CA_CERTS=${ca.replace(/[.]/g, '\\.')}`),
    'the server prints the export that trusts it');
  const out = await runClient({
    E2B_API_URL: w.apiUrl, E2B_API_KEY: w.adminKey, E2B_DOMAIN: DOMAIN,
    NODE_EXTRA_CA_CERTS: ca, WARREN_TEST_DOMAIN: DOMAIN, WARREN_TEST_ADDRESS: ADDRESS,
    WARREN_TEST_TEMPLATE: TEMPLATE,
  });
  assert.equal(out.error, undefined, out.error);
  assert.equal(out.domain, DOMAIN, 'create answers with the domain');
  assert.match(out.envdUrl, new RegExp(`^https://49983-[a-z0-9]+\\.${DOMAIN.replace(/[.]/g, '\\.')}$`));
  assert.equal(out.stdout, 'hello over tls\n');
  assert.equal(out.portBody, 'served from the sandbox', `getHost(8000) = ${out.host}`);

  assert.match(out.uploadUrl, /[?&]signature=v1_/);
  assert.equal(out.upload.status, 200, out.upload.text);
  assert.equal(out.uploaded, 'uploaded through a signed URL');
  assert.equal(out.download.status, 200, out.download.text);
  assert.equal(out.download.text, 'uploaded through a signed URL');
  assert.equal(out.expired.status, 401);
  assert.deepEqual(out.expired.json, { code: 401, message: 'signature is already expired' });
  assert.equal(out.unsigned.status, 401, 'a secure sandbox refuses an unsigned file URL');
  assert.deepEqual(out.unsigned.json, { code: 401, message: 'missing signature query parameter' });
  assert.equal(out.tampered.status, 401, 'a signature is for one path');
  assert.equal(out.openDownload.status, 200, out.openDownload.text);
  assert.equal(out.openDownload.text, 'anyone with the URL');
});

test('the HTTPS port refuses plain HTTP and a client that does not trust the CA', async () => {
  // Plain HTTP on the TLS port: the handshake fails, nothing is routed.
  const tlsPort = Number(readFileSync(path.join(w.dataDir, 'gateway-tls.port'), 'utf8'));
  assert.equal(tlsPort, 443);
  await assert.rejects(fetch(`http://${ADDRESS}:443/health`, { signal: AbortSignal.timeout(5000) }));
  // This process does not trust Warren's CA: the certificate is refused.
  const out = await runClient({
    E2B_API_URL: w.apiUrl, E2B_API_KEY: w.adminKey, E2B_DOMAIN: DOMAIN,
    WARREN_TEST_DOMAIN: DOMAIN, WARREN_TEST_ADDRESS: ADDRESS, WARREN_TEST_TEMPLATE: TEMPLATE,
  });
  assert.match(out.error ?? '', /certificate|fetch failed/i);
});
