#!/usr/bin/env bash
# make bench-messages: many small messages (chat lines) at the bundled look-alike on loopback,
# with its answers delayed by 0 ms and by 150 ms (a round trip from a Chinese data centre to
# Apple). Not a test. Issue #28.
#  (1) BENCH_MESSAGES (20,000) one-recipient messages, each to its own imported device, from
#      16 and from 64 concurrent API clients, through the native API, Tencent openim/sendmsg and
#      Easemob messages/users; SQLite, then PostgreSQL with 1 and with 3 nodes
#  (2) the same chat load offered at BENCH_CHAT_RATE (1,000) messages/s: p99 from acceptance
#  (3) that chat load while a BENCH_LARGE (1,000,000) device tag push runs: the chat p99, and
#      the fan-out's rate against its rate alone
# Each line: messages/s delivered, p50/p99 from API acceptance to completion (each message's
# created_at to completed_at in the database), the gateway's CPU per message and peak RSS.
# BENCH_ONLY picks parts: "sqlite", "postgresql", "mixed" (space-separated; default all);
# BENCH_APIS the APIs (default "native tencent easemob"); BENCH_LATENCIES (default "0 150");
# BENCH_CLIENTS the client counts (default "16 64"); BENCH_PG_NODES the PostgreSQL node counts
# (default "1 3").
# On PostgreSQL each line is followed by the server's work a message, counted by
# pg_stat_statements (loaded into the bench's own cluster): statements, buffer pages read or
# written, and the three statements run most. Unlike CPU a message on a shared machine, these do
# not move with the machine's load, so a change's effect on the server shows in one run.
# BENCH_DB_CPU=N puts PostgreSQL's processes on CPU N alone and everything else the bench starts
# on the other CPUs (the database server on a host of its own, as several nodes have it); SQLite's
# lines then leave CPU N idle, so the two compare what one set of gateway cores carries.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BENCH_DB_CPU:-}" ] && [ -z "${BENCH_DB_CPU_PINNED:-}" ]; then
  OTHER_CPUS=$(python3 -c "import os, sys; c = sorted(os.sched_getaffinity(0)); n = int(sys.argv[1])
if n not in c or len(c) < 2: sys.exit(f'BENCH_DB_CPU={n}: not one of this process\'s CPUs {c}, or no other left')
print(','.join(str(x) for x in c if x != n))" "$BENCH_DB_CPU")
  BENCH_DB_CPU_PINNED=1 exec taskset -c "$OTHER_CPUS" bash "$PWD/bench/messages.sh" "$@"
fi
BIN=${BENCH_BIN:-$PWD/.build/release/tuisong}
MESSAGES=${BENCH_MESSAGES:-20000}
LARGE=${BENCH_LARGE:-1000000}
CHAT_RATE=${BENCH_CHAT_RATE:-1000}
WORKERS=${BENCH_WORKERS:-2000}
CONNECTIONS=${BENCH_CONNECTIONS:-2}
ONLY=${BENCH_ONLY:-sqlite postgresql mixed}
APIS=${BENCH_APIS:-native tencent easemob}
LATENCIES=${BENCH_LATENCIES:-0 150}
PORT=${BENCH_PORT:-18093}
WORK=$(mktemp -d /tmp/tuisong-bench-messages.XXXXXX)
MOCK_PID=""
GW_PIDS=""
PG_URL=""
cleanup() {
  for p in $GW_PIDS $MOCK_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  [ -n "$PG_URL" ] && scripts/pg-test-cluster.sh stop "$PG_URL" > /dev/null 2>&1 || true
  if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT

TENCENT_SDKAPPID=1400000042
TENCENT_SECRET=5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e
EASEMOB_ORG=bench-org
EASEMOB_APP=chat
EASEMOB_CLIENT_ID=YXA6benchclient
EASEMOB_CLIENT_SECRET=YXA6benchsecret0123456789abcdef
TOKEN_BASE=0x5000000000

start_mock() {  # start_mock LATENCY_MS
  [ -n "$MOCK_PID" ] && { kill "$MOCK_PID" 2>/dev/null; wait "$MOCK_PID" 2>/dev/null || true; }
  rm -f "$WORK/mock.out"
  $BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams 1000 --streams-before-token 1000 \
    --latency-ms "$1" > "$WORK/mock.out" 2> "$WORK/mock.err" &
  MOCK_PID=$!
  for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
}
field() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }

# The gateway's environment for database $1 (a path or URL); nodes differ in port only.
gateway_env() {
  export TUISONG_DATABASE_PATH=$1
  export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
  export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
  export TUISONG_APNS_LOCAL_MOCK=false
  export TUISONG_APNS_PRODUCTION_URL=$(field url)
  export TUISONG_APNS_SANDBOX_URL=$(field url)
  export TUISONG_APNS_CA_FILE=$(field ca_file)
  export TUISONG_APNS_CONNECTIONS=$CONNECTIONS
  export TUISONG_DELIVERY_WORKERS=$WORKERS
  export TUISONG_LOG_LEVEL=warning
}

sql() {  # sql STATEMENTS: on the bench's database
  if [[ "$DATABASE" == postgres* ]]; then psql -XAtq -v ON_ERROR_STOP=1 -d "$DATABASE" -c "$1"
  else sqlite3 "$DATABASE" "$1"; fi
}

# One app per API, N devices each bound to account user<n> (background, so the IM policies send),
# the mock's APNs key as credential.
seed() {
  local n=$MESSAGES
  $BIN migrate > /dev/null  # other commands never create a database
  APP=$($BIN app create --name bench-chat --bundle-id com.example.bench)
  APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
  TENCENT_SECRET="$TENCENT_SECRET" $BIN app set-tencent --app "$APP_ID" --sdkappid "$TENCENT_SDKAPPID" \
    --secret-env TENCENT_SECRET > /dev/null
  EASEMOB_CLIENT_SECRET="$EASEMOB_CLIENT_SECRET" $BIN app set-easemob --app "$APP_ID" --org "$EASEMOB_ORG" \
    --app-name "$EASEMOB_APP" --client-id "$EASEMOB_CLIENT_ID" --client-secret-env EASEMOB_CLIENT_SECRET > /dev/null
  $BIN credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
    --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
  python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $n + 1): w('%064x\n' % ($TOKEN_BASE + i))
" | $BIN device import --app "$APP_ID" > /dev/null
  # Accounts bound directly in the database: twenty thousand account calls would take longer
  # than the bench (as bench/apns.sh does).
  sql "
    UPDATE devices SET im_account = 'user' || (id - (SELECT min(id) FROM devices WHERE app_id = $APP_ID) + 1),
      app_state = 'background' WHERE app_id = $APP_ID;
    INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
      SELECT app_id, im_account, 'background', 0, 0, 0 FROM devices WHERE app_id = $APP_ID;
    INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
      VALUES ($APP_ID, 'sender', 'background', 0, 0, 0);
    UPDATE devices SET account_id = (SELECT a.id FROM accounts a WHERE a.app_id = devices.app_id
      AND a.account = devices.im_account) WHERE app_id = $APP_ID;"
  # Easemob users for the same accounts, registered without a password.
  sql "
    INSERT INTO easemob_users (app_id, username, uuid, created_at, modified_at)
      SELECT app_id, account, 'uuid-' || account, 0, 0 FROM accounts WHERE app_id = $APP_ID;"
  # The rows above were written behind the planner's back (a real deployment binds accounts
  # over time and autovacuum keeps up): without fresh statistics PostgreSQL read a chat
  # message's one account by walking every bound device of the app (26 ms a page, not 0.1 ms).
  if [[ "$DATABASE" == postgres* ]]; then sql "ANALYZE"; fi
}

start_gateways() {  # start_gateways NODES
  GW_PIDS=""
  PORTS=""
  for i in $(seq 1 "$1"); do
    local port=$((PORT + i - 1))
    # Easemob's own limit (100 calls a second per app) would measure the limiter.
    echo '{"easemob": {"requests_per_second": 1000000, "burst": 1000000}}' > "$WORK/bench-config.json"
    TUISONG_LISTEN_PORT=$port $BIN serve --config "$WORK/bench-config.json" > "$WORK/serve-$i.log" 2>&1 &
    GW_PIDS="$GW_PIDS $!"
    PORTS="$PORTS $port"
    for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && break; sleep 0.1; done
  done
}

# With BENCH_DB_CPU: the cluster's postmaster and its processes onto that CPU; the backends it
# forks later inherit it. After the cluster's last restart, which starts new processes.
pin_database() {
  [ -n "${BENCH_DB_CPU:-}" ] || return 0
  local dir postmaster
  dir=$(sed -n 's/.*[?&]host=\([^&]*\).*/\1/p' <<<"$PG_URL")
  postmaster=$(head -1 "$dir/data/postmaster.pid")
  for p in "$postmaster" $(pgrep -P "$postmaster"); do taskset -a -p -c "$BENCH_DB_CPU" "$p" > /dev/null; done
}

stop_gateways() {
  for p in $GW_PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  GW_PIDS=""
}

easemob_token() {
  curl -fs -X POST "http://127.0.0.1:$PORT/$EASEMOB_ORG/$EASEMOB_APP/token" -H 'Content-Type: application/json' \
    -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$EASEMOB_CLIENT_ID\",\"client_secret\":\"$EASEMOB_CLIENT_SECRET\"}" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}

# The server's work a message since the last reset (pg_stat_statements), then reset: on
# PostgreSQL only, and only where the extension could be loaded.
server_work() {  # server_work MESSAGES
  [[ "$DATABASE" == postgres* && -n "${PG_STATEMENTS:-}" ]] || return 0
  psql -XAtq -F ' ' -d "$DATABASE" -c "
    WITH s AS (SELECT calls, shared_blks_hit + shared_blks_read + shared_blks_dirtied AS pages,
        left(regexp_replace(query, '\s+', ' ', 'g'), 60) AS q
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat_statements%')
    SELECT format('%-28s server a message: statements=%s pages=%s; most run: %s', '',
      round(sum(calls) / $1.0, 2), round(sum(pages) / $1.0, 1),
      (SELECT string_agg(format('%s x%s', q, round(calls / $1.0, 2)), ' | ' ORDER BY calls DESC)
        FROM (SELECT * FROM s ORDER BY calls DESC LIMIT 3) top))
    FROM s"
  psql -XAtq -d "$DATABASE" -c "SELECT pg_stat_statements_reset()" > /dev/null
}

run_load() {  # run_load API CLIENTS [RATE] [COUNT]: one chat load; the ports are spread over nodes
  local api=$1 clients=$2 rate=${3:-0} count=${4:-$MESSAGES}
  local auth=()
  case $api in
    native) auth=(--key "$KEY" --token-base "$TOKEN_BASE") ;;
    tencent) auth=(--tencent "$TENCENT_SDKAPPID" "$TENCENT_SECRET") ;;
    easemob) auth=(--easemob "$EASEMOB_ORG" "$EASEMOB_APP" "$(easemob_token)") ;;
  esac
  python3 bench/chat_load.py --ports "$(echo $PORTS | tr ' ' ',')" --api "$api" "${auth[@]}" --count "$count" \
    --clients "$clients" --rate "$rate" --pids "$(echo $GW_PIDS | tr ' ' ',')" --database "$DATABASE"
}

# (1) and (2) on one database: DATABASE set, gateways started by the caller.
chat_matrix() {  # chat_matrix LABEL
  for latency in $LATENCIES; do
    start_mock "$latency"
    gateway_env "$DATABASE"
    stop_gateways
    start_gateways "$NODES"
    for api in $APIS; do
      for clients in ${BENCH_CLIENTS:-16 64}; do
        server_work 1 > /dev/null
        printf '%-28s %-8s latency=%-4s clients=%-3s ' "$1" "$api" "$latency" "$clients"
        run_load "$api" "$clients"
        server_work "$MESSAGES"
      done
      if [ "$latency" = 150 ]; then
        server_work 1 > /dev/null
        printf '%-28s %-8s latency=%-4s offered=%s/s ' "$1" "$api" "$latency" "$CHAT_RATE"
        run_load "$api" 64 "$CHAT_RATE" $((CHAT_RATE * 10))
        server_work $((CHAT_RATE * 10))
      fi
    done
  done
  stop_gateways
}

if [[ " $ONLY " == *" sqlite "* ]]; then
  echo "== (1)(2) SQLite, one node: $MESSAGES one-recipient messages per line"
  start_mock 0
  DATABASE=$WORK/tuisong.db
  gateway_env "$DATABASE"
  seed
  NODES=1
  chat_matrix "sqlite"
fi

if [[ " $ONLY " == *" postgresql "* ]]; then
  PG_URL=$(scripts/pg-test-cluster.sh start)
  # pg_stat_statements (PostgreSQL's contrib, in Debian's server package) for server_work.
  if [ "$(psql -XAtq -d "$PG_URL" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_stat_statements'")" = 1 ] \
    && psql -XAtq -d "$PG_URL" -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" > /dev/null \
    && scripts/pg-test-cluster.sh restart "$PG_URL" > /dev/null; then
    PG_STATEMENTS=1
  fi
  pin_database
  for nodes in ${BENCH_PG_NODES:-1 3}; do
    DATABASE=$(python3 -c "import re,sys; m = re.match(r'^(postgres(?:ql)?://[^/?]*)/?([^?]*)(\?.*)?$', sys.argv[1]); print(f'{m.group(1)}/{sys.argv[2]}{m.group(3) or \"\"}')" "$PG_URL" "bench_messages_$nodes")
    psql -XAtq -d "$PG_URL" -c "CREATE DATABASE bench_messages_$nodes" > /dev/null
    if [ -n "${PG_STATEMENTS:-}" ]; then
      psql -XAtq -d "$DATABASE" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" > /dev/null || PG_STATEMENTS=""
    fi
    echo "== (1)(2) PostgreSQL, $nodes node(s): $MESSAGES one-recipient messages per line"
    start_mock 0
    gateway_env "$DATABASE"
    seed
    NODES=$nodes
    chat_matrix "postgresql nodes=$nodes"
  done
fi

if [[ " $ONLY " == *" mixed "* ]]; then
  echo "== (3) SQLite: chat at $CHAT_RATE messages/s while a $LARGE-device tag push runs"
  DATABASE=$WORK/mixed.db
  for latency in $LATENCIES; do
    start_mock "$latency"
    gateway_env "$DATABASE"
    if [ ! -f "$DATABASE" ]; then
      seed
      python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $LARGE + 1): w('%064x\n' % (0x6000000000 + i))
" | $BIN device import --app "$APP_ID" --tag everyone > /dev/null
    fi
    NODES=1
    start_gateways 1
    alone=$(python3 bench/push_watch.py --port "$PORT" --key "$KEY" --pid "$GW_PIDS" --tag everyone --count "$LARGE" --hz 4 \
      | awk '/^RATE/ {print $2}')
    python3 bench/push_watch.py --port "$PORT" --key "$KEY" --pid "$GW_PIDS" --tag everyone --count "$LARGE" --hz 4 \
      > "$WORK/fanout.out" &
    WATCH=$!
    sleep 2
    count=$((CHAT_RATE * 20))
    printf '%-28s %-8s latency=%-4s offered=%s/s during the fan-out ' "sqlite" native "$latency" "$CHAT_RATE"
    run_load native 64 "$CHAT_RATE" "$count"
    wait "$WATCH"
    with=$(awk '/^RATE/ {print $2}' "$WORK/fanout.out")
    python3 -c "print(f'   fan-out alone {float(\"$alone\"):,.0f}/s, with the chat load {float(\"$with\"):,.0f}/s: {float(\"$with\") / float(\"$alone\"):.2f}x')"
    stop_gateways
  done
fi
