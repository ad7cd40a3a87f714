#!/usr/bin/env bash
# make bench-cpu: do CPU-bound requests (Easemob user registration, 60 PBKDF2 hashes a batch)
# hold up the others? /healthz and a native device lookup are timed alone, then while
# BENCH_BATCHES clients register 60-user batches back to back. Release build, loopback, a
# throwaway database. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/tuisong}
PORT=${BENCH_PORT:-18090}
BATCHES=${BENCH_BATCHES:-4}
SECONDS_UNDER_LOAD=${BENCH_SECONDS:-20}
WORK=$(mktemp -d /tmp/tuisong-bench-cpu.XXXXXX)
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
export TUISONG_LOG_LEVEL=error

$BIN migrate > /dev/null  # other commands never create a database
KEY=$($BIN app create --name bench --bundle-id com.example.bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
APP_ID=$($BIN app list | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
export EASEMOB_SECRET=bench-secret
$BIN app set-easemob --app "$APP_ID" --org bench --app-name chat --client-id bench-id \
  --client-secret-env EASEMOB_SECRET > /dev/null

$BIN serve > "$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && break
  sleep 0.1
done

python3 - "$PORT" "$KEY" "$BATCHES" "$SECONDS_UNDER_LOAD" <<'PY'
import http.client, json, sys, threading, time

port, key, batches, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
token = "ab" + "0" * 61 + "1"

def call(connection, method, path, body=None, headers=None):
    started = time.perf_counter()
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    return response.status, data, time.perf_counter() - started

def connect():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=60)

native = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
status, _, _ = call(connect(), "PUT", "/api/v1/devices/" + token, {"environment": "production"}, native)
assert status in (200, 201), status
# The provider learns of the new pair within about a second.
for _ in range(50):
    status, data, _ = call(connect(), "POST", "/bench/chat/token",
                           {"grant_type": "client_credentials", "client_id": "bench-id", "client_secret": "bench-secret"},
                           {"Content-Type": "application/json"})
    if status == 200:
        break
    time.sleep(0.1)
app_token = json.loads(data)["access_token"]
easemob = {"Authorization": "Bearer " + app_token, "Content-Type": "application/json"}

def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

def summary(name, values):
    ms = [v * 1000 for v in values]
    print(f"  {name:<28} n={len(ms):4d}  p50 {percentile(ms, 50):8.1f} ms  p99 {percentile(ms, 99):8.1f} ms  max {max(ms):8.1f} ms")

def sample(stop, results, interval=0.02):
    """/healthz and the lookup, each from its own thread on its own kept-alive connection, so a
    slow one does not hold up the other's samples."""
    def loop(name, method, path, headers):
        connection = connect()
        while not stop.is_set():
            status, _, seconds = call(connection, method, path, headers=headers)
            assert status == 200, (name, status)
            results[name].append(seconds)
            time.sleep(interval)
    threads = [threading.Thread(target=loop, args=("healthz", "GET", "/healthz", {})),
               threading.Thread(target=loop, args=("lookup", "GET", "/api/v1/devices/" + token, native))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

print(f"== alone ({int(seconds / 2)} s)")
alone = {"healthz": [], "lookup": []}
stop = threading.Event()
sampler = threading.Thread(target=sample, args=(stop, alone))
sampler.start()
time.sleep(seconds / 2)
stop.set()
sampler.join()
summary("GET /healthz", alone["healthz"])
summary("GET /api/v1/devices/{token}", alone["lookup"])

print(f"== during {batches} clients registering 60-user batches back to back ({int(seconds)} s)")
during = {"healthz": [], "lookup": []}
batch_times, answers = [], {}
lock = threading.Lock()
stop = threading.Event()

def register(client):
    connection, n = connect(), 0
    while not stop.is_set():
        users = [{"username": f"c{client}-{n}-{i}", "password": "pw-%d" % i} for i in range(60)]
        n += 1
        status, _, seconds = call(connection, "POST", "/bench/chat/users", users, easemob)
        with lock:
            answers[status] = answers.get(status, 0) + 1
            if status == 200:
                batch_times.append(seconds)

clients = [threading.Thread(target=register, args=(c,)) for c in range(batches)]
for client in clients:
    client.start()
time.sleep(1)  # every client has a batch in flight
sampler = threading.Thread(target=sample, args=(stop, during))
sampler.start()
time.sleep(seconds)
stop.set()
sampler.join()
for client in clients:
    client.join()
summary("GET /healthz", during["healthz"])
summary("GET /api/v1/devices/{token}", during["lookup"])
summary("POST users (60, answered 200)", batch_times)
print("  batch answers by status:", dict(sorted(answers.items())))
PY
