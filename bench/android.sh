#!/usr/bin/env bash
# make bench-android: Android delivery throughput against the bundled look-alikes on loopback.
# Not a test.
#  (a) baseline: h2load straight at `tuisong apns-mock`'s FCM send endpoint (one token per
#      request, a valid access token), BENCH_BASELINE_REQUESTS (200,000) requests, run again
#      before each FCM measurement; for Huawei, h2load posting 1,000-token requests
#  (b) an FCM tag push to BENCH_DEVICES (200,000) devices through POST /api/v1/push, from the
#      API call to the last delivery recorded, polled at BENCH_POLL_HZ (4)
#  (c) a Huawei tag push to BENCH_DEVICES devices, 1,000 tokens a request
#  (d) a mixed tag, half APNs and half FCM, against each half alone
#  (e) the per-recipient path with half the accounts on Android: a Tencent all_member_push to
#      BENCH_POLICY_DEVICES (200,000) background accounts, one device each, half APNs and half
#      FCM, against h2load at the FCM look-alike (the slower channel's). 0 skips it.
#  (f) a HarmonyOS NEXT tag push to BENCH_DEVICES devices through Push Kit v3's look-alike,
#      1,000 tokens a request, against h2load posting the same 1,000-token requests (a PS256
#      service-account JWT signed with openssl, push-type 0)
# BENCH_SCENARIOS (default "b c d e f") picks the scenarios; only their devices are seeded, so
# BENCH_SCENARIOS=f measures the HarmonyOS push alone (its peak RSS is then its own).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/tuisong}
DEVICES=${BENCH_DEVICES:-200000}
CONNECTIONS=${BENCH_CONNECTIONS:-2}
STREAMS=${BENCH_STREAMS:-500}
PORT=${BENCH_PORT:-18091}
POLL_HZ=${BENCH_POLL_HZ:-4}
WORKERS=${BENCH_WORKERS:-2000}
POLICY_DEVICES=${BENCH_POLICY_DEVICES:-200000}
SCENARIOS=" ${BENCH_SCENARIOS:-b c d e f} "
run() { [[ "$SCENARIOS" == *" $1 "* ]]; }
WORK=$(mktemp -d /tmp/tuisong-bench-android.XXXXXX)
MOCK_PID=""
GW_PID=""
cleanup() {
  for p in $GW_PID $MOCK_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT

$BIN apns-mock --port 0 --setup "$WORK/mock.json" --max-streams "$STREAMS" --streams-before-token "$STREAMS" \
  > "$WORK/mock.out" 2> "$WORK/mock.err" &
MOCK_PID=$!
for _ in $(seq 1 100); do grep -q '^}' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
banner() { python3 -c "import json,sys; t=open('$WORK/mock.out').read(); b=json.loads(t[:t.index('\n}')+2]); print(eval('b' + sys.argv[1]))" "$1"; }
MOCK_URL=$(banner "['url']"); MOCK_PORT=$(banner "['port']"); CA_FILE=$(banner "['ca_file']")
SERVICE_ACCOUNT=$(banner "['fcm']['service_account_file']"); PROJECT=$(banner "['fcm']['project_id']")
HUAWEI_APP=$(banner "['huawei']['app_id']"); HUAWEI_CLIENT=$(banner "['huawei']['client_id']")
HUAWEI_SECRET=$(banner "['huawei']['client_secret']")
HARMONY_ACCOUNT=$(banner "['harmony']['service_account_file']"); HARMONY_PROJECT=$(banner "['harmony']['project_id']")

# Access tokens for h2load, obtained the way the transports do: an RS256 assertion signed
# with openssl (FCM), client credentials (Huawei).
FCM_TOKEN=$(python3 - "$SERVICE_ACCOUNT" "$MOCK_URL" "$CA_FILE" <<'EOF'
import base64, json, subprocess, sys, time, urllib.parse
account = json.load(open(sys.argv[1]))
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
now = int(time.time())
header = {"alg": "RS256", "typ": "JWT", "kid": account["private_key_id"]}
claims = {"iss": account["client_email"], "scope": "https://www.googleapis.com/auth/firebase.messaging",
          "aud": account["token_uri"], "iat": now, "exp": now + 3600}
signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
key = "/tmp/" + str(now) + "-bench-key.pem"
open(key, "w").write(account["private_key"])
signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=signing_input.encode(),
                           capture_output=True, check=True).stdout
subprocess.run(["rm", "-f", key])
form = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                               "assertion": signing_input + "." + b64(signature)})
out = subprocess.run(["curl", "-s", "--cacert", sys.argv[3], "-d", form, account["token_uri"]],
                     capture_output=True, check=True).stdout
print(json.loads(out)["access_token"])
EOF
)
# HarmonyOS: no token endpoint; the service account's PS256 JWT (SHA256withRSA/PSS, salt 32) is
# the bearer token itself, as the harmony transport signs it.
HARMONY_JWT=$(python3 - "$HARMONY_ACCOUNT" <<'EOF'
import base64, json, os, subprocess, sys, tempfile, time
account = json.load(open(sys.argv[1]))
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
now = int(time.time())
header = {"kid": account["key_id"], "typ": "JWT", "alg": "PS256"}
claims = {"iss": account["sub_account"], "aud": "https://oauth-login.cloud.huawei.com/oauth2/v3/token",
          "iat": now, "exp": now + 3600}
signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
fd, key = tempfile.mkstemp(suffix=".pem")
os.write(fd, account["private_key"].encode()); os.close(fd)
signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key, "-sigopt", "rsa_padding_mode:pss",
                            "-sigopt", "rsa_pss_saltlen:32"], input=signing_input.encode(),
                           capture_output=True, check=True).stdout
os.remove(key)
print(signing_input + "." + b64(signature))
EOF
)
HUAWEI_TOKEN=$(curl -s --cacert "$CA_FILE" -d "grant_type=client_credentials&client_id=$HUAWEI_CLIENT&client_secret=$HUAWEI_SECRET" \
  "$MOCK_URL/oauth2/v3/token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')

# What the gateway sends an FCM device for the bench's payload (FCMMessage's rendering).
printf '%s' '{"message":{"android":{"notification":{"notification_count":1,"sound":"default"},"priority":"HIGH"},"data":{"id":"42"},"notification":{"body":"bench","title":"Tuisong"},"token":"fcm-bench-token-1"}}' \
  > "$WORK/fcm.json"
python3 -c "
import json
tokens = ['hw-bench-%06d' % i for i in range(1000)]
print(json.dumps({'message': {'android': {'notification': {'body': 'bench', 'click_action': {'type': 3}, 'importance': 'NORMAL', 'title': 'Tuisong'}, 'urgency': 'HIGH'}, 'data': '{\"id\":\"42\"}', 'token': tokens}, 'validate_only': False}))
" > "$WORK/huawei.json"
# What the gateway sends a HarmonyOS device for the bench's payload (HarmonyMessage's rendering).
python3 -c "
import json
tokens = ['harmony-bench:%012d' % i for i in range(1000)]
print(json.dumps({'payload': {'notification': {'badge': {'setNum': 1}, 'body': 'bench', 'category': 'MARKETING', 'clickAction': {'actionType': 0, 'data': {'id': 42}}, 'title': 'Tuisong'}}, 'target': {'token': tokens}}))
" > "$WORK/harmony.json"

BASELINE_REQUESTS=${BENCH_BASELINE_REQUESTS:-200000}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
baseline() {  # sets BASELINE (req/s) from one h2load run at the FCM look-alike
  h2load -n "$BASELINE_REQUESTS" -c "$CONNECTIONS" -m "$STREAMS" --data="$WORK/fcm.json" \
    -H "authorization: Bearer $FCM_TOKEN" -H "content-type: application/json" \
    "$MOCK_URL/v1/projects/$PROJECT/messages:send" > "$WORK/h2load.txt" 2>&1 || true
  grep -E "^finished in|requests:|status codes" "$WORK/h2load.txt" | sed 's/^/   (a) /'
  BASELINE=$(awk '/^finished in/ {gsub(",","",$4); print $4}' "$WORK/h2load.txt")
}
huawei_baseline() {  # sets HUAWEI_BASELINE (tokens/s): 1,000-token requests, at least 2,000 of them
  local requests=$((DEVICES / 1000 > 2000 ? DEVICES / 1000 : 2000))
  h2load -n "$requests" -c "$CONNECTIONS" -m 50 --data="$WORK/huawei.json" \
    -H "authorization: Bearer $HUAWEI_TOKEN" -H "content-type: application/json" \
    "$MOCK_URL/v1/$HUAWEI_APP/messages:send" > "$WORK/h2load-huawei.txt" 2>&1 || true
  grep -E "^finished in|requests:|status codes" "$WORK/h2load-huawei.txt" | sed 's/^/   (a) /'
  HUAWEI_BASELINE=$(awk '/^finished in/ {gsub(",","",$4); print $4 * 1000}' "$WORK/h2load-huawei.txt")
}
harmony_baseline() {  # sets HARMONY_BASELINE (tokens/s): 1,000-token v3 requests, at least 2,000 of them
  local requests=$((DEVICES / 1000 > 2000 ? DEVICES / 1000 : 2000))
  h2load -n "$requests" -c "$CONNECTIONS" -m 50 --data="$WORK/harmony.json" \
    -H "authorization: Bearer $HARMONY_JWT" -H "content-type: application/json" -H "push-type: 0" \
    "$MOCK_URL/v3/$HARMONY_PROJECT/messages:send" > "$WORK/h2load-harmony.txt" 2>&1 || true
  grep -E "^finished in|requests:|status codes" "$WORK/h2load-harmony.txt" | sed 's/^/   (a) /'
  HARMONY_BASELINE=$(awk '/^finished in/ {gsub(",","",$4); print $4 * 1000}' "$WORK/h2load-harmony.txt")
}

export TUISONG_DATABASE_PATH=$WORK/tuisong.db
export TUISONG_SECURITY_MASTER_KEY_FILE=$WORK/master.key
export TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE=$WORK/admin-password
export TUISONG_LISTEN_PORT=$PORT
export TUISONG_APNS_LOCAL_MOCK=false
export TUISONG_APNS_PRODUCTION_URL=$MOCK_URL
export TUISONG_APNS_SANDBOX_URL=$MOCK_URL
export TUISONG_APNS_CA_FILE=$CA_FILE
export TUISONG_APNS_CONNECTIONS=$CONNECTIONS
export TUISONG_TRANSPORTS_CA_FILE=$CA_FILE
export TUISONG_TRANSPORTS_FCM_URL=$MOCK_URL
export TUISONG_TRANSPORTS_FCM_CONNECTIONS=$CONNECTIONS  # FCM's HTTP/2 pool, as h2load's -c
export TUISONG_TRANSPORTS_HUAWEI_URL=$MOCK_URL
export TUISONG_TRANSPORTS_HUAWEI_TOKEN_URL=$MOCK_URL/oauth2/v3/token
export TUISONG_TRANSPORTS_HARMONY_URL=$MOCK_URL
export TUISONG_TRANSPORTS_CONNECTIONS_PER_HOST=$CONNECTIONS
export TUISONG_DELIVERY_WORKERS=$WORKERS
export TUISONG_LOG_LEVEL=warning

$BIN migrate > /dev/null  # other commands never create a database
APP=$($BIN app create --name bench --bundle-id com.example.bench)
APP_ID=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
KEY=$(echo "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
$BIN credential add --app "$APP_ID" --environment production --p8 "$(banner "['p8_file']")" \
  --key-id "$(banner "['key_id']")" --team-id "$(banner "['team_id']")" > /dev/null
$BIN credential add --app "$APP_ID" --channel fcm --service-account "$SERVICE_ACCOUNT" > /dev/null
HUAWEI_SECRET="$HUAWEI_SECRET" $BIN credential add --app "$APP_ID" --channel huawei --vendor-app-id "$HUAWEI_APP" \
  --client-id "$HUAWEI_CLIENT" --client-secret-env HUAWEI_SECRET > /dev/null
$BIN credential add --app "$APP_ID" --channel harmony --service-account "$HARMONY_ACCOUNT" > /dev/null

seed() {  # seed CHANNEL FROM TO TAG (a registration sets a device's tags: one tag per device)
  python3 -c "
import sys
w = sys.stdout.write
for i in range($2, $3 + 1): w(('%064x\n' % i) if '$1' == 'apns' else ('$1-bench:%012d\n' % i))
" | $BIN device import --app "$APP_ID" --channel "$1" --tag "$4" > /dev/null
}
HALF=$((DEVICES / 2))
echo "== scenarios${SCENARIOS% }; seeding $DEVICES devices for each of (b) FCM, (c) Huawei, (f) HarmonyOS and (d) $HALF APNs + $HALF FCM (mixed) and halves of each alone that runs"
if run b; then seed fcm 1 "$DEVICES" fcm-all; fi
if run c; then seed huawei 1 "$DEVICES" huawei-all; fi
if run f; then seed harmony 1 "$DEVICES" harmony-all; fi
if run d; then
# The mixed tag's devices registered alternately, a thousand of each at a time, as a real tag's
# iPhones and Android phones arrive; all iPhones before all Android phones would send the two
# halves one after the other (BENCH_MIXED_SORTED=1 does that, to see it).
if [ -n "${BENCH_MIXED_SORTED:-}" ]; then
  seed apns 1 "$HALF" mixed
  seed fcm $((DEVICES + 1)) $((DEVICES + HALF)) mixed
else
  for ((from = 0; from < HALF; from += 1000)); do
    to=$((from + 1000 < HALF ? from + 1000 : HALF))
    seed apns $((from + 1)) "$to" mixed
    seed fcm $((DEVICES + from + 1)) $((DEVICES + to)) mixed
  done
fi
seed apns $((HALF + 1)) "$DEVICES" apns-half
seed fcm $((DEVICES + HALF + 1)) $((2 * DEVICES)) fcm-half
fi

# The per-recipient app: Tencent settings, every account in the background with one device,
# the first half on APNs and the second on FCM (set in the database, as bench/apns.sh does:
# report_background for each would take longer than the push).
TENCENT_SDKAPPID=1400000042
TENCENT_SECRET=5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e
if run e && [ "$POLICY_DEVICES" -gt 0 ]; then
  TAPP=$($BIN app create --name bench-tencent --bundle-id com.example.bench)
  TAPP_ID=$(echo "$TAPP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  TKEY=$(echo "$TAPP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
  TENCENT_SECRET="$TENCENT_SECRET" $BIN app set-tencent --app "$TAPP_ID" --sdkappid "$TENCENT_SDKAPPID" \
    --secret-env TENCENT_SECRET > /dev/null
  $BIN credential add --app "$TAPP_ID" --environment production --p8 "$(banner "['p8_file']")" \
    --key-id "$(banner "['key_id']")" --team-id "$(banner "['team_id']")" > /dev/null
  $BIN credential add --app "$TAPP_ID" --channel fcm --service-account "$SERVICE_ACCOUNT" > /dev/null
  PHALF=$((POLICY_DEVICES / 2))
  python3 -c "
import sys
for i in range(1, $PHALF + 1): sys.stdout.write('%064x\n' % (0x7000000000 + i))
" | $BIN device import --app "$TAPP_ID" > /dev/null
  python3 -c "
import sys
for i in range($PHALF + 1, $POLICY_DEVICES + 1): sys.stdout.write('fcm-tencent:%012d\n' % i)
" | $BIN device import --app "$TAPP_ID" --channel fcm > /dev/null
  sqlite3 "$TUISONG_DATABASE_PATH" "
    UPDATE devices SET im_account = 'user' || id, app_state = 'background' WHERE app_id = $TAPP_ID;
    INSERT INTO accounts (app_id, account, app_state, badge, created_at, updated_at)
      SELECT app_id, im_account, 'background', 0, 0, 0 FROM devices WHERE app_id = $TAPP_ID;
    UPDATE devices SET account_id = (SELECT a.id FROM accounts a WHERE a.app_id = devices.app_id AND a.account = devices.im_account)
      WHERE app_id = $TAPP_ID;"
fi

$BIN serve > "$WORK/serve.log" 2>&1 &
GW_PID=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break; sleep 0.1; done

push_and_wait() {  # push_and_wait TAG COUNT
  python3 bench/push_watch.py --port "$PORT" --key "$KEY" --pid "$GW_PID" --mock-pid "$MOCK_PID" --tag "$1" \
    --count "$2" --hz "$POLL_HZ"
}
ratio() {  # ratio OUTPUT BASELINE
  python3 -c "print(f'   ratio b/a = {$(echo "$1" | awk '/^RATE/ {print $2}') / $2:.2f} (baseline {$2:,.0f}/s)')"
}

if run b; then
  echo "== (b) FCM tag push to $DEVICES devices (one request per device)"
  baseline
  OUT=$(push_and_wait fcm-all "$DEVICES"); echo "$OUT" | grep -v '^RATE'; ratio "$OUT" "$BASELINE"
fi

if run c; then
  echo "== (c) Huawei tag push to $DEVICES devices (up to 1,000 tokens a request)"
  huawei_baseline
  OUT=$(push_and_wait huawei-all "$DEVICES"); echo "$OUT" | grep -v '^RATE'; ratio "$OUT" "$HUAWEI_BASELINE"
fi

if run d; then
  echo "== (d) mixed tag: $HALF APNs + $HALF FCM, then each half alone"
  OUT=$(push_and_wait mixed "$DEVICES"); echo "$OUT" | grep -v '^RATE'
  MIXED=$(echo "$OUT" | grep -oE 'in [0-9.]+ s' | head -1)
  OUT=$(push_and_wait apns-half "$HALF"); echo "$OUT" | grep -v '^RATE'
  OUT=$(push_and_wait fcm-half "$HALF"); echo "$OUT" | grep -v '^RATE'
  echo "   mixed finished $MIXED; compare with the slower half above"
fi
if run e && [ "$POLICY_DEVICES" -gt 0 ]; then
  echo "== (e) per-recipient path: Tencent all_member_push/im_push to $POLICY_DEVICES background accounts, half APNs, half FCM"
  baseline
  OUT=$(python3 bench/push_watch.py --port "$PORT" --key "$TKEY" --pid "$GW_PID" --mock-pid "$MOCK_PID" \
    --count "$POLICY_DEVICES" --hz "$POLL_HZ" --tencent "$TENCENT_SDKAPPID" "$TENCENT_SECRET" \
    --database "$TUISONG_DATABASE_PATH")
  echo "$OUT" | grep -v '^RATE'; ratio "$OUT" "$BASELINE"
fi

if run f; then
  echo "== (f) HarmonyOS NEXT tag push to $DEVICES devices (Push Kit v3, up to 1,000 tokens a request)"
  harmony_baseline
  OUT=$(push_and_wait harmony-all "$DEVICES"); echo "$OUT" | grep -v '^RATE'; ratio "$OUT" "$HARMONY_BASELINE"
fi

echo "== the look-alike's counts"
kill -INT "$MOCK_PID" 2>/dev/null; wait "$MOCK_PID" 2>/dev/null || true; MOCK_PID=""
python3 -c "
import json
t = open('$WORK/mock.out').read()
summary = json.loads(t[t.index('\n}') + 2:])
for s in ('fcm', 'huawei', 'harmony'): print('  ', s, summary.get(s))
"
