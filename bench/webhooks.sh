#!/usr/bin/env bash
# make bench-webhooks: webhook events through the real path on loopback, SQLite, one release
# `tuisong serve`. Not a test. Issue #43.
#  (1) BENCH_WEBHOOK_EVENTS (50,000) devices the APNs look-alike answers 410 (--magic-tokens),
#      one tag push, an endpoint subscribed to delivery.failed: events/s the receiver
#      (bench/webhook_receiver.py, asyncio, 204 at once) gets
#  (2) a BENCH_WEBHOOK_PUSH (200,000; the issue's figure is 1,000,000) device tag push with 1 %
#      of the tokens answered 410, without any endpoint and then with one subscribed to
#      delivery.failed: the push's outcomes/s each time and their ratio (target ≥ 0.9)
# BENCH_WEBHOOK_REPEAT (1) repeats (2)'s pair. Loopback only; the whole run is bounded by
# BENCH_WEBHOOK_TIMEOUT (480 s) and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
# Stops itself: the whole run under `timeout`, which signals its process group (the look-alike,
# the receiver, the gateway and the driver) when the time is up.
if [ -z "${BENCH_WEBHOOK_TIMED:-}" ]; then
  BENCH_WEBHOOK_TIMED=1 exec timeout -k 10 "${BENCH_WEBHOOK_TIMEOUT:-480}" "$0" "$@"
fi
BIN=${BENCH_BIN:-$PWD/.build/release/tuisong}
EVENTS=${BENCH_WEBHOOK_EVENTS:-50000}
PUSH=${BENCH_WEBHOOK_PUSH:-200000}
REPEAT=${BENCH_WEBHOOK_REPEAT:-1}
PORT=${BENCH_PORT:-18097}
WORK=$(mktemp -d /tmp/tuisong-bench-webhooks.XXXXXX)
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
trap 'echo "bench-webhooks: stopped" >&2; exit 143' TERM INT

$BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams 1000 --streams-before-token 1000 --magic-tokens \
  > "$WORK/mock.out" 2> "$WORK/mock.err" &
PIDS="$!"
for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
field() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }

python3 bench/webhook_receiver.py > "$WORK/receiver.out" 2> "$WORK/receiver.err" &
PIDS="$PIDS $!"
for _ in $(seq 1 100); do [ -s "$WORK/receiver.out" ] && break; sleep 0.1; done
RECEIVER="http://127.0.0.1:$(head -1 "$WORK/receiver.out")"

export TUISONG_DATABASE_PATH=$WORK/tuisong.db
export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_APNS_PRODUCTION_URL=$(field url)
export TUISONG_APNS_SANDBOX_URL=$(field url)
export TUISONG_APNS_CA_FILE=$(field ca_file)
export TUISONG_LOG_LEVEL=warning
# The receiver is on loopback (local mode's default, said here so the bench does not depend on it).
export TUISONG_WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true

$BIN migrate > /dev/null
APP=$($BIN app create --name bench-webhooks --bundle-id com.example.bench)
APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
$BIN credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
  --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
# Tokens starting 410 are answered 410 Unregistered by the look-alike: every one of tag gone,
# one in a hundred of tag everyone.
python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $EVENTS + 1): w('410%061x\n' % (0x8000000000 + i))
" | $BIN device import --app "$APP_ID" --tag gone > /dev/null
python3 -c "
import sys
w = sys.stdout.write
for i in range(1, $PUSH + 1): w(('410%061x\n' if i % 100 == 0 else '%064x\n') % (0x7000000000 + i))
" | $BIN device import --app "$APP_ID" --tag everyone > /dev/null

TUISONG_LISTEN_PORT=$PORT $BIN serve > "$WORK/serve.log" 2>&1 &
GATEWAY=$!
PIDS="$PIDS $GATEWAY"
for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

python3 bench/webhook_bench.py --port "$PORT" --key "$KEY" --receiver "$RECEIVER" --database "$TUISONG_DATABASE_PATH" \
  --gone "$EVENTS" --everyone "$PUSH" --repeat "$REPEAT"
awk '/^tuisong_webhook_events_total/' <(curl -fs "http://127.0.0.1:$PORT/metrics" || true) | sed 's/^/   /'
