#!/usr/bin/env bash
# make bench-cluster (issue #21): the same push on SQLite and on PostgreSQL, one node and three.
# Release build, the bundled APNs look-alike on loopback, a throwaway PostgreSQL cluster from
# scripts/pg-test-cluster.sh (its settings as they are there: fsync=off, synchronous_commit=off,
# full_page_writes=off, unix socket only). Not a test.
#  (1) one `tuisong serve` on SQLite: a tag push to BENCH_DEVICES (200,000) devices
#  (2) one node on PostgreSQL, the same push
#  (3) three nodes on PostgreSQL, the same push (the status is polled on the first node)
#  (4) one node on PostgreSQL, a per-recipient Tencent all_member_push/im_push to
#      BENCH_POLICY_DEVICES (200,000) background accounts (bench/apns.sh (c), seeded with psql)
#  (5) device lookups against one PostgreSQL node: wrk with bench/lookup.lua
# Each push is watched by bench/push_watch.py (GET /api/v1/messages/{id} at BENCH_POLL_HZ).
# Prints seconds and deliveries/s for each, the ratio (2)/(1) (target >= 0.7), and the lookup
# rate and p99 (target >= 20k/s, p99 < 10 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/tuisong}
DEVICES=${BENCH_DEVICES:-200000}
POLICY_DEVICES=${BENCH_POLICY_DEVICES:-200000}
CONNECTIONS=${BENCH_CONNECTIONS:-2}
STREAMS=${BENCH_STREAMS:-500}
PORT=${BENCH_PORT:-18100}
POLL_HZ=${BENCH_POLL_HZ:-100}
LOOKUP_DURATION=${BENCH_DURATION:-15s}
LOOKUP_CONNECTIONS=${BENCH_LOOKUP_CONNECTIONS:-64}
WORK=$(mktemp -d /tmp/tuisong-bench-cluster.XXXXXX)
MOCK_PID=""
NODE_PIDS=()
PG_URL=""
stop_nodes() {
  for p in "${NODE_PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  NODE_PIDS=()
}
cleanup() {
  stop_nodes
  [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null && wait "$MOCK_PID" 2>/dev/null || true
  [ -n "$PG_URL" ] && scripts/pg-test-cluster.sh stop "$PG_URL" || true
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir "$WORK/mock"
$BIN apns-mock --port 0 --setup "$WORK/mock/setup.json" --max-streams "$STREAMS" --streams-before-token "$STREAMS" \
  > "$WORK/mock.out" 2> "$WORK/mock.err" &
MOCK_PID=$!
for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
field() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }
MOCK_URL=$(field url)

PG_URL=$(scripts/pg-test-cluster.sh start)
PG_DB_URL=${PG_URL/\/postgres\?//tuisong_bench?}
psql -XAtq -d "$PG_URL" -c "CREATE DATABASE tuisong_bench" < /dev/null
echo "== PostgreSQL: a throwaway cluster from scripts/pg-test-cluster.sh, as it is there:" \
  "$(psql -XAtq -d "$PG_URL" -c "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings
    WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections')" < /dev/null)" \
  "(fsync off: commits do not wait for the disk; a production server's would)"
echo "   $(psql -XAtq -d "$PG_URL" -c 'SELECT version()' < /dev/null)"

export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_LISTEN_HOST=127.0.0.1
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_APNS_PRODUCTION_URL=$MOCK_URL
export TUISONG_APNS_SANDBOX_URL=$MOCK_URL
export TUISONG_APNS_CA_FILE=$(field ca_file)
export TUISONG_APNS_CONNECTIONS=$CONNECTIONS
export TUISONG_LOG_LEVEL=warning

SQLITE_PATH=$WORK/tuisong.db
# Every command runs on one database: `on sqlite …` or `on pg …` (`env`, which execs the
# command: a node started with `on … &` is its own $!).
on() {
  env_for "$1"; shift
  "${exec_env[@]}" "$@"
}
env_for() {
  if [ "$1" = sqlite ]; then
    exec_env=(env -u TUISONG_DATABASE_URL TUISONG_DATABASE_PATH="$SQLITE_PATH")
  else
    exec_env=(env -u TUISONG_DATABASE_PATH TUISONG_DATABASE_URL="$PG_DB_URL")
  fi
}

json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# setup BACKEND: the bench app, its credential and DEVICES devices tagged bench-a; sets APP_ID, KEY.
setup() {
  local app
  on "$1" "$BIN" migrate > /dev/null  # other commands never create a database
  app=$(on "$1" "$BIN" app create --name bench --bundle-id com.example.bench)
  APP_ID=$(echo "$app" | json_field id); KEY=$(echo "$app" | json_field api_key)
  on "$1" "$BIN" credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
    --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
  local start; start=$(date +%s.%N)
  python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $DEVICES + 1): w('%064x\n' % i)
" | on "$1" "$BIN" device import --app "$APP_ID" --tag bench-a > /dev/null
  echo "   $1: $DEVICES devices imported in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
  if [ "$1" = pg ]; then  # a build that ignores TUISONG_DATABASE_URL would have used SQLite
    local stored
    stored=$(psql -XAtq -d "$PG_DB_URL" -c "SELECT count(*) FROM devices" < /dev/null 2>/dev/null || echo 0)
    [ "$stored" = "$DEVICES" ] || { echo "the devices are not in PostgreSQL ($stored): does $BIN take TUISONG_DATABASE_URL?" >&2; exit 1; }
  fi
}

# start_node BACKEND N: `tuisong serve` on PORT+N; waits for /healthz.
start_node() {
  local port=$((PORT + $2))
  env_for "$1"
  "${exec_env[@]}" TUISONG_LISTEN_PORT=$port "$BIN" serve > "$WORK/serve-$1-$2.log" 2>&1 &
  NODE_PIDS+=($!)
  for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && return; sleep 0.1; done
  echo "node $2 on $1 did not start; its log:" >&2; cat "$WORK/serve-$1-$2.log" >&2; exit 1
}

# CPU seconds PostgreSQL used so far: the postmaster with its reaped children (cutime, cstime)
# and every live backend.
pg_cpu() {
  local dir; dir=$(sed -n 's/.*[?&]host=\([^&]*\).*/\1/p' <<<"$PG_URL")
  python3 - "$(head -n 1 "$dir/data/postmaster.pid")" <<'PY'
import os, subprocess, sys
postmaster = sys.argv[1]
def fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
ticks = sum(int(x) for x in fields(postmaster)[11:15])
children = subprocess.run(["pgrep", "-P", postmaster], capture_output=True, text=True).stdout.split()
for child in children:
    try:
        ticks += sum(int(x) for x in fields(child)[11:13])
    except OSError:
        pass
print(ticks / os.sysconf("SC_CLK_TCK"))
PY
}

# push_and_wait: a tag push to bench-a through the first node, watched there; prints the
# watcher's lines (and PostgreSQL's CPU on PostgreSQL), and sets RATE.
push_and_wait() {
  local out before=0
  [ "${1:-}" = pg ] && before=$(pg_cpu)
  out=$(python3 bench/push_watch.py --port $((PORT + 1)) --key "$KEY" --pid "${NODE_PIDS[0]}" --mock-pid "$MOCK_PID" \
    --tag bench-a --count "$DEVICES" --hz "$POLL_HZ")
  echo "$out" | grep -v '^RATE'
  RATE=$(echo "$out" | awk '/^RATE/ {print $2}')
  [ "${1:-}" = pg ] && pg_cpu_line "$before" "$DEVICES" "$RATE"
  return 0
}

# pg_cpu_line BEFORE COUNT RATE: PostgreSQL's CPU over the push just watched.
pg_cpu_line() {
  python3 -c "
cpu = $(pg_cpu) - $1; seconds = $2 / $3
print(f'   PostgreSQL CPU: {cpu:.2f} s = {cpu / $2 * 1e6:.1f} µs per notification ({cpu / seconds * 100:.0f} % of a core)')"
}

echo "== (1) one node on SQLite: tag push to $DEVICES devices"
setup sqlite
start_node sqlite 1
push_and_wait; SQLITE_RATE=$RATE
stop_nodes

echo "== (2) one node on PostgreSQL: the same push"
setup pg
# The Tencent app of (4), seeded before the node starts (its caches see the rows at once).
TENCENT_SDKAPPID=1400000042
TENCENT_SECRET=5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e
if [ "$POLICY_DEVICES" -gt 0 ]; then
  TAPP=$(on pg "$BIN" app create --name bench-tencent --bundle-id com.example.bench)
  TAPP_ID=$(echo "$TAPP" | json_field id); TKEY=$(echo "$TAPP" | json_field api_key)
  on pg env TENCENT_SECRET="$TENCENT_SECRET" "$BIN" app set-tencent --app "$TAPP_ID" --sdkappid "$TENCENT_SDKAPPID" \
    --secret-env TENCENT_SECRET > /dev/null
  on pg "$BIN" credential add --app "$TAPP_ID" --environment production --p8 "$(field p8_file)" \
    --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
  python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $POLICY_DEVICES + 1): w('%064x\\n' % (0x7000000000 + i))
" | on pg "$BIN" device import --app "$TAPP_ID" > /dev/null
  psql -XAtq -v ON_ERROR_STOP=1 -d "$PG_DB_URL" < /dev/null -c "
    UPDATE devices SET im_account = 'user' || id, app_state = 'background' WHERE app_id = $TAPP_ID;
    INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
      SELECT app_id, im_account, 'background', 0, 0, 0 FROM devices WHERE app_id = $TAPP_ID;
    UPDATE devices SET account_id = (SELECT a.id FROM accounts a WHERE a.app_id = devices.app_id AND a.account = devices.im_account)
      WHERE app_id = $TAPP_ID;
    ANALYZE;"
fi
start_node pg 1
push_and_wait pg; PG1_RATE=$RATE

if [ "$POLICY_DEVICES" -gt 0 ]; then
  echo "== (4) one node on PostgreSQL: Tencent all_member_push/im_push to $POLICY_DEVICES background accounts"
  BEFORE=$(pg_cpu)
  OUT=$(python3 bench/push_watch.py --port $((PORT + 1)) --key "$TKEY" --pid "${NODE_PIDS[0]}" --mock-pid "$MOCK_PID" \
    --count "$POLICY_DEVICES" --hz "$POLL_HZ" --tencent "$TENCENT_SDKAPPID" "$TENCENT_SECRET" --database "$PG_DB_URL")
  echo "$OUT" | grep -v '^RATE'
  pg_cpu_line "$BEFORE" "$POLICY_DEVICES" "$(echo "$OUT" | awk '/^RATE/ {print $2}')"
fi

echo "== (5) device lookups on one PostgreSQL node: GET /api/v1/devices/{token}, wrk -t2 -c$LOOKUP_CONNECTIONS -d$LOOKUP_DURATION"
TUISONG_BENCH_KEY=$KEY TUISONG_BENCH_SEEDED=$DEVICES wrk -t2 -c"$LOOKUP_CONNECTIONS" -d"$LOOKUP_DURATION" --latency \
  -s bench/lookup.lua "http://127.0.0.1:$((PORT + 1))" > "$WORK/wrk.txt" 2>&1 || true
grep -E "Requests/sec|50%|99%|Non-2xx|Socket errors" "$WORK/wrk.txt" | sed 's/^/   /' || true
python3 - "$WORK/wrk.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)\b", text)
if not rate or not p99:
    print("   wrk printed no figures:\n" + text)
    sys.exit(0)
ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
rps = float(rate.group(1))
ok = "met" if rps >= 20000 and ms < 10 else "NOT met"
print(f"   lookups: {rps:,.0f} req/s, p99 {ms:.2f} ms (target >= 20,000 req/s and p99 < 10 ms: {ok})")
EOF

echo "== (3) three nodes on PostgreSQL: the same push (status polled on node 1; RSS and CPU are node 1's)"
start_node pg 2
start_node pg 3
push_and_wait pg; PG3_RATE=$RATE
stop_nodes

echo "== summary: tag push to $DEVICES devices"
python3 -c "
s, p1, p3 = $SQLITE_RATE, $PG1_RATE, $PG3_RATE
print(f'   (1) SQLite, 1 node      {$DEVICES / s:6.2f} s  {s:>9,.0f} deliveries/s')
print(f'   (2) PostgreSQL, 1 node  {$DEVICES / p1:6.2f} s  {p1:>9,.0f} deliveries/s')
print(f'   (3) PostgreSQL, 3 nodes {$DEVICES / p3:6.2f} s  {p3:>9,.0f} deliveries/s')
r = p1 / s
print(f'   PostgreSQL 1 node / SQLite = {r:.2f} (target >= 0.7: {\"met\" if r >= 0.7 else \"NOT met\"}); 3 nodes / 1 node = {p3 / p1:.2f}')
print('   (all processes on this one machine: three nodes share its cores with PostgreSQL and the look-alike)')
"
