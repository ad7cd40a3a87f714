#!/usr/bin/env bash
# make bench-apns: delivery throughput against the bundled APNs mock on loopback. Not a test.
#  (a) baseline: h2load straight at `tuisong apns-mock` (same payload, connections, streams),
#      BENCH_BASELINE_REQUESTS (200,000) requests, run again before each measurement below
#  (b) Tuisong: one tag push through the native API, from the API call to the last delivery
#      recorded, for BENCH_DEVICES (200,000) and then BENCH_LARGE (1,000,000) devices, each
#      watched by a poller of GET /api/v1/messages/{id} at BENCH_POLL_HZ (100) on one
#      keep-alive connection (bench/push_watch.py). BENCH_POLL_COMPARE=1 (the default) pushes
#      to the large tag a second time with a 4 Hz poller, to show what the polling costs.
#  (c) the per-recipient path: a Tencent all_member_push/im_push to BENCH_POLICY_DEVICES
#      (200,000) background accounts with one device each, through the Tencent delivery
#      policy (skip rules, a badge per account, a payload rendered per device). 0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/tuisong}
DEVICES=${BENCH_DEVICES:-200000}
LARGE=${BENCH_LARGE:-1000000}
CONNECTIONS=${BENCH_CONNECTIONS:-2}
STREAMS=${BENCH_STREAMS:-500}
PORT=${BENCH_PORT:-18090}
POLL_HZ=${BENCH_POLL_HZ:-100}
POLL_COMPARE=${BENCH_POLL_COMPARE:-1}
POLICY_DEVICES=${BENCH_POLICY_DEVICES:-200000}
WORK=$(mktemp -d /tmp/tuisong-bench-apns.XXXXXX)
MOCK_PID=""
GW_PID=""
cleanup() {
  for p in $GW_PID $MOCK_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# The mock allows the full stream count from the start so h2load (which opens all its streams
# before reading SETTINGS) is not refused; Tuisong honours whatever the server advertises.
$BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams "$STREAMS" --streams-before-token "$STREAMS" \
  > "$WORK/mock.out" 2> "$WORK/mock.err" &
MOCK_PID=$!
for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
field() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }
MOCK_URL=$(field url); MOCK_PORT=$(field port); TOKEN=$(field provider_token)

PAYLOAD='{"aps":{"alert":{"body":"bench","title":"Tuisong"},"badge":1,"sound":"default"},"id":42}'
printf '%s' "$PAYLOAD" > "$WORK/payload.json"
# The baseline is measured again right before every Tuisong measurement and each b/a uses the
# one next to it: this VM's speed moves by half between minutes (h2load alone has measured
# 92k–163k req/s within an hour), which a single baseline at the start turned into b/a noise.
BASELINE_REQUESTS=${BENCH_BASELINE_REQUESTS:-200000}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
baseline() {  # sets BASELINE (req/s) from one h2load run; prints its summary and the mock's CPU
  local before; before=$(cpu_ticks "$MOCK_PID")
  h2load -n "$BASELINE_REQUESTS" -c "$CONNECTIONS" -m "$STREAMS" --data="$WORK/payload.json" \
    -H "authorization: bearer $TOKEN" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
    "https://127.0.0.1:$MOCK_PORT/3/device/$(python3 -c 'print("ab"*32)')" > "$WORK/h2load.txt" 2>&1 || true
  grep -E "^finished in|requests:|status codes" "$WORK/h2load.txt" | sed 's/^/   (a) /'
  BASELINE=$(awk '/^finished in/ {gsub(",","",$4); print $4}' "$WORK/h2load.txt")
  python3 -c "import os; print(f'   (a) mock CPU per request: {($(cpu_ticks "$MOCK_PID") - $before) / os.sysconf(\"SC_CLK_TCK\") / $BASELINE_REQUESTS * 1e6:.1f} µs')"
}
echo "== (a) baseline, before each measurement: h2load -n $BASELINE_REQUESTS -c $CONNECTIONS -m $STREAMS against tuisong apns-mock"

export TUISONG_DATABASE_PATH=$WORK/tuisong.db
export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_LISTEN_PORT=$PORT
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_APNS_PRODUCTION_URL=$MOCK_URL
export TUISONG_APNS_SANDBOX_URL=$MOCK_URL
export TUISONG_APNS_CA_FILE=$(field ca_file)
export TUISONG_APNS_CONNECTIONS=$CONNECTIONS
export TUISONG_LOG_LEVEL=warning

$BIN migrate > /dev/null  # other commands never create a database
APP=$($BIN app create --name bench --bundle-id com.example.bench)
APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
$BIN credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
  --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null

seed() {  # seed FROM TO TAG
  python3 -c "
import sys
w = sys.stdout.write
for i in range($1, $2 + 1): w('%064x\n' % i)
" | $BIN device import --app "$APP_ID" --tag "$3" > /dev/null
}

push_and_wait() {  # push_and_wait TAG COUNT [HZ]
  python3 bench/push_watch.py --port "$PORT" --key "$KEY" --pid "$GW_PID" --mock-pid "$MOCK_PID" --tag "$1" --count "$2" --hz "${3:-$POLL_HZ}"
}

ratio() {  # ratio OUTPUT: b/a of push_watch.py's output
  python3 -c "print(f'   ratio b/a = {$(echo "$1" | awk '/^RATE/ {print $2}') / $BASELINE:.2f} (baseline {$BASELINE:,.0f} req/s)')"
}

# The per-recipient bench's app: Tencent settings, the mock's key, BENCH_POLICY_DEVICES devices
# each bound to its own account, every account in the background (what report_background does;
# set directly in the database because a million device calls would take longer than the push).
TENCENT_SDKAPPID=1400000042
TENCENT_SECRET=5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e
if [ "$POLICY_DEVICES" -gt 0 ]; then
  TAPP=$($BIN app create --name bench-tencent --bundle-id com.example.bench)
  TAPP_ID=$(echo "$TAPP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  TKEY=$(echo "$TAPP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
  TENCENT_SECRET="$TENCENT_SECRET" $BIN app set-tencent --app "$TAPP_ID" --sdkappid "$TENCENT_SDKAPPID" \
    --secret-env TENCENT_SECRET > /dev/null
  $BIN credential add --app "$TAPP_ID" --environment production --p8 "$(field p8_file)" \
    --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
  python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $POLICY_DEVICES + 1): w('%064x\\n' % (0x7000000000 + i))
" | $BIN device import --app "$TAPP_ID" > /dev/null
  sqlite3 "$TUISONG_DATABASE_PATH" "
    UPDATE devices SET im_account = 'user' || id, app_state = 'background' WHERE app_id = $TAPP_ID;
    INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
      SELECT app_id, im_account, 'background', 0, 0, 0 FROM devices WHERE app_id = $TAPP_ID;
    UPDATE devices SET account_id = (SELECT a.id FROM accounts a WHERE a.app_id = devices.app_id AND a.account = devices.im_account)
      WHERE app_id = $TAPP_ID;"
fi

echo "== seeding $DEVICES devices tagged bench-a"
seed 1 "$DEVICES" bench-a
$BIN serve > "$WORK/serve.log" 2>&1 &
GW_PID=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

echo "== (b) Tuisong: tag push to $DEVICES devices through POST /api/v1/push, polled at $POLL_HZ Hz"
baseline
OUT=$(push_and_wait bench-a "$DEVICES"); echo "$OUT" | grep -v '^RATE'; ratio "$OUT"

if [ "$POLICY_DEVICES" -gt 0 ]; then
  echo "== (c) per-recipient path: Tencent all_member_push/im_push to $POLICY_DEVICES background accounts, polled at $POLL_HZ Hz"
  baseline
  OUT=$(python3 bench/push_watch.py --port "$PORT" --key "$TKEY" --pid "$GW_PID" --mock-pid "$MOCK_PID" --count "$POLICY_DEVICES" \
    --hz "$POLL_HZ" --tencent "$TENCENT_SDKAPPID" "$TENCENT_SECRET" --database "$TUISONG_DATABASE_PATH")
  echo "$OUT" | grep -v '^RATE'; ratio "$OUT"
fi

if [ "$LARGE" -gt 0 ]; then
  echo "== seeding $LARGE devices tagged bench-b (server running)"
  seed $((DEVICES + 1)) $((DEVICES + LARGE)) bench-b
  echo "== (b) Tuisong: tag push to $LARGE devices, polled at $POLL_HZ Hz"
  baseline
  OUT=$(push_and_wait bench-b "$LARGE"); echo "$OUT" | grep -v '^RATE'; ratio "$OUT"
  if [ "$POLL_COMPARE" = 1 ]; then
    echo "== (b) the same $LARGE devices again, polled at 4 Hz (the cost of polling at $POLL_HZ Hz)"
    baseline
    OUT4=$(push_and_wait bench-b "$LARGE" 4); echo "$OUT4" | grep -v '^RATE'; ratio "$OUT4"
    python3 -c "print(f'   polling at $POLL_HZ Hz costs {(1 - $(echo "$OUT" | awk '/^RATE/ {print $2}') / $(echo "$OUT4" | awk '/^RATE/ {print $2}')) * 100:.1f} % of the 4 Hz rate')"
  fi
fi
