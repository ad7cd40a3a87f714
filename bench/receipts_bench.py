#!/usr/bin/env python3
"""`make bench-receipts`'s driver (bench/receipts.sh starts the gateway and the APNs look-alike and
prints the app's receipt registration). Not a test. Everything goes through the real path: each
POST is signed as Huawei signs it (X-HUAWEI-CALLBACK-ID under the app's callback user name and
key), each status carries the tag the send would have carried (`<message id>.<MAC>`, the MAC
under the app's key derived from the master key, as ReceiptKeys makes it), and the gateway
verifies, parses and records every status in one transaction per POST.

  Huawei (V1): POSTs of 1,000 statuses.  HarmonyOS (V2): POSTs of 100 statuses.
Each status is a new arrival of (message, phone). Reported per service: statuses/s over the
whole run, POSTs/s, and the time per POST (p50, p99, max), against the issue's targets
(≥ 50,000 statuses/s on SQLite, p99 per POST ≤ 50 ms). The message statuses' `arrived` counts
are checked against what was posted, once the gateway's digest has counted them (up to 60 s).
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import sys
import threading
import time
import uuid

TARGET_RATE = 50_000
TARGET_P99_MS = 50
BATCH = {"huawei": 1000, "harmony": 100}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def tag(master, app_id, message_id):
    """ReceiptKeys.tag: `<message id>.<16 base64url characters of the MAC>`."""
    root = hmac.new(master, b"tuisong derived key: receipts", hashlib.sha256).digest()
    app_key = hmac.new(root, f"tag:app:{app_id}".encode(), hashlib.sha256).digest()
    mac = hmac.new(app_key, f"message:{message_id}".encode(), hashlib.sha256).digest()
    return f"{message_id}.{b64url(mac)[:16]}"


def signature(user, key):
    timestamp = str(int(time.time() * 1000))
    nonce = str(uuid.uuid4())
    value = base64.b64encode(hmac.new(key.encode(), (timestamp + nonce + user).encode(), hashlib.sha256).digest())
    return f"timestamp={timestamp};nonce={nonce};value={value.decode()}"


def body(service, tags, start, count, messages):
    statuses = []
    for n in range(start, start + count):
        message = messages[n % len(messages)]
        token = f"bench-{service}-{n}"
        if service == "huawei":
            statuses.append({"biTag": tags[message], "appid": "10086", "token": token, "status": 0,
                             "timestamp": 1_750_000_000_000, "requestId": "bench"})
        else:
            statuses.append({"token": token, "pushType": 0, "appPackageName": "com.example.bench",
                             "biTag": tags[message], "requestId": "bench",
                             "deliveryStatus": {"result": 0, "timestamp": 1_750_000_000_000}})
    return json.dumps({"statuses": statuses}).encode()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run(service, args, registration, tags, messages):
    batch = BATCH[service]
    bodies = [body(service, tags, start, min(batch, args.statuses - start), messages)
              for start in range(0, args.statuses, batch)]
    user, key = registration["callback_user_name"], registration["callback_key"]
    path = f"/receipts/{service}/{args.app}"
    latencies = []
    failures = []
    lock = threading.Lock()
    next_index = [0]

    def worker():
        connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
        while True:
            with lock:
                index = next_index[0]
                next_index[0] += 1
            if index >= len(bodies):
                break
            headers = {"Content-Type": "application/json", "X-HUAWEI-CALLBACK-ID": signature(user, key)}
            started = time.perf_counter()
            try:
                connection.request("POST", path, body=bodies[index], headers=headers)
                response = connection.getresponse()
                answer = response.read()
            except (http.client.HTTPException, OSError) as error:
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
                with lock:
                    failures.append(str(error))
                continue
            elapsed = time.perf_counter() - started
            with lock:
                if response.status == 200:
                    latencies.append(elapsed)
                else:
                    failures.append(f"HTTP {response.status} {answer[:200]!r}")
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if failures:
        sys.exit(f"{service}: {len(failures)} POSTs failed, e.g. {failures[0]}")
    rate = args.statuses / wall
    p50, p99 = percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000
    print(f"{service:8} {len(bodies):6} POSTs of {batch:5} statuses  {rate:10,.0f} statuses/s  "
          f"{len(bodies) / wall:8,.1f} POSTs/s  per POST p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  "
          f"max {max(latencies) * 1000:6.1f} ms  "
          f"[{'ok' if rate >= TARGET_RATE else 'BELOW'} ≥ {TARGET_RATE:,}/s, "
          f"{'ok' if p99 <= TARGET_P99_MS else 'ABOVE'} p99 ≤ {TARGET_P99_MS} ms]")
    return args.statuses


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True, help="the app's native API key")
    p.add_argument("--app", type=int, required=True)
    p.add_argument("--master-key", required=True, help="the gateway's master key file")
    p.add_argument("--registration", required=True, help="`tuisong credential show` output")
    p.add_argument("--statuses", type=int, required=True, help="statuses per service")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--messages", type=int, default=20)
    args = p.parse_args()

    master = base64.b64decode(open(args.master_key).read().strip())
    registrations = {r["channel"]: r for r in json.load(open(args.registration))["receipts"]}
    gateway = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
    headers = {"Authorization": "Bearer " + args.key, "Content-Type": "application/json"}

    def call(method, path, payload=None):
        nonlocal gateway
        body = json.dumps(payload).encode() if payload is not None else None
        try:
            gateway.request(method, path, body=body, headers=headers)
            response = gateway.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The connection sat idle through the receipt runs and the gateway closed it.
            gateway.close()
            gateway = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
            gateway.request(method, path, body=body, headers=headers)
            response = gateway.getresponse()
        data = response.read()
        if response.status not in (200, 202):
            sys.exit(f"{method} {path}: HTTP {response.status} {data[:300]!r}")
        return json.loads(data)

    messages = []
    for n in range(args.messages):
        sent = call("POST", "/api/v1/push", {"audience": {"tokens": ["%064x" % (0x5000 + n)]},
                                             "notification": {"alert": f"bench {n}"}})
        messages.append(sent["message_id"])
    tags = {m: tag(master, args.app, m) for m in messages}
    print(f"bench-receipts: {args.statuses:,} statuses per service, {args.concurrency} POSTs in flight, "
          f"{len(messages)} messages, SQLite")
    posted = 0
    for service in ("huawei", "harmony"):
        posted += run(service, args, registrations[service], tags, messages)
    # The receipts are counted by the gateway's digest after their answers: wait for it (bounded).
    answered = time.perf_counter()
    while True:
        arrived = sum(call("GET", f"/api/v1/messages/{m}")["counts"].get("arrived", 0) for m in messages)
        if arrived == posted or time.perf_counter() - answered > 60:
            break
        time.sleep(0.05)
    if arrived != posted:
        sys.exit(f"the messages count {arrived} arrivals, {posted} were posted")
    print(f"counted: {arrived:,} arrivals over {len(messages)} messages, as posted, "
          f"{time.perf_counter() - answered:.2f} s after the last POST's answer")


if __name__ == "__main__":
    main()
