// Warren's dashboard: pools, sandboxes, events, a sandbox's log and audit journal, kept current
// by the resource API's watches. No framework and nothing from another origin (the server's
// Content-Security-Policy allows only 'self'). Every data call sends the key the user typed, as
// `Authorization: Bearer` (the resource API) or `X-API-Key` (the E2B routes); the key lives in
// this tab's sessionStorage and never in a URL. What the key may see is the server's business:
// a team key's lists and watches come back holding its own namespace only.

const AGENTS = '/apis/agents.kruise.io/v1alpha1';
const EVENTS = '/apis/warren.dev/v1alpha1/events';
const SANDBOX_ID = 'agents.kruise.io/sandbox-id';
const POOL = 'agents.kruise.io/sandbox-pool';
const CLAIMED = 'agents.kruise.io/sandbox-claimed';
const KEY_STORAGE = 'warren.key';
const MAX_EVENTS = 200;
const SPARK_POINTS = 30;
const METRICS_EVERY_MS = 3000;
const CLAIM_METRICS_EVERY_MS = 5000;
const DETAIL_EVERY_MS = 3000;
const LOG_TAIL_LINES = 100;

const $ = (selector, root = document) => root.querySelector(selector);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const keyOf = (o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

// Everything the page shows, rebuilt from lists and watches after each (re)connect.
const state = {
  key: '',
  who: null,                // GET /whoami: {team, admin, name}
  pools: new Map(),         // "ns/name" → SandboxSet
  sandboxes: new Map(),     // "ns/name" → Sandbox
  events: new Map(),        // "ns/name" → Event
  usage: new Map(),         // E2B sandbox id → [{cpu, mem, memTotal}] (oldest first)
  claimLatency: new Map(),  // namespace → {mean seconds, count}
  selected: null,           // "ns/name" of the sandbox in the detail pane
  session: null,            // AbortController of the signed-in session
};

// ---- HTTP ----------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// One call with the session's key. `e2b` sends it the way the E2B routes want it.
async function call(path, { method = 'GET', body, contentType, e2b = false, signal } = {}) {
  const headers = e2b ? { 'X-API-Key': state.key } : { Authorization: `Bearer ${state.key}` };
  if (body !== undefined) headers['Content-Type'] = contentType ?? 'application/json';
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    signal: signal ?? state.session?.signal, cache: 'no-store', credentials: 'omit',
  });
  return res;
}

async function errorOf(res) {
  const text = await res.text().catch(() => '');
  try { return new ApiError(res.status, JSON.parse(text).message ?? text); } catch {
    return new ApiError(res.status, text || res.statusText);
  }
}

async function callJson(path, options) {
  const res = await call(path, options);
  if (!res.ok) throw await errorOf(res);
  return res.status === 204 ? null : res.json();
}

// ---- Watches -------------------------------------------------------------------------------

// Lists `path`, hands the items to `reset`, then follows `?watch=true` from the list's
// resourceVersion: newline-delimited {"type","object"} lines, each given to `apply`. When the
// stream ends or fails (server restart, 410 Gone), it lists again. Runs until the session ends.
async function follow(path, { reset, apply }) {
  const signal = state.session.signal;
  while (!signal.aborted) {
    try {
      const list = await callJson(path, { signal });
      reset(list.items ?? []);
      scheduleRender();
      const rv = encodeURIComponent(list.metadata?.resourceVersion ?? '0');
      const res = await call(`${path}?watch=true&resourceVersion=${rv}`, { signal });
      if (!res.ok) throw await errorOf(res);
      markLive(path, true);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffered = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let newline;
        let gone = false;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (!line) continue;
          const event = JSON.parse(line);
          if (event.type === 'ERROR') { gone = true; break; }
          if (event.type === 'BOOKMARK') continue;
          apply(event.type, event.object);
          scheduleRender();
        }
        if (gone) { reader.cancel().catch(() => {}); break; }
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status === 401) {
        signOut(`The key was refused: ${e.message}`);
        return;
      }
      if (e instanceof ApiError && e.status === 403) {
        // Not this key's to see: shown empty, and not asked again.
        reset([]);
        markLive(path, true);
        scheduleRender();
        return;
      }
    }
    markLive(path, false);
    await sleep(1000);
  }
}

function intoMap(map) {
  return {
    reset(items) { map.clear(); for (const o of items) map.set(keyOf(o), o); },
    apply(type, o) { if (type === 'DELETED') map.delete(keyOf(o)); else map.set(keyOf(o), o); },
  };
}

const liveWatches = new Set();
function markLive(path, live) {
  if (live) liveWatches.add(path); else liveWatches.delete(path);
  const el = $('[data-testid="live"]');
  const all = liveWatches.size === 3;
  el.dataset.state = all ? 'live' : 'reconnecting';
  el.textContent = all ? 'live' : 'reconnecting…';
}

// ---- Polls: usage, claim latency, the selected sandbox ---------------------------------------

// A sandbox the E2B routes serve: it has an E2B id and is not an unclaimed pool member.
function e2bIdOf(sbx) {
  const id = sbx.metadata.labels?.[SANDBOX_ID] ?? sbx.metadata.annotations?.[SANDBOX_ID];
  if (!id) return null;
  if (sbx.metadata.labels?.[POOL] && sbx.metadata.labels?.[CLAIMED] !== 'true') return null;
  return id;
}

async function pollUsage() {
  const signal = state.session.signal;
  while (!signal.aborted) {
    const ids = [...state.sandboxes.values()]
      .filter((s) => s.status?.phase === 'Running').map(e2bIdOf).filter(Boolean);
    for (const id of ids) {
      try {
        const start = Math.floor(Date.now() / 1000) - 120;
        const samples = await callJson(
          `/sandboxes/${encodeURIComponent(id)}/metrics?start=${start}`, { e2b: true });
        if (!Array.isArray(samples) || samples.length === 0) continue;
        state.usage.set(id, samples.slice(-SPARK_POINTS).map((s) => ({
          cpu: s.cpuUsedPct ?? 0, mem: s.memUsed ?? 0, memTotal: s.memTotal ?? 0,
        })));
      } catch (e) {
        if (signal.aborted) return;
      }
    }
    for (const id of state.usage.keys()) if (!ids.includes(id)) state.usage.delete(id);
    scheduleRender();
    await sleep(METRICS_EVERY_MS);
  }
}

// Claim latency exists per namespace only (sandbox_claim_duration_seconds{namespace}), and only
// in /metrics, which wants an admin key; a team key's rows say so instead.
function parseClaimLatency(text) {
  const sums = new Map();
  const counts = new Map();
  const re = /^sandbox_claim_duration_seconds_(sum|count)\{[^}]*namespace="([^"]*)"[^}]*\} (\S+)/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const into = m[1] === 'sum' ? sums : counts;
    into.set(m[2], (into.get(m[2]) ?? 0) + Number(m[3]));
  }
  const out = new Map();
  for (const [ns, count] of counts) {
    if (count > 0) out.set(ns, { mean: (sums.get(ns) ?? 0) / count, count });
  }
  return out;
}

async function pollClaimLatency() {
  const signal = state.session.signal;
  while (!signal.aborted && state.who?.admin) {
    try {
      const res = await call('/metrics');
      if (res.ok) state.claimLatency = parseClaimLatency(await res.text());
      scheduleRender();
    } catch (e) {
      if (signal.aborted) return;
    }
    await sleep(CLAIM_METRICS_EVERY_MS);
  }
}

async function pollDetail() {
  const signal = state.session.signal;
  while (!signal.aborted) {
    const key = state.selected;
    if (key && state.sandboxes.has(key)) await refreshDetail(key).catch(() => {});
    await sleep(DETAIL_EVERY_MS);
  }
}

async function refreshDetail(key) {
  const sbx = state.sandboxes.get(key);
  const base = `${AGENTS}/namespaces/${encodeURIComponent(sbx.metadata.namespace)}` +
    `/sandboxes/${encodeURIComponent(sbx.metadata.name)}`;
  const log = await call(`${base}/log?tailLines=${LOG_TAIL_LINES}`);
  if (state.selected !== key) return;
  $('[data-testid="log-tail"]').textContent =
    log.ok ? (await log.text()) || '(empty)' : `(no log: ${(await errorOf(log)).message})`;
  // A 404 (no journal for it, or a server without the audit route) is asked again only when
  // the sandbox is selected again, not on every refresh.
  if (auditMissing === key) return;
  const audit = await call(`${base}/audit`);
  if (state.selected !== key) return;
  if (audit.status === 404) auditMissing = key;
  renderAudit(audit.status === 200 ? (await audit.json()).items ?? [] : null,
    audit.status === 404 ? 'no audit journal' : audit.ok ? '' :
      `audit journal unavailable: ${(await errorOf(audit)).message}`);
}
let auditMissing = null;  // "ns/name" of the selected sandbox whose audit route answered 404

// ---- Actions -------------------------------------------------------------------------------

async function act(what, fn) {
  const el = $('[data-testid="action-error"]');
  el.textContent = '';
  try {
    await fn();
  } catch (e) {
    el.textContent = `${what}: ${e.message}`;
  }
}

function scalePool(set, delta) {
  const replicas = Math.max(0, (set.spec?.replicas ?? 0) + delta);
  const path = `${AGENTS}/namespaces/${encodeURIComponent(set.metadata.namespace)}` +
    `/sandboxsets/${encodeURIComponent(set.metadata.name)}/scale`;
  return act(`scale ${set.metadata.name}`, () => callJson(path, {
    method: 'PATCH', body: { spec: { replicas } }, contentType: 'application/merge-patch+json',
  }));
}

function killSandbox(sbx) {
  if (!window.confirm(`Kill sandbox ${sbx.metadata.name}? Its processes and files are lost.`)) {
    return Promise.resolve();
  }
  const path = `${AGENTS}/namespaces/${encodeURIComponent(sbx.metadata.namespace)}` +
    `/sandboxes/${encodeURIComponent(sbx.metadata.name)}`;
  return act(`kill ${sbx.metadata.name}`, () => callJson(path, { method: 'DELETE' }));
}

function pauseSandbox(id) {
  return act(`pause ${id}`, () => callJson(`/sandboxes/${encodeURIComponent(id)}/pause`,
    { method: 'POST', e2b: true }));
}

// E2B's resume is a connect: it wakes a paused sandbox and leaves a running one as it is.
function resumeSandbox(id) {
  return act(`resume ${id}`, () => callJson(`/sandboxes/${encodeURIComponent(id)}/connect`,
    { method: 'POST', e2b: true, body: {} }));
}

// ---- Rendering -----------------------------------------------------------------------------

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'testid') node.dataset.testid = v;
    else if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

// Keeps one row per key, in `keys` order, updating rows in place so a button being clicked is
// never replaced under the pointer.
function syncRows(tbody, items, create, update) {
  const existing = new Map([...tbody.children].map((tr) => [tr.dataset.key, tr]));
  let previous = null;
  for (const [key, item] of items) {
    let tr = existing.get(key);
    if (!tr) { tr = create(item); tr.dataset.key = key; }
    existing.delete(key);
    update(tr, item);
    const want = previous ? previous.nextSibling : tbody.firstChild;
    if (want !== tr) tbody.insertBefore(tr, want);
    previous = tr;
  }
  for (const tr of existing.values()) tr.remove();
}

const byKey = (map) => [...map.entries()].sort(([a], [b]) => a.localeCompare(b));

function formatSeconds(s) {
  return s < 1 ? `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms` : `${s.toFixed(2)} s`;
}

function formatBytes(n) {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(1)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${Math.round(n / 1024)} KiB`;
}

function renderPools() {
  const tbody = $('[data-testid="pools"] tbody');
  syncRows(tbody, byKey(state.pools), (set) => {
    const tr = el('tr', { testid: 'pool-row' });
    tr.append(
      el('td', { class: 'ns' }), el('td', { class: 'name mono' }),
      el('td', {}, el('meter', { min: 0 }),
        el('span', { class: 'fill-text', testid: 'pool-fill' })),
      el('td', { testid: 'pool-claim-latency' }),
      el('td', {}, el('div', { class: 'scale' },
        el('button', { type: 'button', testid: 'pool-scale-down', title: 'One fewer',
          textContent: '−', onclick: () => scalePool(state.pools.get(tr.dataset.key), -1) }),
        el('output', { testid: 'pool-replicas' }),
        el('button', { type: 'button', testid: 'pool-scale-up', title: 'One more',
          textContent: '+', onclick: () => scalePool(state.pools.get(tr.dataset.key), +1) }))));
    return tr;
  }, (tr, set) => {
    const desired = set.spec?.replicas ?? 0;
    const available = set.status?.availableReplicas ?? 0;
    tr.dataset.name = set.metadata.name;
    tr.dataset.namespace = set.metadata.namespace;
    tr.dataset.available = String(available);
    tr.dataset.desired = String(desired);
    tr.cells[0].textContent = set.metadata.namespace;
    tr.cells[1].textContent = set.metadata.name;
    const meter = $('meter', tr.cells[2]);
    meter.max = Math.max(desired, available, 1);
    meter.value = available;
    meter.low = Math.max(desired, 1) * 0.5;
    meter.optimum = meter.max;
    $('.fill-text', tr).textContent = `${available} / ${desired}` +
      ((set.status?.replicas ?? 0) !== available ? ` (${set.status?.replicas ?? 0} members)` : '');
    const latency = state.claimLatency.get(set.metadata.namespace);
    const cell = tr.cells[3];
    if (!state.who?.admin) {
      cell.textContent = '—';
      cell.title = 'Claim latency comes from /metrics, which needs an admin key';
    } else if (latency) {
      cell.textContent = `${formatSeconds(latency.mean)} avg (${latency.count})`;
      cell.title = `Mean over ${latency.count} claims in namespace ${set.metadata.namespace}`;
    } else {
      cell.textContent = 'no claims yet';
      cell.title = '';
    }
    $('output', tr).textContent = String(desired);
  });
  $('[data-testid="pools-empty"]').hidden = state.pools.size > 0;
}

function sparkline(values, max, label) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('viewBox', '0 0 90 22');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.dataset.points = String(values.length);
  if (values.length > 0) {
    const top = Math.max(max, 1e-9);
    const step = values.length > 1 ? 88 / (values.length - 1) : 0;
    const points = values.map((v, i) =>
      `${(1 + i * step).toFixed(1)},${(21 - Math.min(v / top, 1) * 20).toFixed(1)}`);
    if (points.length === 1) points.push(`89,${points[0].split(',')[1]}`);
    const line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', points.join(' '));
    svg.append(line);
  }
  return svg;
}

function sandboxState(sbx) {
  if (sbx.metadata.deletionTimestamp) return 'Terminating';
  return sbx.status?.phase || 'Pending';
}

function renderSandboxes() {
  const tbody = $('[data-testid="sandboxes"] tbody');
  syncRows(tbody, byKey(state.sandboxes), () => {
    const tr = el('tr', { testid: 'sandbox-row' });
    const keyed = (fn) => (e) => {
      e.stopPropagation();
      const sbx = state.sandboxes.get(tr.dataset.key);
      if (sbx) fn(sbx);
    };
    tr.append(
      el('td'), el('td', { class: 'mono' }), el('td', { class: 'mono', testid: 'sandbox-id' }),
      el('td', { testid: 'sandbox-state' }), el('td', { testid: 'sandbox-pool' }),
      el('td', { testid: 'sparkline-cpu' }), el('td', { testid: 'sparkline-mem' }),
      el('td', {},
        el('button', { type: 'button', testid: 'sandbox-pause', textContent: 'Pause',
          onclick: keyed((s) => pauseSandbox(e2bIdOf(s))) }), ' ',
        el('button', { type: 'button', testid: 'sandbox-resume', textContent: 'Resume',
          onclick: keyed((s) => resumeSandbox(e2bIdOf(s))) }), ' ',
        el('button', { type: 'button', class: 'danger', testid: 'sandbox-kill',
          textContent: 'Kill', onclick: keyed(killSandbox) })));
    tr.addEventListener('click', () => select(tr.dataset.key));
    return tr;
  }, (tr, sbx) => {
    const id = e2bIdOf(sbx);
    const phase = sandboxState(sbx);
    const pool = sbx.metadata.labels?.[POOL] ?? '';
    const member = pool && sbx.metadata.labels?.[CLAIMED] !== 'true';
    tr.dataset.name = sbx.metadata.name;
    tr.dataset.namespace = sbx.metadata.namespace;
    tr.dataset.id = id ?? '';
    tr.classList.toggle('selected', state.selected === tr.dataset.key);
    tr.cells[0].textContent = sbx.metadata.namespace;
    tr.cells[1].textContent = sbx.metadata.name;
    tr.cells[2].textContent = id ?? '—';
    tr.cells[3].textContent = phase;
    tr.cells[3].className = `state-${phase}`;
    tr.cells[4].textContent = pool ? `${pool}${member ? ' (warm)' : ' (claimed)'}` : '—';
    const usage = id ? state.usage.get(id) ?? [] : [];
    const last = usage[usage.length - 1];
    const cpuPeak = Math.max(100, ...usage.map((u) => u.cpu));
    tr.cells[5].replaceChildren(sparkline(usage.map((u) => u.cpu), cpuPeak, 'CPU %'),
      el('span', { class: 'spark-value', textContent: last ? `${last.cpu.toFixed(1)}%` : '' }));
    // Memory is drawn against its own peak so a change shows; the limit is in the tooltip.
    const memTop = Math.max(...usage.map((u) => u.mem)) * 1.1;
    tr.cells[6].replaceChildren(sparkline(usage.map((u) => u.mem), memTop, 'memory'),
      el('span', { class: 'spark-value', textContent: last ? formatBytes(last.mem) : '' }));
    tr.cells[6].title = last?.memTotal ? `limit ${formatBytes(last.memTotal)}` : '';
    const [pause, resume, kill] = tr.cells[7].querySelectorAll('button');
    pause.disabled = !id || phase !== 'Running';
    resume.disabled = !id || phase !== 'Paused';
    kill.disabled = phase === 'Terminating';
  });
  $('[data-testid="sandboxes-empty"]').hidden = state.sandboxes.size > 0;
}

function renderEvents() {
  const list = $('[data-testid="events"]');
  const when = (e) => e.lastTimestamp ?? e.firstTimestamp ?? e.metadata.creationTimestamp ?? '';
  const items = [...state.events.entries()]
    .sort(([, a], [, b]) => when(b).localeCompare(when(a))).slice(0, MAX_EVENTS);
  syncRows(list, items, () => el('li', { testid: 'event-row' },
    el('time'), el('span', { class: 'reason' }), ' ', el('span', { class: 'object mono' }), ' ',
    el('span', { class: 'message' })), (li, e) => {
    const o = e.involvedObject ?? {};
    li.className = e.type ?? '';
    const [time, reason, , object, , message] = li.childNodes;
    time.textContent = when(e).replace('T', ' ').replace('Z', '');
    reason.textContent = e.reason ?? '';
    object.textContent = `${o.kind ?? ''} ${o.namespace ? `${o.namespace}/` : ''}${o.name ?? ''}` +
      (e.count > 1 ? ` ×${e.count}` : '');
    message.textContent = e.message ?? '';
  });
}

function renderDetail() {
  const sbx = state.selected ? state.sandboxes.get(state.selected) : null;
  $('[data-testid="detail-name"]').textContent = sbx ? sbx.metadata.name : '—';
  $('[data-testid="detail-hint"]').hidden = !!sbx;
  const fields = $('[data-testid="detail-fields"]');
  fields.replaceChildren();
  if (!sbx) return;
  const rows = [
    ['Namespace', sbx.metadata.namespace], ['ID', e2bIdOf(sbx) ?? '—'],
    ['State', sandboxState(sbx)], ['Message', sbx.status?.message || '—'],
    ['Node', sbx.status?.nodeName || '—'], ['IP', sbx.status?.sandboxIp || '—'],
    ['Created', sbx.metadata.creationTimestamp ?? '—'],
    ['Pool', sbx.metadata.labels?.[POOL] ?? '—'],
  ];
  for (const [k, v] of rows) fields.append(el('dt', { textContent: k }), el('dd', { textContent: v }));
}

function renderAudit(items, message) {
  $('[data-testid="audit-state"]').textContent = message;
  $('[data-testid="audit"]').hidden = !items?.length;
  const tbody = $('[data-testid="audit"] tbody');
  tbody.replaceChildren();
  for (const item of items ?? []) {
    const { time, actor, team, action, ...rest } = item;
    tbody.append(el('tr', { testid: 'audit-row' },
      el('td', { class: 'mono', textContent: time ?? '' }), el('td', { textContent: actor ?? '' }),
      el('td', { textContent: team ?? '' }), el('td', { textContent: action ?? '' }),
      el('td', { class: 'mono', textContent: Object.keys(rest).length ? JSON.stringify(rest) : '' })));
  }
}

function render() {
  renderPools();
  renderSandboxes();
  renderEvents();
  renderDetail();
}

function select(key) {
  state.selected = key;
  auditMissing = null;
  $('[data-testid="log-tail"]').textContent = '';
  renderAudit([], '');
  scheduleRender();
  refreshDetail(key).catch(() => {});
}

// ---- Session -------------------------------------------------------------------------------

async function signIn(key) {
  state.key = key;
  const session = new AbortController();
  state.session = session;
  let who;
  try {
    who = await callJson('/whoami');
  } catch (e) {
    signOut(e instanceof ApiError && e.status === 401 ? 'That key was refused.' :
      `Could not reach the server: ${e.message}`);
    return;
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  state.who = who;
  $('[data-testid="whoami"]').textContent = who.admin ? `admin (${who.name})` : `team ${who.team}`;
  $('#key-form').hidden = true;
  $('#signout').hidden = false;
  $('#dashboard').hidden = false;
  follow(`${AGENTS}/sandboxsets`, intoMap(state.pools));
  follow(`${AGENTS}/sandboxes`, intoMap(state.sandboxes));
  follow(EVENTS, intoMap(state.events));
  pollUsage();
  pollClaimLatency();
  pollDetail();
}

function signOut(message = '') {
  state.session?.abort();
  state.session = null;
  state.key = '';
  state.who = null;
  for (const m of [state.pools, state.sandboxes, state.events, state.usage]) m.clear();
  state.selected = null;
  liveWatches.clear();
  sessionStorage.removeItem(KEY_STORAGE);
  $('[data-testid="whoami"]').textContent = '';
  const live = $('[data-testid="live"]');
  live.dataset.state = 'off';
  live.textContent = 'not connected';
  $('#dashboard').hidden = true;
  $('#signout').hidden = true;
  $('#key-form').hidden = false;
  $('[data-testid="key-error"]').textContent = message;
  render();
}

$('#key-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $('#key');
  const key = input.value.trim();
  input.value = '';
  $('[data-testid="key-error"]').textContent = '';
  if (key) signIn(key);
});
$('#signout').addEventListener('click', () => signOut());

const saved = sessionStorage.getItem(KEY_STORAGE);
if (saved) signIn(saved);
