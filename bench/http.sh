#!/usr/bin/env bash
# make bench-http: device registration and lookup throughput, and memory with 1,000,000
# devices stored. Release build, wrk on loopback, a throwaway database. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/tuisong}
DURATION=${BENCH_DURATION:-15s}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
SEEDED=${BENCH_SEEDED:-1000000}
PORT=${BENCH_PORT:-18080}
WORK=$(mktemp -d /tmp/tuisong-bench-http.XXXXXX)
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

export TUISONG_DATABASE_PATH=$WORK/tuisong.db
export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_LISTEN_PORT=$PORT
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_LOG_LEVEL=warning

$BIN migrate > /dev/null  # other commands never create a database
KEY=$($BIN app create --name bench --bundle-id com.example.bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
APP_ID=$($BIN app list | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
export TUISONG_BENCH_KEY=$KEY TUISONG_BENCH_SEEDED=$SEEDED

echo "== seeding $SEEDED devices (tuisong device import)"
start=$(date +%s.%N)
python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $SEEDED + 1): w('%064x\n' % i)
" | $BIN device import --app "$APP_ID" --environment production > /dev/null
echo "seeded in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"

$BIN serve > "$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break
  sleep 0.1
done
rss() { awk '/VmRSS/ {printf "%.1f MB", $2/1024}' "/proc/$PID/status"; }
echo "== server RSS after start with $SEEDED devices stored: $(rss)"

echo "== device lookup: GET /api/v1/devices/{token}, wrk -t2 -c$CONNECTIONS -d$DURATION"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s bench/lookup.lua "http://127.0.0.1:$PORT" | grep -E "Requests/sec|99%|50%|Non-2xx|Socket errors" || true
echo "   RSS: $(rss)"

echo "== device registration: PUT /api/v1/devices/{token} (distinct tokens), wrk -t2 -c$CONNECTIONS -d$DURATION"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s bench/register.lua "http://127.0.0.1:$PORT" | grep -E "Requests/sec|99%|50%|Non-2xx|Socket errors" || true
echo "   RSS: $(rss)"
echo "   devices stored: $(sqlite3 "$TUISONG_DATABASE_PATH" 'select count(*) from devices')"
