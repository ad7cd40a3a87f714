#!/usr/bin/env bash
# make bench-faults: notifications sent twice per kind of APNs fault. Not a test.
# For each fault kind: a fresh gateway and database, `tuisong apns-mock` with that fault
# (--faults) logging every request it processed, one tag push to BENCH_DEVICES devices; then
# duplicates = requests the mock processed − distinct device tokens among them.
# Expected: none, GOAWAY, a lowered stream limit → 0; a dropped connection → at most the
# streams that were in flight on it (≤ the stream limit per drop).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/tuisong}
DEVICES=${BENCH_DEVICES:-20000}
STREAMS=${BENCH_STREAMS:-100}
LATENCY=${BENCH_LATENCY_MS:-5}
PORT=${BENCH_PORT:-18091}
KINDS=${BENCH_KINDS:-"none goaway drop lowered storm"}
WORK=$(mktemp -d /tmp/tuisong-bench-faults.XXXXXX)
MOCK_PID=""
GW_PID=""
stop() {  # stop PID: SIGTERM, wait
  if [ -n "$1" ]; then kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; fi
}
cleanup() {
  stop "$GW_PID"; stop "$MOCK_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT

faults_for() {
  case "$1" in
    none) echo "{\"latencyMilliseconds\": $LATENCY}" ;;
    goaway) echo "{\"latencyMilliseconds\": $LATENCY, \"goawayAfterRequests\": 200}" ;;
    drop) echo "{\"latencyMilliseconds\": $LATENCY, \"dropConnectionAfterRequests\": 150}" ;;
    lowered) echo "{\"latencyMilliseconds\": $LATENCY, \"lowerStreamLimitAfterRequests\": 100, \"loweredStreamLimit\": 1}" ;;
    storm) echo "{\"latencyMilliseconds\": $LATENCY, \"goawayAfterRequests\": 200, \"dropConnectionAfterRequests\": 150, \"lowerStreamLimitAfterRequests\": 100, \"loweredStreamLimit\": 1}" ;;
    *) echo "unknown fault kind $1" >&2; exit 2 ;;
  esac
}

printf '%-8s %9s %9s %7s %10s %6s %8s %10s\n' kind devices delivered failed processed drops goaways duplicates
for KIND in $KINDS; do
  D=$WORK/$KIND; mkdir -p "$D"
  faults_for "$KIND" > "$D/faults.json"
  $BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams "$STREAMS" --faults "$D/faults.json" \
    --log-requests > "$D/mock.out" 2> "$D/mock.err" &
  MOCK_PID=$!
  for _ in $(seq 1 200); do grep -q '^}' "$D/mock.out" 2>/dev/null && break; sleep 0.1; done
  field() { python3 -c "import json; t=open('$D/mock.out').read(); print(json.loads(t[:t.index('\n}')+2])['$1'])"; }

  export TUISONG_DATABASE_PATH=$D/tuisong.db
  export TUISONG_SECURITY_MASTER_KEY_FILE=$D/master.key
  export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$D/admin-password
  export TUISONG_LISTEN_PORT=$PORT
  export TUISONG_APNS_LOCAL_MOCK=false
  export TUISONG_APNS_PRODUCTION_URL=$(field url)
  export TUISONG_APNS_SANDBOX_URL=$(field url)
  export TUISONG_APNS_CA_FILE=$(field ca_file)
  export TUISONG_LOG_LEVEL=error
  $BIN migrate > /dev/null  # other commands never create a database
  APP=$($BIN app create --name faults --bundle-id com.example.faults)
  APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
  $BIN credential add --app "$APP_ID" --environment production --p8 "$(field p8_file)" \
    --key-id "$(field key_id)" --team-id "$(field team_id)" > /dev/null
  python3 -c "
import sys
for i in range(1, $DEVICES + 1): sys.stdout.write('%064x\n' % i)" | $BIN device import --app "$APP_ID" --tag faults > /dev/null
  $BIN serve > "$D/serve.log" 2>&1 &
  GW_PID=$!
  for _ in $(seq 1 200); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

  COUNTS=$(python3 - "$PORT" "$KEY" <<'PY'
import json, sys, time, urllib.request
port, key = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}/api/v1"
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
msg = call("POST", "/push", {"audience": {"tag": "faults"}, "notification": {"alert": {"title": "Tuisong", "body": "faults"}}})
start = time.monotonic()
while True:
    c = call("GET", f"/messages/{msg['message_id']}")
    n = c["counts"]
    if c["state"] == "completed" and n["queued"] == 0 and n["sending"] == 0: break
    if time.monotonic() - start > 600: break
    time.sleep(0.1)
print(n["delivered"], n["failed"])
PY
)
  stop "$GW_PID"; GW_PID=""
  kill -INT "$MOCK_PID" 2>/dev/null || true; wait "$MOCK_PID" 2>/dev/null || true; MOCK_PID=""
  python3 - "$D/mock.out" "$KIND" "$DEVICES" $COUNTS <<'PY'
import json, sys
path, kind, devices, delivered, failed = sys.argv[1:6]
text = open(path).read()
tokens = [json.loads(l)["path"].rsplit("/", 1)[-1] for l in text.splitlines() if l.startswith('{"time"')]
# The mock's counters, printed as the last JSON object when it stops.
stats = json.loads(text[text.rindex("\n{\n") + 1:])
print(f"{kind:<8} {int(devices):>9,} {int(delivered):>9,} {int(failed):>7,} {len(tokens):>10,} "
      f"{stats['connections_dropped']:>6} {stats['goaways_sent']:>8} {len(tokens) - len(set(tokens)):>10,}")
PY
done
