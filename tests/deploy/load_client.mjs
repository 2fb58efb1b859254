// Load client of tests/deploy/haproxy_check.sh: drives hfstatic serve replicas behind HAProxy with
// the official OpenAI client, drains one replica mid-load (SIGTERM) and checks what came back.
//
//   node load_client.mjs --lb URL --replica r1=URL --replica r2=URL --stats URL
//        --haproxy-log FILE --drain r1 --drain-pid PID [--clients 6] [--requests 120]
//        [--drain-after 50] [--token-interval-ms 15] [--out FILE]
//
// Phase 1 (both replicas up) runs until --drain-after requests have been answered; then a long
// stream is sent straight to the replica to drain (it keeps that replica draining, hence alive
// and scrapable, until the load is over), the replica gets SIGTERM, and phase 2 runs the rest
// of the --requests through HAProxy. Afterwards: every answer well formed and successful, the
// X-Session-Id header pinned each conversation to one replica while both were up, the draining
// replica left the rotation by its /ready check, and the replicas' /metrics, HAProxy's log and
// the client's own count agree. Exits 1 when a check fails; --out gets the numbers as JSON.
//
//   node load_client.mjs --lb URL --rejoin SUMMARY.json
//
// asks once more in each session of that run's phase 1 and checks that it is answered by the
// replica it had then (run once the drained replica is back: consistent hashing returns its
// sessions).

import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';

const args = { replica: [], clients: '6', requests: '120', 'drain-after': '50', 'token-interval-ms': '15' };
for (let i = 2; i < process.argv.length; i += 2) {
  const key = process.argv[i].replace(/^--/, '');
  const value = process.argv[i + 1];
  if (value === undefined) throw new Error(`missing value for ${process.argv[i]}`);
  if (key === 'replica') args.replica.push(value);
  else args[key] = value;
}
for (const key of args.rejoin ? ['lb'] : ['lb', 'stats', 'haproxy-log', 'drain', 'drain-pid'])
  if (!args[key]) throw new Error(`--${key} is required`);
const replicas = Object.fromEntries(args.replica.map((r) => r.split(/=(.*)/s).slice(0, 2)));
const drainName = args.drain;
if (!args.rejoin && !replicas[drainName]) throw new Error(`--drain ${drainName} is not one of the --replica names`);
const stayName = Object.keys(replicas).find((n) => n !== drainName);
const CLIENTS = Number(args.clients);
const REQUESTS = Number(args.requests);
const DRAIN_AFTER = Number(args['drain-after']);
const TOKEN_MS = Number(args['token-interval-ms']); // the replicas' --token-interval
const COMPLETION_ROUTES = new Set(['/v1/completions', '/v1/chat/completions']);

const now = () => performance.now();
const t0 = now();
const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  return ok;
};

// ---- the client: the OpenAI SDK, no retries of its own, each SSE body also kept raw ----------

const rawStreams = new Map(); // X-Check-Seq -> Promise<string> of the raw event stream
async function recordingFetch(url, init) {
  const res = await fetch(url, init);
  const seq = new Headers(init?.headers).get('x-check-seq');
  if (seq && res.body && (res.headers.get('content-type') || '').startsWith('text/event-stream')) {
    const [forClient, forCheck] = res.body.tee();
    rawStreams.set(seq, new Response(forCheck).text());
    return new Response(forClient, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  return res;
}
const clientFor = (baseURL) =>
  new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000, fetch: recordingFetch });
const lb = clientFor(args.lb);

// ---- well-formed answers ------------------------------------------------------------------

function checkUsage(usage, maxTokens, errors) {
  if (!usage || typeof usage !== 'object') return errors.push('no usage');
  const { prompt_tokens: p, completion_tokens: c, total_tokens: t } = usage;
  if (![p, c, t].every(Number.isInteger)) errors.push(`usage not integers: ${JSON.stringify(usage)}`);
  if (!(p > 0)) errors.push('usage.prompt_tokens is not positive');
  if (t !== p + c) errors.push('usage.total_tokens != prompt + completion');
  if (c > maxTokens) errors.push(`completion_tokens ${c} > max_tokens ${maxTokens}`);
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (!Number.isInteger(cached) || cached < 0 || cached > p) errors.push(`bad cached_tokens ${cached}`);
}

function checkFinish(reason, usage, maxTokens, errors) {
  if (reason !== 'stop' && reason !== 'length') errors.push(`finish_reason ${JSON.stringify(reason)}`);
  if (reason === 'length' && usage && usage.completion_tokens !== maxTokens)
    errors.push(`finish_reason length after ${usage.completion_tokens} of ${maxTokens} tokens`);
}

function checkWhole(chat, r, maxTokens) {
  const errors = [];
  if (!new RegExp(chat ? '^chatcmpl-' : '^cmpl-').test(r.id ?? '')) errors.push(`id ${r.id}`);
  if (r.object !== (chat ? 'chat.completion' : 'text_completion')) errors.push(`object ${r.object}`);
  if (typeof r.model !== 'string' || !Number.isInteger(r.created)) errors.push('model or created missing');
  if (!Array.isArray(r.choices) || r.choices.length !== 1) return [...errors, 'choices is not one choice'];
  const c = r.choices[0];
  if (c.index !== 0) errors.push('choice index');
  if (chat && (c.message?.role !== 'assistant' || typeof c.message?.content !== 'string'))
    errors.push('message is not an assistant text');
  if (!chat && typeof c.text !== 'string') errors.push('text is not a string');
  checkUsage(r.usage, maxTokens, errors);
  checkFinish(c.finish_reason, r.usage, maxTokens, errors);
  return errors;
}

// A stream: chunks of one id, (chat) a role delta first, text pieces, exactly one finish_reason
// in the last choice chunk, then the usage chunk (choices []), then data: [DONE] ending the body.
function checkStream(chat, chunks, raw, maxTokens) {
  const errors = [];
  if (chunks.length < 2) return ['fewer than 2 chunks'];
  const id = chunks[0].id;
  if (!new RegExp(chat ? '^chatcmpl-' : '^cmpl-').test(id ?? '')) errors.push(`id ${id}`);
  if (chunks.some((c) => c.id !== id)) errors.push('chunks of different ids');
  const object = chat ? 'chat.completion.chunk' : 'text_completion';
  if (chunks.some((c) => c.object !== object)) errors.push(`a chunk not a ${object}`);
  const usageChunk = chunks[chunks.length - 1];
  const choiceChunks = chunks.slice(0, -1);
  if (!Array.isArray(usageChunk.choices) || usageChunk.choices.length !== 0) errors.push('last chunk is not usage');
  checkUsage(usageChunk.usage, maxTokens, errors);
  if (choiceChunks.some((c) => c.choices?.length !== 1 || c.choices[0].index !== 0)) errors.push('a chunk not one choice');
  if (chat && choiceChunks[0]?.choices?.[0]?.delta?.role !== 'assistant') errors.push('no role delta first');
  const finishes = choiceChunks.filter((c) => c.choices?.[0]?.finish_reason != null);
  if (finishes.length !== 1 || finishes[0] !== choiceChunks[choiceChunks.length - 1])
    errors.push(`${finishes.length} finish_reason chunks, or not last`);
  else checkFinish(finishes[0].choices[0].finish_reason, usageChunk.usage, maxTokens, errors);
  const pieces = choiceChunks.filter((c) => typeof (chat ? c.choices[0].delta?.content : c.choices[0].text) === 'string');
  if (usageChunk.usage && pieces.length > usageChunk.usage.completion_tokens + 2) errors.push('more pieces than tokens');
  if (typeof raw !== 'string') errors.push('raw stream not recorded');
  else {
    const events = raw.split('\n\n').filter((e) => e.length > 0);
    if (!raw.endsWith('data: [DONE]\n\n')) errors.push('stream does not end with data: [DONE]');
    if (events.length !== chunks.length + 1) errors.push(`${events.length} events for ${chunks.length} chunks`);
    if (events.some((e) => !e.startsWith('data: '))) errors.push('an event that is not a data: line');
  }
  return errors;
}

// ---- one request ----------------------------------------------------------------------------

let seqCounter = 0;
const records = [];
let sigtermAt = null; // ms since t0 when SIGTERM was sent

// spec: { chat, stream, session, worker, maxTokens, body (messages or prompt) }
async function call(spec) {
  const seq = String(++seqCounter);
  const headers = { 'X-Check-Seq': seq };
  if (spec.session) headers['X-Session-Id'] = spec.session;
  const body = { model: 'hfstatic', max_tokens: spec.maxTokens, temperature: 0.8, seed: Number(seq), ...spec.body };
  if (spec.stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  const api = spec.chat ? lb.chat.completions : lb.completions;
  const rec = { seq, chat: spec.chat, stream: spec.stream, session: spec.session, worker: spec.worker, start: now() - t0 };
  try {
    const { data, response } = await api.create(body, { headers }).withResponse();
    rec.replica = response.headers.get('x-hfstatic-replica');
    if (!spec.stream) {
      rec.errors = checkWhole(spec.chat, data, spec.maxTokens);
      rec.usage = data.usage;
      rec.text = spec.chat ? data.choices?.[0]?.message?.content : data.choices?.[0]?.text;
    } else {
      const chunks = [];
      for await (const chunk of data) {
        const at = now() - t0;
        if (chunks.length === 0) rec.firstChunk = at;
        const piece = spec.chat ? chunk.choices?.[0]?.delta?.content : chunk.choices?.[0]?.text;
        if (typeof piece === 'string' && piece.length > 0 && chunk.choices[0].finish_reason == null) {
          rec.firstPiece ??= at;
          rec.lastPiece = at;
          rec.pieces = (rec.pieces ?? 0) + 1;
        }
        chunks.push(chunk);
      }
      rec.errors = checkStream(spec.chat, chunks, await rawStreams.get(seq), spec.maxTokens);
      rawStreams.delete(seq);
      rec.usage = chunks[chunks.length - 1]?.usage;
      rec.text = chunks.map((c) => (spec.chat ? c.choices?.[0]?.delta?.content : c.choices?.[0]?.text) ?? '').join('');
    }
    if (!rec.replica) rec.errors.push('no X-Hfstatic-Replica header');
  } catch (e) {
    rec.errors = [`${e.status ?? ''} ${e.message}`.trim()];
    rec.status = e.status;
  }
  rec.end = now() - t0;
  rec.ok = rec.errors.length === 0;
  records.push(rec);
  return rec;
}

// ---- the workers ----------------------------------------------------------------------------

let issued = 0;
const take = () => (issued < REQUESTS ? ++issued : 0);
const words = (n, salt) => Array.from({ length: n }, (_, i) => ['alpha', 'beta', 'gamma', 'delta', 'omega'][(i * 7 + salt) % 5]).join(' ');
const maxTokensFor = (n) => 4 + (n % 13); // 4..16

// A conversation of 4 turns (chat, or a completion prompt that grows with its answers), with
// or without the X-Session-Id header; turns alternate between whole and streamed answers.
// next() gives a request number, 0 to stop. Returns its records, or null when stopped.
async function conversation({ w, conv, pinned, chat, next, name = `conv-${w}-${conv}` }) {
  const session = pinned ? name : undefined;
  const messages = [{ role: 'system', content: `You answer for conversation ${w}.${conv}. ${words(6, w)}` }];
  let prompt = `Document ${w}.${conv}: ${words(8, conv)}`;
  let previousPrompt = null;
  const out = [];
  for (let turn = 0; turn < 4; ++turn) {
    const n = next();
    if (!n) return null;
    const ask = `turn ${turn}: ${words(4 + turn, n)}`;
    if (chat) messages.push({ role: 'user', content: ask });
    else prompt += `\n${ask}\n`;
    const rec = await call({
      chat, stream: turn % 2 === 1, session, worker: w, maxTokens: maxTokensFor(n),
      body: chat ? { messages: structuredClone(messages) } : { prompt },
    });
    Object.assign(rec, { conversation: name, turn, pinned, previousPrompt });
    out.push(rec);
    if (!rec.ok) return null;
    previousPrompt = rec.usage.prompt_tokens;
    if (chat) messages.push({ role: 'assistant', content: rec.text });
    else prompt += rec.text;
  }
  return out;
}

async function conversationWorker(w, pinned) {
  for (let conv = 0; ; ++conv)
    if (!(await conversation({ w, conv, pinned, chat: conv % 2 === 0, next: take }))) return;
}

// Single requests without the header, rotating over the four kinds.
async function singleWorker(w) {
  for (let k = 0; ; ++k) {
    const n = take();
    if (!n) return;
    const chat = k % 2 === 0;
    const stream = (k >> 1) % 2 === 1;
    const text = `single ${w}.${k}: ${words(6, n)}`;
    await call({
      chat, stream, worker: w, maxTokens: maxTokensFor(n),
      body: chat ? { messages: [{ role: 'user', content: text }] } : { prompt: text },
    });
  }
}

// ---- --rejoin SUMMARY: after the drained replica is back, its sessions are back on it ---------

if (args.rejoin) {
  const { sessionMap } = JSON.parse(readFileSync(args.rejoin, 'utf8'));
  const moved = [];
  for (const [session, replica] of Object.entries(sessionMap)) {
    const rec = await call({ chat: true, stream: false, session, worker: 'rejoin', maxTokens: 4,
      body: { messages: [{ role: 'user', content: `back to ${session}` }] } });
    if (!rec.ok || rec.replica !== replica) moved.push(`${session}: ${replica} -> ${rec.replica ?? rec.errors.join('; ')}`);
  }
  const counts = Object.values(sessionMap).reduce((a, r) => ({ ...a, [r]: (a[r] ?? 0) + 1 }), {});
  console.log(`rejoin: ${Object.keys(sessionMap).length} sessions ${JSON.stringify(counts)} asked again: ` +
    `${Object.keys(sessionMap).length - moved.length} answered by the replica they had while both were up`);
  for (const m of moved) console.log(`FAILED: session moved: ${m}`);
  process.exit(moved.length || Object.keys(sessionMap).length === 0 ? 1 : 0);
}

// ---- HAProxy's stats and log, the replicas' metrics ------------------------------------------

async function haproxyStats() {
  const text = await (await fetch(`${args.stats}/stats;csv`)).text();
  const [header, ...rows] = text.trim().split('\n');
  const names = header.replace(/^# /, '').split(',');
  return rows.map((r) => Object.fromEntries(r.split(',').map((v, i) => [names[i], v])));
}
const serverStats = (stats, name) => stats.find((s) => s.pxname === 'hfstatic' && s.svname === name);

async function scrape(name) {
  const text = await (await fetch(`${replicas[name]}/metrics`)).text();
  const byStatus = {};
  for (const line of text.split('\n')) {
    const m = line.match(/^hfstatic_http_requests_total\{(.*)\} (\S+)$/);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (!COMPLETION_ROUTES.has(labels.route)) continue;
    byStatus[labels.status] = (byStatus[labels.status] ?? 0) + Number(m[2]);
  }
  return byStatus;
}

// One line per request in HAProxy's httplog format; the retries field ends the ac/fc/bc/sc/rc
// group, "+N" when the request was redispatched.
function haproxyLog() {
  const lines = readFileSync(args['haproxy-log'], 'utf8').split('\n');
  const re = /\] hfstatic hfstatic\/(\S+) \S+ (\d+) \d+ \S+ \S+ \S+ \d+\/\d+\/\d+\/\d+\/(\+?)(\d+) \S+ \{[^}]*\} "(\S+) (\S+)/;
  const out = { ok: 0, other: 0, retries: 0, redispatched: 0, retriedOk: 0, byServer: {} };
  for (const line of lines) {
    const m = line.match(re);
    if (!m || !COMPLETION_ROUTES.has(m[6])) continue;
    const [server, status, plus, retries] = [m[1], Number(m[2]), m[3], Number(m[4])];
    if (status === 200) ++out.ok;
    else ++out.other;
    out.byServer[server] = (out.byServer[server] ?? 0) + (status === 200 ? 1 : 0);
    out.retries += retries;
    if (plus) ++out.redispatched;
    if (retries > 0 && status === 200) ++out.retriedOk;
  }
  return out;
}

// ---- the run ----------------------------------------------------------------------------------

// The probe, on a quiet balancer before the load: one conversation with the header, one
// without. Pinned, every turn finds the previous turn's whole prompt in its replica's cache;
// without the header its turns go where the balancer's round robin puts them.
let probeN = 1000;
const probeNext = () => ++probeN;
const probePinned = await conversation({ w: 'probe', conv: 0, pinned: true, chat: true, next: probeNext, name: 'probe-pinned' });
const probeUnpinned = await conversation({ w: 'probe', conv: 1, pinned: false, chat: true, next: probeNext, name: 'probe-unpinned' });
const PROBES = records.length;

const workers = [];
const pinnedWorkers = Math.max(1, Math.floor(CLIENTS / 2));
for (let w = 0; w < CLIENTS; ++w) {
  if (w < pinnedWorkers) workers.push(conversationWorker(w, true));
  else if (w === pinnedWorkers) workers.push(conversationWorker(w, false));
  else workers.push(singleWorker(w));
}

// The drain: once DRAIN_AFTER answers are in, a long stream straight to the replica, then SIGTERM.
const hold = { controller: new AbortController() };
const drain = (async () => {
  while (records.length - PROBES < DRAIN_AFTER && issued < REQUESTS) await sleep(10);
  const holdClient = clientFor(replicas[drainName]);
  let started;
  const first = new Promise((resolve) => (started = resolve));
  hold.done = (async () => {
    try {
      const stream = await holdClient.completions.create(
        { model: 'hfstatic', prompt: 'hold', max_tokens: 3000, ignore_eos: true, stream: true },
        { signal: hold.controller.signal });
      for await (const chunk of stream) {
        hold.chunks = (hold.chunks ?? 0) + 1;
        started();
      }
      hold.ended = now() - t0;
    } catch (e) {
      hold.error = e.message;
    }
    started();
  })();
  await first;
  if (hold.error || hold.ended) return;
  process.kill(Number(args['drain-pid']), 'SIGTERM');
  sigtermAt = now() - t0;
  // Out of the rotation: HAProxy marks it DOWN after its /ready checks fail (503).
  for (let i = 0; i < 100; ++i) {
    const s = serverStats(await haproxyStats(), drainName);
    if (s?.status?.startsWith('DOWN')) {
      hold.downAfter = now() - t0 - sigtermAt;
      hold.downCheck = `${s.check_status} ${s.check_code}`;
      break;
    }
    await sleep(50);
  }
})();

await Promise.all(workers);
await drain;
const loadEnd = now() - t0;

// ---- checks ---------------------------------------------------------------------------------

const ok = records.filter((r) => r.ok);
const bad = records.filter((r) => !r.ok);
check(sigtermAt !== null, `SIGTERM was sent to ${drainName} (hold stream: ${hold.error ?? 'no first chunk'})`);
check(records.length === REQUESTS + PROBES, `${records.length - PROBES} requests answered of ${REQUESTS}`);
check(bad.length === 0, `${bad.length} requests failed: ${bad.slice(0, 5).map((r) => `#${r.seq} ${r.errors.join('; ')}`).join(' | ')}`);
const after = records.filter((r) => sigtermAt !== null && r.start >= sigtermAt);
check(after.length >= REQUESTS / 4, `only ${after.length} requests started after SIGTERM`);
check(hold.downAfter !== undefined, `${drainName} was not marked DOWN by HAProxy while draining`);
check(/^L7STS 503$/.test(hold.downCheck ?? ''), `${drainName} left the rotation by its /ready check (got ${hold.downCheck})`);

// Affinity: answers completed while both replicas were up; a session header maps to one replica.
const bothUp = ok.filter((r) => (sigtermAt === null || r.end < sigtermAt) && r.worker !== 'probe');
const sessions = {};
for (const r of bothUp.filter((r) => r.session)) (sessions[r.session] ??= new Set()).add(r.replica);
const split = Object.entries(sessions).filter(([, s]) => s.size > 1).map(([k]) => k);
const repeated = Object.keys(sessions).filter((k) => bothUp.filter((r) => r.session === k).length > 1);
check(repeated.length >= 2, `only ${repeated.length} sessions with 2+ requests while both replicas were up`);
check(split.length === 0, `sessions answered by two replicas while both were up: ${split.join(', ')}`);
const pinnedOn = new Set(Object.values(sessions).map((s) => [...s][0]));
check(pinnedOn.size === Object.keys(replicas).length, `sessions pinned to ${[...pinnedOn].join(', ')} only`);
const unpinnedOn = new Set(bothUp.filter((r) => !r.session).map((r) => r.replica));
check(unpinnedOn.size === Object.keys(replicas).length, `requests without the header went to ${[...unpinnedOn].join(', ')} only`);

// The probe: pinned, one replica, the previous turn's whole prompt cached at every turn.
const describe = (recs) => (recs ?? []).map((r) => `${r.replica}:${r.usage?.prompt_tokens_details?.cached_tokens}/${r.usage?.prompt_tokens}`).join(' ');
const probeReuse = (recs) => (recs ?? []).filter((r) => r.turn > 0 && r.usage.prompt_tokens_details.cached_tokens >= r.previousPrompt).length;
check(probePinned && new Set(probePinned.map((r) => r.replica)).size === 1 && probeReuse(probePinned) === 3,
  `pinned probe conversation (replica:cached/prompt per turn): ${describe(probePinned)}`);
check(probeUnpinned !== null, `unpinned probe conversation: ${describe(probeUnpinned)}`);

// Prefix reuse under load: a later turn of a conversation whose previous prompt is all in the cache.
const reuse = (pinned) => {
  const turns = bothUp.filter((r) => r.turn > 0 && r.pinned === pinned && r.previousPrompt);
  const whole = turns.filter((r) => r.usage.prompt_tokens_details.cached_tokens >= r.previousPrompt);
  const cached = turns.reduce((a, r) => a + r.usage.prompt_tokens_details.cached_tokens, 0);
  const prompt = turns.reduce((a, r) => a + r.usage.prompt_tokens, 0);
  return { turns: turns.length, whole: whole.length, cachedShare: prompt ? cached / prompt : 0 };
};
const pinnedReuse = reuse(true);
const unpinnedReuse = reuse(false);

// The counts: client answers by replica, HAProxy's log, each replica's /metrics (the draining
// one still alive: the hold stream is in flight, so it is not counted yet).
const byReplica = {};
for (const r of ok) byReplica[r.replica] = (byReplica[r.replica] ?? 0) + 1;
let metrics;
let log;
let stats;
for (let attempt = 0; attempt < 20; ++attempt) {
  await sleep(100);
  const ready = await fetch(`${replicas[drainName]}/ready`).then((r) => r.status).catch(() => 'gone');
  if (attempt === 0) check(ready === 503, `${drainName} /ready during its drain: ${ready}`);
  metrics = {};
  for (const name of Object.keys(replicas)) metrics[name] = await scrape(name).catch(() => null);
  log = haproxyLog();
  stats = await haproxyStats();
  const agree = Object.keys(replicas).every((n) => (metrics[n]?.['200'] ?? 0) === (byReplica[n] ?? 0)) && log.ok === ok.length;
  if (agree) break;
}
check(metrics[drainName] !== null, `${drainName} was gone before the load ended (hold stream ${hold.ended ? 'ended' : 'failed'})`);
const metric200 = Object.values(metrics).reduce((a, m) => a + (m?.['200'] ?? 0), 0);
check(metric200 === ok.length, `sum of hfstatic_http_requests_total{status="200"} over replicas ${metric200} != ${ok.length} answers`);
for (const name of Object.keys(replicas))
  check((metrics[name]?.['200'] ?? 0) === (byReplica[name] ?? 0),
    `${name}: /metrics says ${metrics[name]?.['200']} answered, the client got ${byReplica[name] ?? 0} from it`);
check(log.ok === ok.length && log.other === 0, `HAProxy logged ${log.ok} answers (+${log.other} other statuses), client got ${ok.length}`);
const refused = metrics[drainName]?.['503'] ?? 0;
const wretr = Number(serverStats(stats, 'BACKEND')?.wretr ?? 0);
const wredis = Number(serverStats(stats, 'BACKEND')?.wredis ?? 0);
const stayRefused = metrics[stayName]?.['503'] ?? 0;
check(stayRefused === 0, `${stayName} refused ${stayRefused} requests (${JSON.stringify(metrics[stayName])})`);
check(refused <= log.retries, `${drainName} refused ${refused} with 503 but HAProxy logged ${log.retries} retries`);
check(log.retries === wretr, `retries in HAProxy's log ${log.retries} != its stats' ${wretr}`);
const otherStatuses = Object.entries(metrics[drainName] ?? {}).filter(([s]) => s !== '200' && s !== '503');
check(otherStatuses.length === 0, `${drainName} answered statuses ${JSON.stringify(metrics[drainName])}`);

// Streams arrive token by token: the replicas pace tokens TOKEN_MS apart, so a stream's pieces
// span about (pieces - 1) x TOKEN_MS at the client unless something on the way holds them.
const paced = ok.filter((r) => r.stream && r.pieces >= 4);
const spread = paced.reduce((a, r) => a + (r.lastPiece - r.firstPiece), 0);
const expectedSpread = paced.reduce((a, r) => a + (r.pieces - 1) * TOKEN_MS, 0);
check(paced.length >= 10, `only ${paced.length} streams of 4+ pieces`);
check(spread >= 0.5 * expectedSpread,
  `stream pieces arrived in bunches: they spread over ${Math.round(spread)} ms, paced ${Math.round(expectedSpread)} ms`);
const drainedInFlight = ok.filter((r) => r.replica === drainName && r.start < sigtermAt && r.end >= sigtermAt).length;

// Let the hold stream go: the drained replica then stops (the script checks its exit status).
hold.controller.abort();
await hold.done;

const pct = (xs, p) => (xs.length ? xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] : 0);
const latency = ok.map((r) => r.end - r.start);
const ttft = ok.filter((r) => r.stream && r.firstChunk).map((r) => r.firstChunk - r.start);
const summary = {
  requests: records.length,
  answered: ok.length,
  failed: bad.length,
  kinds: {
    completion: ok.filter((r) => !r.chat && !r.stream).length,
    completionStream: ok.filter((r) => !r.chat && r.stream).length,
    chat: ok.filter((r) => r.chat && !r.stream).length,
    chatStream: ok.filter((r) => r.chat && r.stream).length,
    withSessionHeader: ok.filter((r) => r.session).length,
  },
  clients: CLIENTS,
  sigtermAtMs: Math.round(sigtermAt ?? -1),
  startedAfterSigterm: after.length,
  drainedInFlight,
  downAfterMs: Math.round(hold.downAfter ?? -1),
  downCheck: hold.downCheck,
  byReplica,
  metrics200: Object.fromEntries(Object.entries(metrics).map(([n, m]) => [n, m?.['200'] ?? null])),
  refused503: refused,
  haproxy: { answered: log.ok, retries: log.retries, redispatched: log.redispatched, retriedAnswered: log.retriedOk, wretr, wredis },
  probe: { pinned: describe(probePinned), unpinned: describe(probeUnpinned) },
  sessions: { bothUp: Object.keys(sessions).length, repeated: repeated.length, split: split.length },
  sessionMap: Object.fromEntries([
    ...Object.entries(sessions).map(([k, v]) => [k, [...v][0]]),
    ...(probePinned ? [['probe-pinned', probePinned[0].replica]] : []),
  ]),
  prefixReuse: { pinned: pinnedReuse, unpinned: unpinnedReuse },
  latencyMs: { p50: Math.round(pct(latency, 0.5)), p90: Math.round(pct(latency, 0.9)), max: Math.round(pct(latency, 1)) },
  streamSpreadMs: { streams: paced.length, measured: Math.round(spread), paced: Math.round(expectedSpread) },
  streamFirstChunkMs: { p50: Math.round(pct(ttft, 0.5)), p90: Math.round(pct(ttft, 0.9)) },
  loadSeconds: Math.round(loadEnd) / 1000,
  failures,
};
if (args.out) writeFileSync(args.out, JSON.stringify(summary, null, 2) + '\n');

const share = (x) => `${x.whole}/${x.turns} turns reused the whole previous prompt, ${(100 * x.cachedShare).toFixed(0)}% of prompt tokens cached`;
console.log(`load: ${summary.requests} requests (${PROBES} probe, ${REQUESTS} from ${CLIENTS} clients) in ${summary.loadSeconds} s: ` +
  `${summary.kinds.completion} completions, ${summary.kinds.completionStream} completion streams, ` +
  `${summary.kinds.chat} chats, ${summary.kinds.chatStream} chat streams; ${summary.kinds.withSessionHeader} with X-Session-Id`);
console.log(`answers: ${ok.length} well formed and successful, ${bad.length} failed; by replica ${JSON.stringify(byReplica)}; ` +
  `latency p50 ${summary.latencyMs.p50} ms, p90 ${summary.latencyMs.p90} ms; stream first chunk p50 ${summary.streamFirstChunkMs.p50} ms`);
console.log(`streams: ${paced.length} of 4+ pieces spread over ${Math.round(spread)} ms at the client, ` +
  `${Math.round(expectedSpread)} ms as paced by the replicas (token by token, not in bunches)`);
console.log(`drain: SIGTERM to ${drainName} at ${(summary.sigtermAtMs / 1000).toFixed(2)} s; ${drainedInFlight} requests in flight on it finished; ` +
  `HAProxy marked it DOWN ${summary.downAfterMs} ms later (${summary.downCheck}); ${after.length} requests started after SIGTERM`);
console.log(`retries: ${drainName} refused ${refused} with 503 server_shutting_down; HAProxy retried ${log.retries} ` +
  `(${log.redispatched} requests redispatched, stats wretr ${wretr} wredis ${wredis}), all ${log.retriedOk} answered 200`);
console.log(`probe (replica:cached/prompt tokens per turn): with X-Session-Id ${describe(probePinned)}; ` +
  `without ${describe(probeUnpinned)}`);
console.log(`affinity: ${repeated.length} sessions with 2+ requests while both were up, ${split.length} split; ` +
  `pinned: ${share(pinnedReuse)}; without the header: ${share(unpinnedReuse)}`);
console.log(`metrics: hfstatic_http_requests_total{status="200"} ${JSON.stringify(summary.metrics200)} = ${metric200}; ` +
  `HAProxy log ${log.ok}; client ${ok.length}`);
for (const f of failures) console.log(`FAILED: ${f}`);
process.exit(failures.length ? 1 : 0);
