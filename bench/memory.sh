#!/usr/bin/env bash
# make bench-memory: the gateway's resident memory over BENCH_REQUESTS (100,000) mixed requests
# from BENCH_CONNECTIONS (8) keep-alive connections on loopback: every API family (native,
# Baidu, Tencent, Easemob), the pushes they accept delivered to `tuisong apns-mock`, and the bad
# input a fuzzer sends (broken JSON, wrong signatures, unknown paths, 64 KiB–1 MiB bodies).
# Prints VmRSS and VmHWM every 10,000 requests (issue #33 item 9). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/tuisong}
REQUESTS=${BENCH_REQUESTS:-100000}
CONNECTIONS=${BENCH_CONNECTIONS:-8}
DEVICES=${BENCH_DEVICES:-20000}
PORT=${BENCH_PORT:-18095}
WORK=$(mktemp -d /tmp/tuisong-bench-memory.XXXXXX)
MOCK_PID=""
GW_PID=""
cleanup() {
  # A wrapper (BENCH_WRAP: heaptrack, env) runs the gateway as its child: stop that first.
  [ -n "$GW_PID" ] && pkill -TERM -P "$GW_PID" 2>/dev/null && sleep 3 || true
  for p in $GW_PID $MOCK_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT

BAIDU_APIKEY=benchMemoryApiKey0123456
BAIDU_SECRET=0123456789ABCDEF0123456789ABCDEF
TENCENT_SDKAPPID=1400000043
TENCENT_SECRET=5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e
EASEMOB_ORG=bench-org
EASEMOB_APP=memory
EASEMOB_CLIENT_ID=YXA6benchclient
EASEMOB_CLIENT_SECRET=YXA6benchsecret0123456789abcdef

$BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams 1000 --streams-before-token 1000 \
  > "$WORK/mock.out" 2> "$WORK/mock.err" &
MOCK_PID=$!
for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
field() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }

export TUISONG_DATABASE_PATH=$WORK/tuisong.db
export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_LISTEN_PORT=$PORT
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_APNS_PRODUCTION_URL=$(field url)
export TUISONG_APNS_SANDBOX_URL=$(field url)
export TUISONG_APNS_CA_FILE=$(field ca_file)
export TUISONG_LOG_LEVEL=warning

$BIN migrate > /dev/null  # other commands never create a database
APP=$($BIN app create --name bench-memory --bundle-id com.example.bench)
APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
BAIDU_SECRET="$BAIDU_SECRET" $BIN app set-baidu --app "$APP_ID" --apikey "$BAIDU_APIKEY" --secret-env BAIDU_SECRET > /dev/null
TENCENT_SECRET="$TENCENT_SECRET" $BIN app set-tencent --app "$APP_ID" --sdkappid "$TENCENT_SDKAPPID" \
  --secret-env TENCENT_SECRET > /dev/null
EASEMOB_CLIENT_SECRET="$EASEMOB_CLIENT_SECRET" $BIN app set-easemob --app "$APP_ID" --org "$EASEMOB_ORG" \
  --app-name "$EASEMOB_APP" --client-id "$EASEMOB_CLIENT_ID" --client-secret-env EASEMOB_CLIENT_SECRET > /dev/null
$BIN credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
  --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
python3 -c "
import sys
for i in range($DEVICES): sys.stdout.write('%064x\n' % (0x7000000000 + i))
" | $BIN device import --app "$APP_ID" > /dev/null
# A thousand IM accounts, each with the devices whose number ends like its own (as bench/messages.sh).
sqlite3 "$TUISONG_DATABASE_PATH" "
  UPDATE devices SET im_account = 'user' || ((id - 1) % 1000), app_state = 'background' WHERE app_id = $APP_ID;
  INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
    SELECT DISTINCT app_id, im_account, 'background', 0, 0, 0 FROM devices WHERE app_id = $APP_ID;
  INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
    VALUES ($APP_ID, 'sender', 'background', 0, 0, 0);
  UPDATE devices SET account_id = (SELECT a.id FROM accounts a WHERE a.app_id = devices.app_id
    AND a.account = devices.im_account) WHERE app_id = $APP_ID;
  INSERT INTO easemob_users (app_id, username, uuid, created_at, modified_at)
    SELECT app_id, account, 'uuid-' || account, 0, 0 FROM accounts WHERE app_id = $APP_ID;"

# The vendors' own rate limits would answer most calls from the limiter.
cat > "$WORK/config.json" <<JSON
{"easemob": {"requests_per_second": 1000000, "burst": 1000000},
 "baidu": {"requests_per_second": 1000000, "burst": 1000000}}
JSON
${BENCH_WRAP:-} $BIN serve --config "$WORK/config.json" > "$WORK/serve.log" 2>&1 &
GW_PID=$!
for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done
TOKEN=$(curl -fs -X POST "http://127.0.0.1:$PORT/$EASEMOB_ORG/$EASEMOB_APP/token" -H 'Content-Type: application/json' \
  -d "{\"grant_type\":\"client_credentials\",\"client_id\":\"$EASEMOB_CLIENT_ID\",\"client_secret\":\"$EASEMOB_CLIENT_SECRET\"}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')

echo "== $REQUESTS mixed requests, $CONNECTIONS connections, $DEVICES devices ($(git rev-parse --short HEAD))"
python3 bench/mixed_requests.py --port "$PORT" --pid "$GW_PID" --key "$KEY" --count "$REQUESTS" \
  --connections "$CONNECTIONS" --devices "$DEVICES" --baidu "$BAIDU_APIKEY" "$BAIDU_SECRET" \
  --tencent "$TENCENT_SDKAPPID" "$TENCENT_SECRET" --easemob "$EASEMOB_ORG" "$EASEMOB_APP" "$TOKEN"
sleep 5
python3 -c "
from bench.mixed_requests import memory_mb
rss, peak, anon = memory_mb($GW_PID)
print(f'5 s after the last request: rss {rss:.1f} MB, peak {peak:.1f} MB, anonymous {anon:.1f} MB')" 2>/dev/null \
  || grep -E 'VmRSS|VmHWM' /proc/$GW_PID/status
