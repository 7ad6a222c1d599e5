// Whole-system figures of warren-envd through the real e2b SDK, each printed beside a reference
// measured in the same run on the same machine:
//   - commands.run('true') round trips: p50 / p99 / per second, beside fork+exec of
//     `/bin/bash -l -c true` by node itself (the work envd does, without the protocol);
//   - files.write + files.read of 1 MiB and 100 MiB, beside `cp` + `cat` of the same bytes and
//     beside raw HTTP (curl) against the same envd;
//   - files.read of a 100 MiB text file with gzip (what the SDK asks for with {gzip: true}, and
//     what Node's fetch asks for by itself), beside identity and `curl --compressed` reads of
//     the same file from the same envd;
//   - files.read of 100 MiB of random bytes (Node's fetch offers gzip, envd's probe declines it),
//     beside fetch with identity and fetch forcing gzip (`identity;q=0`, what every SDK read of
//     such a file cost before the probe).
// `--quick` (what ctest runs) uses small sizes so the bench only proves it still works.

import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startEnvd, debugSandbox, init } = await import(
  path.resolve(here, '../../tests/e2e/envd/harness.mjs'));

const quick = process.argv.includes('--quick');
const runs = quick ? 30 : 500;
const sizes = quick ? [1 << 20] : [1 << 20, 100 << 20];
const fileRounds = quick ? 1 : 3;

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
function fmtMs(x) { return `${x.toFixed(2)} ms`; }
function median(xs) { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; }
function now() { return Number(process.hrtime.bigint()) / 1e6; }

const envd = await startEnvd();
try {
  if ((await init(envd, { defaultUser: 'user' })).status !== 204) throw new Error('init failed');
  const sbx = await debugSandbox(envd);

  // --- commands.run('true') ---
  for (let i = 0; i < 5; i++) await sbx.commands.run('true');
  const lat = [];
  const t0 = now();
  for (let i = 0; i < runs; i++) {
    const s = now();
    await sbx.commands.run('true');
    lat.push(now() - s);
  }
  const total = now() - t0;
  lat.sort((a, b) => a - b);
  const ref = [];
  for (let i = 0; i < runs; i++) {
    const s = now();
    spawnSync('/bin/bash', ['-l', '-c', 'true'], { env: { PATH: process.env.PATH, HOME: '/tmp' } });
    ref.push(now() - s);
  }
  ref.sort((a, b) => a - b);
  console.log(`commands.run('true') x${runs}: p50 ${fmtMs(pct(lat, 50))}  p99 ${fmtMs(pct(lat, 99))}  ` +
      `${(runs / (total / 1000)).toFixed(0)} runs/s`);
  console.log(`  reference: node spawnSync('/bin/bash -l -c true'): p50 ${fmtMs(pct(ref, 50))}  ` +
      `p99 ${fmtMs(pct(ref, 99))}`);

  // --- file write + read ---
  const scratch = mkdtempSync(path.join(tmpdir(), 'warren-envd-bench-'));
  try {
    for (const size of sizes) {
      const label = size >= (1 << 20) ? `${size >> 20} MiB` : `${size} B`;
      const data = randomBytes(size);
      const src = path.join(scratch, 'src.bin');
      writeFileSync(src, data);
      const sdk = [];
      const copy = [];
      const curl = [];
      for (let r = 0; r < fileRounds; r++) {
        let s = now();
        await sbx.files.write(`/tmp/bench-${r}.bin`, data);
        const back = await sbx.files.read(`/tmp/bench-${r}.bin`, { format: 'bytes' });
        sdk.push(now() - s);
        if (back.length !== size) throw new Error(`read ${back.length} of ${size} bytes`);

        s = now();
        execFileSync('cp', [src, path.join(scratch, 'copy.bin')]);
        execFileSync('sh', ['-c', `cat ${path.join(scratch, 'copy.bin')} > /dev/null`]);
        copy.push(now() - s);

        s = now();
        execFileSync('curl', ['-sf', '-o', '/dev/null', '-H', 'content-type: application/octet-stream',
          '--data-binary', `@${src}`, `${envd.url}/files?path=/tmp/curl-${r}.bin`]);
        execFileSync('curl', ['-sf', '-o', '/dev/null', `${envd.url}/files?path=/tmp/curl-${r}.bin`]);
        curl.push(now() - s);
      }
      const mibps = (ms) => `${((2 * size) / (1 << 20) / (ms / 1000)).toFixed(0)} MiB/s`;
      console.log(`files.write+read ${label}: median ${fmtMs(median(sdk))} (${mibps(median(sdk))} moved)`);
      console.log(`  reference: cp+cat ${fmtMs(median(copy))} (${mibps(median(copy))}); ` +
          `curl POST+GET /files ${fmtMs(median(curl))} (${mibps(median(curl))})`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }

  // --- reads: gzip beside identity ---
  const readSize = quick ? 1 << 20 : 100 << 20;
  const readLabel = `${readSize >> 20} MiB`;
  // Text that compresses about as well as logs or source do (decimal numbers, one per line).
  const made = await sbx.commands.run(`seq 1 100000000 | head -c ${readSize} > /tmp/read.txt && wc -c < /tmp/read.txt`);
  if (Number(made.stdout.trim()) !== readSize) throw new Error(`made ${made.stdout} bytes`);
  const url = `${envd.url}/files?path=/tmp/read.txt`;
  const rounds = { sdkGzip: [], fetchIdentity: [], curlIdentity: [], curlGzip: [] };
  let wire = 0;
  for (let r = 0; r < fileRounds; r++) {
    let s = now();
    const back = await sbx.files.read('/tmp/read.txt', { format: 'bytes', gzip: true });
    rounds.sdkGzip.push(now() - s);
    if (back.byteLength !== readSize) throw new Error(`gzip read ${back.byteLength} of ${readSize}`);

    s = now();
    const res = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
    const plain = await res.arrayBuffer();
    rounds.fetchIdentity.push(now() - s);
    if (plain.byteLength !== readSize || res.headers.get('content-encoding')) {
      throw new Error('identity read went wrong');
    }

    s = now();
    execFileSync('curl', ['-sf', '-o', '/dev/null', '-H', 'accept-encoding: identity', url]);
    rounds.curlIdentity.push(now() - s);

    s = now();
    wire = Number(execFileSync('curl', ['-sf', '--compressed', '-o', '/dev/null', '-w', '%{size_download}', url]));
    rounds.curlGzip.push(now() - s);
  }
  const readMibps = (ms) => `${(readSize / (1 << 20) / (ms / 1000)).toFixed(0)} MiB/s`;
  const line = (ms) => `${fmtMs(ms)} (${readMibps(ms)})`;
  console.log(`files.read ${readLabel} text, gzip: median ${line(median(rounds.sdkGzip))}; ` +
      `${(wire / (1 << 20)).toFixed(1)} MiB on the wire (${(readSize / wire).toFixed(1)}x smaller)`);
  console.log(`  reference: fetch identity ${line(median(rounds.fetchIdentity))}; ` +
      `curl identity ${line(median(rounds.curlIdentity))}; ` +
      `curl --compressed ${line(median(rounds.curlGzip))}`);

  // --- reads of incompressible bytes: the gzip probe says identity ---
  const noise = await sbx.commands.run(`head -c ${readSize} /dev/urandom > /tmp/noise.bin && wc -c < /tmp/noise.bin`);
  if (Number(noise.stdout.trim()) !== readSize) throw new Error(`made ${noise.stdout} bytes`);
  const noiseUrl = `${envd.url}/files?path=/tmp/noise.bin`;
  const probe = await fetch(noiseUrl, { method: 'HEAD' });  // fetch's own "gzip, deflate"
  if (probe.headers.get('content-encoding') !== null) throw new Error('random bytes were gzipped');
  const noiseRounds = { sdk: [], fetchIdentity: [], fetchForcedGzip: [] };
  for (let r = 0; r < fileRounds; r++) {
    let s = now();
    const back = await sbx.files.read('/tmp/noise.bin', { format: 'bytes' });
    noiseRounds.sdk.push(now() - s);
    if (back.byteLength !== readSize) throw new Error(`read ${back.byteLength} of ${readSize}`);

    for (const [key, ae, coding] of [['fetchIdentity', 'identity', null],
      ['fetchForcedGzip', 'gzip, identity;q=0', 'gzip']]) {
      s = now();
      const res = await fetch(noiseUrl, { headers: { 'accept-encoding': ae } });
      const body = await res.arrayBuffer();
      noiseRounds[key].push(now() - s);
      if (body.byteLength !== readSize || res.headers.get('content-encoding') !== coding) {
        throw new Error(`${key} read went wrong`);
      }
    }
  }
  console.log(`files.read ${readLabel} random bytes (fetch offers gzip, envd sends identity): ` +
      `median ${line(median(noiseRounds.sdk))}`);
  console.log(`  reference: fetch identity ${line(median(noiseRounds.fetchIdentity))}; ` +
      `fetch forcing gzip (identity;q=0) ${line(median(noiseRounds.fetchForcedGzip))}`);
} finally {
  await envd.stop();
}
