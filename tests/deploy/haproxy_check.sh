#!/usr/bin/env bash
# The deployment check: two hfstatic serve replicas behind HAProxy, run from the files in deploy/
# (haproxy.cfg as it is, its addresses from the environment; each replica from the ExecStart line
# of hfstatic@.service), loaded by the OpenAI client (load_client.mjs) while one replica is
# drained by SIGTERM. docs/deploy.md says what it checks. Not part of ctest: it starts servers
# and takes about 15 s.
#
#   tests/deploy/install.sh            # once: haproxy, the openai npm package
#   tests/deploy/haproxy_check.sh [--keep]
#
# --keep keeps the temporary folder (program, logs, summary.json); it is kept anyway on failure.
# CLIENTS (6), REQUESTS (200) and DRAIN_AFTER (80 answers before SIGTERM) size the load;
# HFSTATIC_BIN picks the binary (default build/hfstatic).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/tests/deploy"
hfstatic="${HFSTATIC_BIN:-$root/build/hfstatic}"
clients="${CLIENTS:-6}"
requests="${REQUESTS:-200}"
drain_after="${DRAIN_AFTER:-80}"
token_ms=15
keep=0
case "${1:-}" in
  --keep) keep=1 ;;
  "") ;;
  *) echo "usage: $0 [--keep]" >&2; exit 2 ;;
esac

die() { echo "haproxy check: $*" >&2; exit 1; }
[ -x "$hfstatic" ] || die "no $hfstatic: build the hfstatic tool first (cmake --build build --target hfstatic_cli)"
command -v haproxy >/dev/null || die "haproxy not found: run tests/deploy/install.sh"
command -v node >/dev/null || die "node not found: run scripts/install-deps.sh"
[ -f "$here/node_modules/openai/package.json" ] || die "the openai npm package is missing: run tests/deploy/install.sh"

started=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/hfstatic-deploy.XXXXXX")"
declare -A pid=()
status=1
failed=()
passed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed+=("$*"); echo "FAILED: $*"; }

cleanup() {
  local name
  for name in "${!pid[@]}"; do kill -TERM "${pid[$name]}" 2>/dev/null || true; done
  for name in "${!pid[@]}"; do
    for _ in $(seq 50); do kill -0 "${pid[$name]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${pid[$name]}" 2>/dev/null || true
    wait "${pid[$name]}" 2>/dev/null || true
  done
  if [ "$status" -eq 0 ] && [ "$keep" -eq 0 ]; then rm -rf "$work"; else echo "files kept in $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits (at most $2 seconds) for a process to exit; its exit status in $exit_status, or "running".
wait_exit() {
  local p="$1" limit="$2"
  for _ in $(seq $((limit * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then exit_status=running; return; fi
  exit_status=0
  wait "$p" || exit_status=$?
}

# ---- the program: a tiny random model (byte tokens), its context long enough for the stream ----
# that keeps the drained replica alive to the end of the load (load_client.mjs): 3000 tokens.
"$hfstatic" make-checkpoint --preset tiny-qwen2 -o "$work/ckpt" >/dev/null
sed -i 's/"max_position_embeddings": 512,/"max_position_embeddings": 4096,/' "$work/ckpt/config.json"
"$hfstatic" export "$work/ckpt" -o "$work/tiny.hfs" --max-context 4096 -q

# ---- the unit: stop signal and timeout, systemd's own verdict, the replica command line -------
unit="$root/deploy/hfstatic@.service"
exec_start="$(sed -n 's/^ExecStart=//p' "$unit")"
stop_s="$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")"
drain_s="$(grep -o -- '--drain-timeout [0-9]*' <<<"$exec_start" | cut -d' ' -f2 || true)"
if grep -qx 'KillSignal=SIGTERM' "$unit" && [ -n "$stop_s" ] && [ -n "$drain_s" ] && [ "$stop_s" -gt "$drain_s" ]; then
  ok "hfstatic@.service: KillSignal=SIGTERM, TimeoutStopSec=$stop_s > --drain-timeout $drain_s"
else
  fail "hfstatic@.service: wants KillSignal=SIGTERM and TimeoutStopSec (${stop_s:-none}) > --drain-timeout (${drain_s:-none})"
fi
if command -v systemd-analyze >/dev/null; then
  mkdir "$work/unit"
  sed "s#^ExecStart=/usr/local/bin/hfstatic #ExecStart=$hfstatic #" "$unit" >"$work/unit/hfstatic@.service"
  if systemd-analyze verify --man=no "$work/unit/hfstatic@8081.service" >"$work/unit/verify.txt" 2>&1 &&
    [ ! -s "$work/unit/verify.txt" ]; then
    ok "systemd-analyze verify hfstatic@8081.service: clean"
  else
    fail "systemd-analyze verify hfstatic@8081.service: $(head -c 600 "$work/unit/verify.txt")"
  fi
fi

# The ExecStart line with the unit's variables set for the check: each request paced at 15 ms a
# token (--token-interval) so that requests are in flight when the drain begins.
replica_argv() {
  local line="$exec_start"
  line="${line//%i/$1}"
  line="${line//'${HFSTATIC_PROGRAM}'/$work/tiny.hfs}"
  line="${line//'${HFSTATIC_HOST}'/127.0.0.1}"
  line="${line//'${HFSTATIC_SLOTS}'/2}"
  line="${line//'${HFSTATIC_THREADS}'/1}"
  line="${line//'$HFSTATIC_ARGS'/--token-interval $token_ms}"
  case "$line" in *'$'* | *%*) die "ExecStart has variables this script does not set: $line" ;; esac
  read -ra argv <<<"$line"
  argv[0]="$hfstatic"
}

# ---- free loopback ports, the replicas, HAProxy -----------------------------------------------
read -r lb_port stats_port r1_port r2_port < <(node -e '
  const net = require("net");
  Promise.all([0, 1, 2, 3].map(() => new Promise((ok) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => ok(s)); })))
    .then((ss) => { console.log(ss.map((s) => s.address().port).join(" ")); ss.forEach((s) => s.close()); });')
declare -A port=([r1]=$r1_port [r2]=$r2_port)
for name in r1 r2; do
  replica_argv "${port[$name]}"
  "${argv[@]}" >"$work/$name.out" 2>"$work/$name.log" &
  pid[$name]=$!
done
echo "replicas: ${argv[*]:0:3} ... (r1 :$r1_port, r2 :$r2_port); HAProxy :$lb_port, stats :$stats_port"

export HFSTATIC_LB_BIND="127.0.0.1:$lb_port" HFSTATIC_LB_STATS="127.0.0.1:$stats_port"
export HFSTATIC_R1="127.0.0.1:$r1_port" HFSTATIC_R2="127.0.0.1:$r2_port"
export HFSTATIC_LB_SOCKET="$work/admin.sock" HFSTATIC_LB_LOG=stdout
if [ "$(id -u)" -ne 0 ]; then
  export HFSTATIC_LB_USER="$(id -un)" HFSTATIC_LB_GROUP="$(id -gn)"
fi
haproxy -c -q -f "$root/deploy/haproxy.cfg" || die "haproxy -c rejects deploy/haproxy.cfg"
haproxy -db -f "$root/deploy/haproxy.cfg" >"$work/haproxy.log" 2>"$work/haproxy.err" &
pid[haproxy]=$!

# Waits (at most 30 s) until HAProxy's stats show the replicas named in $@ UP (their /ready checks
# pass) and /ready answers 200 through it.
wait_up() {
  node -e '
    const [stats, lb, ...names] = process.argv.slice(1);
    const deadline = Date.now() + 30000;
    (async () => {
      while (Date.now() < deadline) {
        try {
          const rows = (await (await fetch(stats + "/stats;csv")).text()).split("\n").map((l) => l.split(","));
          const up = names.every((n) => rows.some((r) => r[0] === "hfstatic" && r[1] === n && r[17] === "UP"));
          if (up && (await fetch(lb + "/ready")).status === 200) process.exit(0);
        } catch {}
        await new Promise((r) => setTimeout(r, 100));
      }
      process.exit(1);
    })();' "http://127.0.0.1:$stats_port" "http://127.0.0.1:$lb_port" "$@"
}
if wait_up r1 r2; then
  ok "both replicas UP behind HAProxy after $((SECONDS - started)) s"
else
  cat "$work/haproxy.err" >&2
  die "the replicas were not UP behind HAProxy within 30 s"
fi

# ---- the load, the drain of r1 ------------------------------------------------------------------
load_rc=0
node "$here/load_client.mjs" --lb "http://127.0.0.1:$lb_port" --stats "http://127.0.0.1:$stats_port" \
  --replica "r1=http://127.0.0.1:$r1_port" --replica "r2=http://127.0.0.1:$r2_port" \
  --haproxy-log "$work/haproxy.log" --drain r1 --drain-pid "${pid[r1]}" \
  --clients "$clients" --requests "$requests" --drain-after "$drain_after" \
  --token-interval-ms "$token_ms" --out "$work/summary.json" &
pid[load]=$!
wait "${pid[load]}" || load_rc=$?
unset 'pid[load]'
if [ "$load_rc" -eq 0 ]; then ok "load client: every check passed"; else fail "load client: exit status $load_rc"; fi

wait_exit "${pid[r1]}" $((${drain_s:-60} + 10))
if [ "$exit_status" = running ]; then
  fail "r1 still running $((${drain_s:-60} + 10)) s after the load"
  echo "haproxy check: FAILED"
  exit 1
fi
unset 'pid[r1]'
if [ "$exit_status" -eq 0 ] && grep -q 'draining (signal 15' "$work/r1.log"; then
  ok "r1 drained on SIGTERM and exited 0 ($(grep -o 'stopping (.*)' "$work/r1.log"))"
else
  fail "r1 exit status $exit_status after SIGTERM: $(tail -n 3 "$work/r1.log")"
fi

# r2 carries on alone: HAProxy answers /ready through it, r1 is DOWN.
lb_ready="$(node -e 'fetch(process.argv[1]).then((r) => console.log(r.status), () => console.log("error"))' \
  "http://127.0.0.1:$lb_port/ready")"
if [ "$lb_ready" = 200 ] && grep -q 'Server hfstatic/r1 is DOWN' "$work/haproxy.log" "$work/haproxy.err"; then
  ok "HAProxy: r1 DOWN, /ready through r2 200"
else
  fail "HAProxy after the drain: /ready $lb_ready; $(grep -h 'hfstatic/r1 is' "$work/haproxy.log" "$work/haproxy.err" | head -n 2)"
fi

# r1 comes back (systemd's restart): HAProxy takes it in once its /ready answers 200, and the
# sessions it had come back to it.
replica_argv "$r1_port"
"${argv[@]}" >"$work/r1.out" 2>"$work/r1-restarted.log" &
pid[r1]=$!
if wait_up r1 r2; then
  ok "r1 restarted and UP behind HAProxy again"
  if node "$here/load_client.mjs" --lb "http://127.0.0.1:$lb_port" --rejoin "$work/summary.json"; then
    ok "sessions back on the replica they had"
  else
    fail "sessions did not return to r1"
  fi
else
  fail "r1 restarted but not UP behind HAProxy within 30 s"
fi

# The runtime API (stats socket): "state drain" takes r1 out of the rotation before it is
# stopped (docs/deploy.md, "Saturated"), its sessions go to r2 meanwhile, "state ready" brings
# it back.
haproxy_cmd() {
  node -e '
    const c = require("net").connect(process.argv[1]);
    let out = "";
    c.on("data", (d) => (out += d)).on("end", () => process.stdout.write(out)).on("error", (e) => console.log(e.message));
    c.write(process.argv[2] + "\n");' "$work/admin.sock" "$1"
}
server_status() {
  node -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) =>
    console.log(t.split("\n").map((l) => l.split(",")).find((r) => r[0] === "hfstatic" && r[1] === process.argv[2])?.[17]))' \
    "http://127.0.0.1:$stats_port/stats;csv" "$1"
}
replica_for() {
  node -e 'fetch(process.argv[1], { method: "POST", headers: { "Content-Type": "application/json", "X-Session-Id": process.argv[2] },
    body: JSON.stringify({ model: "m", max_tokens: 2, messages: [{ role: "user", content: "hi" }] }) })
    .then((r) => console.log(r.status === 200 ? r.headers.get("x-hfstatic-replica") : r.status), (e) => console.log(e.message))' \
    "http://127.0.0.1:$lb_port/v1/chat/completions" "$1"
}
r1_session="$(node -e 'const m = require(process.argv[1]).sessionMap; console.log(Object.keys(m).find((k) => m[k] === "r1") ?? "")' \
  "$work/summary.json" 2>/dev/null || true)"
haproxy_cmd "set server hfstatic/r1 state drain" >"$work/admin.txt"
drained_status="$(server_status r1 || true)"
drained_to="$(replica_for "$r1_session")"
haproxy_cmd "set server hfstatic/r1 state ready" >>"$work/admin.txt"
back_to=""
if wait_up r1 r2; then back_to="$(replica_for "$r1_session")"; fi
if [ -n "$r1_session" ] && [ "$drained_status" = DRAIN ] && [ "$drained_to" = r2 ] && [ "$back_to" = r1 ]; then
  ok "runtime API: r1 DRAIN sends session $r1_session to r2, ready brings it back to r1"
else
  fail "runtime API: r1 $drained_status, session '$r1_session' on $drained_to then $back_to ($(tr '\n' ' ' <"$work/admin.txt"))"
fi

# Both stop the same way (idle: at once).
for name in r1 r2; do
  kill -TERM "${pid[$name]}" 2>/dev/null || true
  wait_exit "${pid[$name]}" 15
  if [ "$exit_status" != running ]; then unset "pid[$name]"; fi
  if [ "$exit_status" = 0 ]; then ok "$name exited 0 on SIGTERM"; else fail "$name on SIGTERM: $exit_status"; fi
done

echo "took $((SECONDS - started)) s; $passed checks here passed, ${#failed[@]} failed"
if [ "${#failed[@]}" -eq 0 ]; then
  status=0
  echo "haproxy check: PASSED"
else
  echo "haproxy check: FAILED"
  exit 1
fi
