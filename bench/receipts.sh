#!/usr/bin/env bash
# make bench-receipts: delivery receipts (回执) ingested through the real path on loopback, SQLite,
# one release `tuisong serve`. Not a test. Issue #42.
#  Huawei's POSTs of 1,000 statuses and HarmonyOS's of 100 (the services' own batch sizes), signed
#  with X-HUAWEI-CALLBACK-ID under the app's callback credentials, each status a new (message,
#  phone) arrival: statuses/s and the time per POST (p50, p99), against the issue's targets
#  (≥ 50,000 statuses/s on SQLite, p99 per POST ≤ 50 ms).
# BENCH_RECEIPTS_STATUSES (200,000) statuses per service, BENCH_RECEIPTS_CONCURRENCY (4) POSTs in
# flight (a service posts from several machines), BENCH_RECEIPTS_MESSAGES (20) messages they
# belong to.
#  Then a Huawei tag push to BENCH_RECEIPTS_PUSH (1,000,000; 0 = none) devices, 1,000 tokens a
#  request to Huawei's look-alike, without receipts and with the look-alike posting a signed
#  receipt for every device (`apns-mock --receipts`, as AppGallery Connect would with the app's
#  receipt configuration), BENCH_RECEIPTS_PUSH_REPEAT (1) pairs alternately: each push's rate
#  (first call to last outcome) and the ratio with / without (the issue's target: ≥ 0.8).
# Loopback only; the whole run is bounded by BENCH_RECEIPTS_TIMEOUT (900 s) and stops what it
# started.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BENCH_RECEIPTS_TIMED:-}" ]; then
  BENCH_RECEIPTS_TIMED=1 exec timeout -k 10 "${BENCH_RECEIPTS_TIMEOUT:-900}" "$0" "$@"
fi
BIN=${BENCH_BIN:-$PWD/.build/release/tuisong}
STATUSES=${BENCH_RECEIPTS_STATUSES:-200000}
CONCURRENCY=${BENCH_RECEIPTS_CONCURRENCY:-4}
MESSAGES=${BENCH_RECEIPTS_MESSAGES:-20}
PUSH=${BENCH_RECEIPTS_PUSH:-1000000}
PUSH_REPEAT=${BENCH_RECEIPTS_PUSH_REPEAT:-1}
PORT=${BENCH_PORT:-18098}
WORK=$(mktemp -d /tmp/tuisong-bench-receipts.XXXXXX)
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
trap 'echo "bench-receipts: stopped" >&2; exit 143' TERM INT

# The messages the receipts name are sent to the APNs look-alike: a receipt counts only for a
# message the app has. Its Huawei look-alike posts receipts while $WORK/look-alike-receipts.json
# (the app's `credential show`) exists, none otherwise.
LOOK_ALIKE_RECEIPTS=()
if [ "$PUSH" -gt 0 ]; then LOOK_ALIKE_RECEIPTS=(--receipts "$WORK/look-alike-receipts.json"); fi
$BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams 500 --streams-before-token 500 \
  "${LOOK_ALIKE_RECEIPTS[@]}" > "$WORK/mock.out" 2> "$WORK/mock.err" &
MOCK=$!
PIDS="$MOCK"
for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
field() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }

export TUISONG_DATABASE_PATH=$WORK/tuisong.db
export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_APNS_PRODUCTION_URL=$(field url)
export TUISONG_APNS_SANDBOX_URL=$(field url)
export TUISONG_APNS_CA_FILE=$(field ca_file)
export TUISONG_TRANSPORTS_CA_FILE=$TUISONG_APNS_CA_FILE
export TUISONG_TRANSPORTS_HUAWEI_URL=$(field url)
export TUISONG_TRANSPORTS_HUAWEI_TOKEN_URL=$(field url)/oauth2/v3/token
export TUISONG_TRANSPORTS_CONNECTIONS_PER_HOST=2
export TUISONG_RECEIPTS_PUBLIC_URL=http://127.0.0.1:$PORT
export TUISONG_LOG_LEVEL=warning

$BIN migrate > /dev/null
APP=$($BIN app create --name bench-receipts --bundle-id com.example.bench)
APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
$BIN credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
  --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
huawei() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['huawei']['$1'])"; }
HUAWEI_SECRET=$(huawei client_secret) $BIN credential add --app "$APP_ID" --channel huawei \
  --vendor-app-id "$(huawei app_id)" --client-id "$(huawei client_id)" --client-secret-env HUAWEI_SECRET > /dev/null
if [ "$PUSH" -gt 0 ]; then
  python3 -c "
import sys
for i in range(1, $PUSH + 1): sys.stdout.write('huawei-receipts:%012d\n' % i)
" | $BIN device import --app "$APP_ID" --channel huawei --tag huawei-all > /dev/null
fi
# What an operator enters in AppGallery Connect (the callback user name and key per service).
$BIN credential show --app "$APP_ID" > "$WORK/receipts.json"

TUISONG_LISTEN_PORT=$PORT $BIN serve > "$WORK/serve.log" 2>&1 &
GATEWAY=$!
PIDS="$PIDS $GATEWAY"
for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

python3 bench/receipts_bench.py --port "$PORT" --key "$KEY" --app "$APP_ID" --master-key "$TUISONG_SECURITY_MASTER_KEY_FILE" \
  --registration "$WORK/receipts.json" --statuses "$STATUSES" --concurrency "$CONCURRENCY" --messages "$MESSAGES"
awk '/^tuisong_receipts_total/' <(curl -fs "http://127.0.0.1:$PORT/metrics" || true) | sed 's/^/   /'

if [ "$PUSH" -gt 0 ]; then
  echo "== a Huawei tag push to $PUSH devices (1,000 tokens a request), without and with a receipt per device"
  push() {  # push LABEL [--wait-arrived]: one push to every seeded device; prints its rate, the rest on stderr
    python3 bench/push_watch.py --port "$PORT" --key "$KEY" --pid "$GATEWAY" --mock-pid "$MOCK" --tag huawei-all \
      --count "$PUSH" --hz 4 ${2:-} > "$WORK/push.out"
    sed "s/^   /   $1: /" "$WORK/push.out" | grep -v '^RATE' >&2
    awk '/^RATE/ {print $2}' "$WORK/push.out"
  }
  RATIOS=""
  for _ in $(seq 1 "$PUSH_REPEAT"); do
    rm -f "$WORK/look-alike-receipts.json"
    WITHOUT=$(push "without receipts")
    cp "$WORK/receipts.json" "$WORK/look-alike-receipts.json"
    WITH=$(push "with receipts" --wait-arrived)
    RATIO=$(python3 -c "print(f'{$WITH / $WITHOUT:.2f}')")
    RATIOS="$RATIOS $RATIO"
    echo "   push with / without receipts: $WITH / $WITHOUT notifications/s = $RATIO [$(python3 -c "print('ok' if $RATIO >= 0.8 else 'BELOW')") ≥ 0.8]"
  done
  if [ "$PUSH_REPEAT" -gt 1 ]; then echo "   ratios:$RATIOS"; fi
fi
