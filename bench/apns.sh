#!/usr/bin/env bash
# make bench-apns: delivery throughput against the bundled APNs mock on loopback. Not a test.
#  (a) baseline: h2load straight at `tuisong apns-mock` (same payload, connections, streams)
#  (b) Tuisong: one tag push through the native API, from the API call to the last delivery
#      recorded, for BENCH_DEVICES (200,000) and then BENCH_LARGE (1,000,000) devices.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.build/release/tuisong
DEVICES=${BENCH_DEVICES:-200000}
LARGE=${BENCH_LARGE:-1000000}
CONNECTIONS=${BENCH_CONNECTIONS:-2}
STREAMS=${BENCH_STREAMS:-500}
PORT=${BENCH_PORT:-18090}
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
echo "== (a) baseline: h2load -n $DEVICES -c $CONNECTIONS -m $STREAMS against tuisong apns-mock"
h2load -n "$DEVICES" -c "$CONNECTIONS" -m "$STREAMS" --data="$WORK/payload.json" \
  -H "authorization: bearer $TOKEN" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" \
  "https://127.0.0.1:$MOCK_PORT/3/device/$(python3 -c 'print("ab"*32)')" > "$WORK/h2load.txt" 2>&1 || true
grep -E "^finished in|requests:|status codes" "$WORK/h2load.txt"
BASELINE=$(awk '/^finished in/ {gsub(",","",$4); print $4}' "$WORK/h2load.txt")

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

push_and_wait() {  # push_and_wait TAG COUNT
  python3 - "$1" "$2" "$PORT" "$KEY" "$GW_PID" <<'PY'
import json, sys, time, urllib.request
tag, count, port, key, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
base = f"http://127.0.0.1:{port}/api/v1"
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
def rss():
    fields = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
start = time.monotonic()
msg = call("POST", "/push", {"audience": {"tag": tag},
    "notification": {"alert": {"title": "Tuisong", "body": "bench"}, "badge": 1, "sound": "default", "custom": {"id": 42}}})
first = None; peak = 0; status = {}
while True:
    status = call("GET", f"/messages/{msg['message_id']}")
    c = status["counts"]
    if first is None and c["delivered"] > 0: first = time.monotonic() - start
    peak = max(peak, rss()[0])
    if status["state"] == "completed" and c["queued"] == 0 and c["sending"] == 0: break
    if time.monotonic() - start > 900: print("timed out", status); break
    time.sleep(0.02)
elapsed = time.monotonic() - start
c = status["counts"]
print(f"   {count} devices: {c['delivered']} delivered, {c['failed']} failed in {elapsed:.2f} s "
      f"= {c['delivered'] / elapsed:,.0f} notifications/s; first delivery after {first * 1000:.0f} ms; "
      f"peak RSS {max(peak, rss()[1]):.1f} MB (sampled {peak:.1f} MB)")
print(f"RATE {c['delivered'] / elapsed:.0f}")
PY
}

echo "== seeding $DEVICES devices tagged bench-a"
seed 1 "$DEVICES" bench-a
$BIN serve > "$WORK/serve.log" 2>&1 &
GW_PID=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

echo "== (b) Tuisong: tag push to $DEVICES devices through POST /api/v1/push"
OUT=$(push_and_wait bench-a "$DEVICES"); echo "$OUT" | grep -v '^RATE'
RATE=$(echo "$OUT" | awk '/^RATE/ {print $2}')
python3 -c "print(f'   ratio b/a = {$RATE / $BASELINE:.2f} (baseline {$BASELINE:,.0f} req/s)')"

if [ "$LARGE" -gt 0 ]; then
  echo "== seeding $LARGE devices tagged bench-b (server running)"
  seed $((DEVICES + 1)) $((DEVICES + LARGE)) bench-b
  echo "== (b) Tuisong: tag push to $LARGE devices"
  push_and_wait bench-b "$LARGE" | grep -v '^RATE'
fi
