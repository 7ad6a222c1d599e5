// Tracing (issue 18): an E2B create carrying a W3C traceparent yields, at an OTLP/HTTP receiver
// this test runs, the span tree the server promises: the request's span a child of the caller's,
// the create's steps siblings under it, the node agent's work parented on it through the
// Sandbox's trace-context annotation. Without --tracing-endpoint nothing is sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { startWarren, sleep } from './harness.mjs';

// A tiny OTLP/HTTP JSON receiver on loopback: every span POSTed to /v1/traces.
async function startReceiver() {
  const spans = [];
  const posts = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      posts.push({ path: req.url, contentType: req.headers['content-type'] });
      try {
        for (const rs of JSON.parse(body).resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a) => a.key === 'service.name');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) spans.push({ ...s, service: service?.value?.stringValue });
          }
        }
      } catch { /* counted as a post; the assertions will say what is missing */ }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { spans, posts, endpoint: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((r) => server.close(r)) };
}

const hex = (n) => randomBytes(n).toString('hex');
const caller = () => ({ traceId: hex(16), spanId: hex(8) });
const traceparent = (c) => `00-${c.traceId}-${c.spanId}-01`;
const nanos = (s) => BigInt(s);

// Waits until the trace holds every span named in `names` (the exporter flushes each second).
async function spansOf(receiver, traceId, names, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = receiver.spans.filter((s) => s.traceId === traceId);
    if (names.every((n) => got.some((s) => s.name === n))) return got;
    if (Date.now() > deadline) {
      assert.fail(`trace ${traceId} lacks ${names.filter((n) => !got.some((s) => s.name === n))}; ` +
        `has ${JSON.stringify(got.map((s) => s.name))}`);
    }
    await sleep(100);
  }
}

function one(spans, name) {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `${name}: ${found.length} spans`);
  return found[0];
}

const attribute = (s, key) => s.attributes?.find((a) => a.key === key)?.value;

// The infra.lock that took the member. A claim makes one such span per attempt
// (pool_claimer.cc): one that found the pool's index empty (its member not indexed yet, or the
// pool still refilling) says `warren.stock: false`, one that lost a write race is an error;
// exactly one attempt wins and names its sandbox.
function wonLock(spans, parentSpanId) {
  const locks = spans.filter((s) => s.name === 'infra.lock' && s.parentSpanId === parentSpanId);
  const won = locks.filter((s) => attribute(s, 'warren.sandbox'));
  assert.equal(won.length, 1, `infra.lock attempts that won: ${won.length} of ${locks.length}`);
  for (const s of locks.filter((x) => x !== won[0])) {
    assert.ok(attribute(s, 'warren.stock')?.boolValue === false || s.status?.code === 2,
      `an infra.lock that did not win says neither "no stock" nor an error: ${JSON.stringify(s)}`);
    assert.ok(nanos(s.endTimeUnixNano) <= nanos(won[0].startTimeUnixNano), 'attempts in turn');
  }
  return won[0];
}

// The tree as text, for a person reading the run (WARREN_PRINT_TRACE=1).
function printTree(spans, rootParent) {
  const t0 = nanos(spans.reduce((a, s) => (nanos(s.startTimeUnixNano) < nanos(a.startTimeUnixNano)
    ? s : a)).startTimeUnixNano);
  const walk = (parent, depth) => {
    for (const s of spans.filter((x) => (x.parentSpanId ?? '') === parent)
      .sort((a, b) => (nanos(a.startTimeUnixNano) < nanos(b.startTimeUnixNano) ? -1 : 1))) {
      const at = Number(nanos(s.startTimeUnixNano) - t0) / 1e6;
      const ms = Number(nanos(s.endTimeUnixNano) - nanos(s.startTimeUnixNano)) / 1e6;
      console.log(`${'  '.repeat(depth)}${s.name}  +${at.toFixed(2)} ms, ${ms.toFixed(2)} ms`);
      walk(s.spanId, depth + 1);
    }
  };
  walk(rootParent, 0);
}

function assertSane(s) {
  assert.match(s.spanId, /^[0-9a-f]{16}$/);
  assert.match(s.startTimeUnixNano, /^\d+$/);
  const ms = Number(nanos(s.endTimeUnixNano) - nanos(s.startTimeUnixNano)) / 1e6;
  assert.ok(ms >= 0 && ms < 60000, `${s.name} took ${ms} ms`);
}

let receiver;
let w;
before(async () => {
  receiver = await startReceiver();
  w = await startWarren({ args: ['--tracing-endpoint', receiver.endpoint] });
});
after(async () => {
  await w?.stop();
  await receiver?.close();
});

test('a cold create: the request under the caller, its steps and the node agent under it', async () => {
  const c = caller();
  const created = await w.api('POST', '/sandboxes', {
    headers: { traceparent: traceparent(c) }, body: { templateID: 'base', timeout: 120 } });
  assert.equal(created.status, 201, created.text);
  // The trace id is the request id (OpenKruise's rule).
  assert.equal(created.headers.get('x-request-id'), c.traceId);
  const id = created.json.sandboxID;

  const steps = ['infra.createSandbox', 'infra.waitReady', 'proxy.syncRoute'];
  const spans = await spansOf(receiver, c.traceId,
    ['HTTP POST /sandboxes', ...steps, 'node.create', 'node.start', 'infra.initRuntime']);
  for (const s of spans) {
    assert.equal(s.traceId, c.traceId);
    assert.equal(s.service, 'warren');
    assertSane(s);
  }
  const request = one(spans, 'HTTP POST /sandboxes');
  if (process.env.WARREN_PRINT_TRACE) printTree(spans, c.spanId);
  assert.equal(request.parentSpanId, c.spanId, 'the request is the caller\'s child');
  assert.equal(request.kind, 2);  // SERVER
  const attrs = Object.fromEntries(request.attributes.map((a) => [a.key, a.value]));
  assert.equal(attrs['http.request.method'].stringValue, 'POST');
  assert.equal(attrs['http.response.status_code'].intValue, '201');
  assert.equal(attrs['warren.sandbox_id'].stringValue, id);

  // The create's steps: siblings under the request, one after another, inside it.
  let previousEnd = nanos(request.startTimeUnixNano);
  for (const name of steps) {
    const s = one(spans, name);
    assert.equal(s.parentSpanId, request.spanId, `${name} is a child of the request`);
    assert.ok(nanos(s.startTimeUnixNano) >= previousEnd, `${name} starts after the step before`);
    previousEnd = nanos(s.endTimeUnixNano);
  }
  assert.ok(previousEnd <= nanos(request.endTimeUnixNano));

  // The node agent's passes that did something, parented on the request through the object's
  // annotation: node.create is a sibling of the steps; node.start is one too when a later pass
  // started the sandbox, or node.create's child when the same pass did. Its /init call (which
  // passes traceparent on to envd) is node.start's child.
  const nodeCreate = one(spans, 'node.create');
  const nodeStart = one(spans, 'node.start');
  assert.equal(nodeCreate.parentSpanId, request.spanId, 'node.create is a sibling of the steps');
  assert.ok([request.spanId, nodeCreate.spanId].includes(nodeStart.parentSpanId));
  for (const s of [nodeCreate, nodeStart]) {
    assert.ok(nanos(s.startTimeUnixNano) >= nanos(request.startTimeUnixNano));
  }
  assert.equal(one(spans, 'infra.initRuntime').parentSpanId, nodeStart.spanId);
  // Passes that did nothing are not exported (the no-op filter).
  assert.ok(!receiver.spans.some((s) => s.name === 'node.reconcile'));

  const object = await w.sandboxObject(id);
  assert.equal(object.metadata.annotations['agents.kruise.io/trace-context'].split('-')[1],
    c.traceId);
  assert.ok(receiver.posts.every((p) => p.path === '/v1/traces' &&
    p.contentType === 'application/json'));

  // A later call that changes the sandbox carries its own context to the node: the pause's
  // freeze is a child of the pause request, in the pause's trace.
  const p = caller();
  const paused = await w.api('POST', `/sandboxes/${id}/pause`,
    { headers: { traceparent: traceparent(p) } });
  assert.equal(paused.status, 204, paused.text);
  const pauseSpans = await spansOf(receiver, p.traceId,
    ['HTTP POST /sandboxes/{id}/pause', 'node.pause']);
  const pauseRequest = one(pauseSpans, 'HTTP POST /sandboxes/{id}/pause');
  assert.equal(pauseRequest.parentSpanId, p.spanId);
  assert.equal(one(pauseSpans, 'node.pause').parentSpanId, pauseRequest.spanId);

  // A kill's teardown on the node is traced under the kill, not under the create or the pause.
  const k = caller();
  assert.equal((await w.api('DELETE', `/sandboxes/${id}`,
    { headers: { traceparent: traceparent(k) } })).status, 204);
  const killSpans = await spansOf(receiver, k.traceId,
    ['HTTP DELETE /sandboxes/{id}', 'node.teardown']);
  const killRequest = one(killSpans, 'HTTP DELETE /sandboxes/{id}');
  assert.equal(killRequest.parentSpanId, k.spanId);
  assert.equal(one(killSpans, 'node.teardown').parentSpanId, killRequest.spanId);
  assert.ok(!receiver.spans.some((s) => s.name === 'node.teardown' &&
    [c.traceId, p.traceId].includes(s.traceId)), 'no teardown in the create\'s or pause\'s trace');
});

test('a claim from a pool: lock, init and route sync as siblings under the request', async () => {
  const sets = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets`;
  const applied = await w.apiFetch(sets, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxSet',
      metadata: { name: 'traced-pool' }, spec: { replicas: 1, templateRef: { name: 'base' } } }),
  });
  assert.equal(applied.status, 201, await applied.text());
  await w.waitPool('traced-pool', 1);

  // Both claims below wait for stock rather than create one: the claimer's index follows the
  // store a moment behind what waitPool reads, and a cold create takes no lock.
  const c = caller();
  const created = await w.api('POST', '/v2/sandboxes', {
    headers: { traceparent: traceparent(c) },
    body: { templateID: 'traced-pool', timeout: 120, secure: true,
      metadata: { 'e2b.agents.kruise.io/create-on-no-stock': 'false' } } });
  assert.equal(created.status, 201, created.text);
  const steps = ['infra.lock', 'infra.initRuntime', 'proxy.syncRoute'];
  const spans = await spansOf(receiver, c.traceId, ['HTTP POST /v2/sandboxes', ...steps]);
  const request = one(spans, 'HTTP POST /v2/sandboxes');
  if (process.env.WARREN_PRINT_TRACE) printTree(spans, c.spanId);
  assert.equal(request.parentSpanId, c.spanId);
  let previousEnd = nanos(request.startTimeUnixNano);
  for (const name of steps) {
    const s = name === 'infra.lock' ? wonLock(spans, request.spanId) : one(spans, name);
    assertSane(s);
    assert.equal(s.parentSpanId, request.spanId, `${name} is a child of the request`);
    assert.ok(nanos(s.startTimeUnixNano) >= previousEnd, `${name} after the step before`);
    previousEnd = nanos(s.endTimeUnixNano);
  }
  const attrs = Object.fromEntries(request.attributes.map((a) => [a.key, a.value]));
  assert.equal(attrs['warren.lock_type'].stringValue, 'update');
  // The claim's own write carries the context to the member (a recycle removes it).
  const member = await w.sandboxObject(created.json.sandboxID);
  assert.equal(member.metadata.annotations['agents.kruise.io/trace-context'].split('-')[1],
    c.traceId);
  assert.equal((await w.api('DELETE', `/sandboxes/${created.json.sandboxID}`)).status, 204);

  // A SandboxClaim created with a traceparent: the controller's claims are traced under that
  // request, each claim's steps under its own span.
  await w.waitPool('traced-pool', 1);
  const sc = caller();
  const claims = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxclaims`;
  const claimed = await w.apiFetch(claims, {
    method: 'POST', headers: { 'content-type': 'application/json', traceparent: traceparent(sc) },
    body: JSON.stringify({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'SandboxClaim',
      metadata: { name: 'traced-claim' },
      spec: { templateName: 'traced-pool', replicas: 1, createOnNoStock: false } }),
  });
  assert.equal(claimed.status, 201, await claimed.text());
  const claimSpans = await spansOf(receiver, sc.traceId,
    ['controller.sandboxClaim', 'controller.claim', 'infra.lock']);
  if (process.env.WARREN_PRINT_TRACE) printTree(claimSpans, sc.spanId);
  const post = claimSpans.find((s) => s.parentSpanId === sc.spanId);
  assert.ok(post && post.name.startsWith('HTTP POST'), 'the create request is the caller\'s child');
  const controllerSpan = one(claimSpans, 'controller.sandboxClaim');
  assert.equal(controllerSpan.parentSpanId, post.spanId);
  const claimSpan = one(claimSpans, 'controller.claim');
  assert.equal(claimSpan.parentSpanId, controllerSpan.spanId);
  const claimLock = wonLock(claimSpans, claimSpan.spanId);
  const claimAttrs = Object.fromEntries(claimSpan.attributes.map((a) => [a.key, a.value]));
  const claimedId = claimAttrs['warren.sandbox_id'].stringValue;
  assert.ok(claimedId);
  assert.equal(attribute(claimLock, 'warren.sandbox').stringValue, claimedId);
  await w.apiFetch(`${claims}/traced-claim`, { method: 'DELETE' });
  // The claim owns its sandbox: the claim's deletion may have removed it already (404).
  const sandboxes = `${w.apiUrl}/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes`;
  const removed = await w.apiFetch(`${sandboxes}/${claimedId}`, { method: 'DELETE' });
  assert.ok([200, 202, 404].includes(removed.status), `${removed.status} ${await removed.text()}`);
});

test('envd joins the trace under the gateway hop; the node\'s /init is a write, not a call',
  async () => {
    const c = caller();
    const created = await w.api('POST', '/sandboxes', {
      headers: { traceparent: traceparent(c) },
      body: { templateID: 'base', timeout: 120, secure: true } });
    assert.equal(created.status, 201, created.text);
    const id = created.json.sandboxID;
    const made = await spansOf(receiver, c.traceId, ['node.start', 'infra.initRuntime'], 30000);
    if (process.env.WARREN_PRINT_TRACE) printTree(made, c.spanId);
    // The node agent gives envd the create's /init through the sandbox's init channel
    // (envd/README.md): a step of node.start, which no envd span answers (checked below, once
    // envd's spans of a later call have been forwarded).
    assert.equal(one(made, 'infra.initRuntime').parentSpanId, one(made, 'node.start').spanId);

    // A call through the gateway that carries a traceparent: the gateway's hop is the caller's
    // child, envd's work the hop's.
    const g = caller();
    const res = await fetch(`${w.sandboxUrl}/envs`, { headers: {
      'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983',
      'X-Access-Token': created.json.envdAccessToken, traceparent: traceparent(g) } });
    assert.equal(res.status, 200, await res.text());
    const relayed = await spansOf(receiver, g.traceId, ['gateway.relay', 'envd GET /envs'], 30000);
    const hop = one(relayed, 'gateway.relay');
    const envs = one(relayed, 'envd GET /envs');
    assert.equal(hop.service, 'warren');
    assert.equal(hop.parentSpanId, g.spanId);
    assert.equal(envs.service, 'warren-envd');
    assert.equal(envs.parentSpanId, hop.spanId);
    assert.ok(nanos(envs.startTimeUnixNano) >= nanos(hop.startTimeUnixNano));
    const hopAttrs = Object.fromEntries(hop.attributes.map((a) => [a.key, a.value]));
    assert.equal(hopAttrs['warren.sandbox_id'].stringValue, id);
    assert.equal(hopAttrs['warren.sandbox_port'].intValue, '49983');
    const envdAttrs = Object.fromEntries(envs.attributes.map((a) => [a.key, a.value]));
    assert.equal(envdAttrs['warren.sandbox_id'].stringValue, id);
    assert.ok(!receiver.spans.some((s) => s.traceId === c.traceId && s.service === 'warren-envd'),
      'envd answered a call of the create\'s trace: /init went as a request');

    // Without a traceparent the gateway starts no trace and envd records nothing.
    const before = receiver.spans.length;
    const untraced = await fetch(`${w.sandboxUrl}/envs`, { headers: {
      'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983',
      'X-Access-Token': created.json.envdAccessToken } });
    assert.equal(untraced.status, 200);
    await sleep(6000);  // past a forwarding turn of the node agent
    assert.ok(!receiver.spans.slice(before).some((s) =>
      s.name === 'gateway.relay' || s.name === 'envd GET /envs'));
    assert.equal((await w.api('DELETE', `/sandboxes/${id}`)).status, 204);
  });

test('a request without traceparent starts a trace whose id is its request id', async () => {
  const listed = await w.api('GET', '/v2/sandboxes');
  assert.equal(listed.status, 200);
  const traceId = listed.headers.get('x-request-id');
  const spans = await spansOf(receiver, traceId, ['HTTP GET /v2/sandboxes']);
  assert.equal(one(spans, 'HTTP GET /v2/sandboxes').parentSpanId ?? '', '');
});

test('without --tracing-endpoint nothing is sent and nothing is written', async () => {
  const quiet = await startWarren();
  try {
    const c = caller();
    const created = await quiet.api('POST', '/sandboxes', {
      headers: { traceparent: traceparent(c) }, body: { templateID: 'base', timeout: 60 } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get('x-request-id'), c.traceId);
    const object = await quiet.sandboxObject(created.json.sandboxID);
    assert.equal(object.metadata.annotations['agents.kruise.io/trace-context'], undefined);
    await sleep(1500);  // longer than the exporter's flush interval
    assert.ok(!receiver.spans.some((s) => s.traceId === c.traceId));
    const metrics = await (await quiet.apiFetch(`${quiet.apiUrl}/metrics`)).text();
    assert.ok(!metrics.includes('warren_trace_spans'), 'no exporter, no exporter metrics');
  } finally {
    await quiet.stop();
  }
});
