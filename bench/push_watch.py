#!/usr/bin/env python3
"""One push, watched: bench/apns.sh's driver. Not a test.

Sends one push (a native tag push, or a Tencent all_member_push/im_push that goes through the
Tencent delivery policy), then polls GET /api/v1/messages/{id} at --hz on ONE keep-alive
HTTP/1.1 connection (the way a console monitor or an app server watches a push; a new process
or connection per poll would measure the poller, not the gateway) until every device has an
outcome. Prints the rate, the first delivery (from the push call, at the poll's resolution),
the gateway's peak RSS and the poller's own CPU time.
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
import zlib


def user_sig(sdkappid, key, identifier, expire=86400):
    """Tencent's TLSSigAPIv2.genUserSig, as app servers compute it."""
    now = int(time.time())
    content = f"TLS.identifier:{identifier}\nTLS.sdkappid:{sdkappid}\nTLS.time:{now}\nTLS.expire:{expire}\n"
    sig = base64.b64encode(hmac.new(key.encode(), content.encode(), hashlib.sha256).digest()).decode()
    doc = {"TLS.ver": "2.0", "TLS.identifier": identifier, "TLS.sdkappid": sdkappid,
           "TLS.expire": expire, "TLS.time": now, "TLS.sig": sig}
    packed = base64.b64encode(zlib.compress(json.dumps(doc, separators=(",", ":")).encode())).decode()
    return packed.replace("+", "*").replace("/", "-").replace("=", "_")


def rss_mb(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def cpu_seconds(pid):
    """utime + stime of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True, help="the app's API key (status polls)")
    p.add_argument("--pid", type=int, required=True, help="the gateway's pid (RSS, CPU time)")
    p.add_argument("--mock-pid", type=int, help="the APNs mock's pid (CPU time)")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--hz", type=float, default=100)
    p.add_argument("--tag", help="native tag push to this tag")
    p.add_argument("--tencent", nargs=2, metavar=("SDKAPPID", "SECRET"),
                   help="Tencent all_member_push/im_push to every account of the app")
    p.add_argument("--database", help="the gateway's database, a SQLite path or a postgresql:// URL "
                                      "(Tencent: the message id of the TaskId)")
    p.add_argument("--wait-arrived", action="store_true",
                   help="after the push, poll until every delivered device's receipt is counted arrived "
                        "(bench/receipts.sh: the look-alike posts one per device)")
    args = p.parse_args()

    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
    headers = {"Authorization": "Bearer " + args.key, "Content-Type": "application/json"}

    def call(method, path, body=None):
        conn.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if response.status >= 300:
            sys.exit(f"{method} {path}: HTTP {response.status} {data[:300]!r}")
        return json.loads(data)

    cpu0 = time.process_time()
    gateway_cpu0 = cpu_seconds(args.pid)
    mock_cpu0 = cpu_seconds(args.mock_pid) if args.mock_pid else 0
    start = time.monotonic()
    if args.tag:
        answer = call("POST", "/api/v1/push", {"audience": {"tag": args.tag}, "notification": {
            "alert": {"title": "Tuisong", "body": "bench"}, "badge": 1, "sound": "default", "custom": {"id": 42}}})
        answered = time.monotonic() - start
        message_id = answer["message_id"]
    else:
        sdkappid, secret = int(args.tencent[0]), args.tencent[1]
        sig = user_sig(sdkappid, secret, "administrator")
        path = (f"/v4/all_member_push/im_push?sdkappid={sdkappid}&identifier=administrator&usersig={sig}"
                f"&random={random.randint(1, 2**31)}&contenttype=json")
        answer = call("POST", path, {"From_Account": "bench-sender", "MsgRandom": random.randint(1, 2**31),
                                     "MsgBody": [{"MsgType": "TIMTextElem", "MsgContent": {"Text": "bench"}}]})
        answered = time.monotonic() - start
        if answer.get("ActionStatus") != "OK":
            sys.exit(f"im_push: {answer}")
        if args.database.startswith(("postgresql://", "postgres://")):
            # psycopg is not installed: psql, with the task id as a psql variable (quoted by :'').
            result = subprocess.run(
                ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-v", f"task={answer['TaskId']}", "-d", args.database],
                input="SELECT id FROM messages WHERE vendor = 'tencent' AND vendor_message_id = :'task';",
                capture_output=True, text=True, timeout=30, check=True)
            message_id = int(result.stdout.split()[0])
        else:
            db = sqlite3.connect(args.database, timeout=10)
            message_id = db.execute("SELECT id FROM messages WHERE vendor = 'tencent' AND vendor_message_id = ?",
                                    (answer["TaskId"],)).fetchone()[0]
            db.close()

    period = 1 / args.hz
    first = None
    peak = 0
    polls = 0
    next_poll = time.monotonic()
    while True:
        status = call("GET", f"/api/v1/messages/{message_id}")
        polls += 1
        c = status["counts"]
        now = time.monotonic()
        if first is None and c["delivered"] > 0:
            first = now - start
        peak = max(peak, rss_mb(args.pid)[0])
        if status["state"] == "completed" and c["queued"] == 0 and c["sending"] == 0:
            break
        if now - start > 900:
            print("timed out", status)
            break
        next_poll += period
        delay = next_poll - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_poll = time.monotonic()
    elapsed = time.monotonic() - start
    cpu = time.process_time() - cpu0
    gateway_cpu = cpu_seconds(args.pid) - gateway_cpu0
    mock_cpu = cpu_seconds(args.mock_pid) - mock_cpu0 if args.mock_pid else None
    c = status["counts"]
    rate = c["delivered"] / elapsed
    print(f"   {args.count} devices: {c['delivered']} delivered, {c['failed']} failed, {c['skipped']} skipped "
          f"in {elapsed:.2f} s = {rate:,.0f} notifications/s; push answered after {answered * 1000:.1f} ms, "
          f"first delivery after {(first or 0) * 1000:.0f} ms; peak RSS {max(peak, rss_mb(args.pid)[1]):.1f} MB "
          f"(sampled {peak:.1f} MB); {polls} polls ({polls / elapsed:.0f}/s, poller CPU {cpu / elapsed * 100:.0f} %)")
    # CPU time per notification is steadier than the rate on a shared 2-core machine: it
    # compares builds even when the machine's speed moves between runs.
    delivered = max(c["delivered"], 1)
    line = (f"   CPU per notification: gateway {gateway_cpu / delivered * 1e6:.1f} µs "
            f"({gateway_cpu / elapsed * 100:.0f} % of a core)")
    if mock_cpu is not None:
        line += f", mock {mock_cpu / delivered * 1e6:.1f} µs ({mock_cpu / elapsed * 100:.0f} % of a core)"
    print(line)
    if args.wait_arrived:
        # Receipts are counted after their push: the look-alike posts them as it accepts each
        # request, and the gateway records them beside the push's own writes.
        arrived = 0
        while time.monotonic() - start < 900:
            arrived = call("GET", f"/api/v1/messages/{message_id}")["counts"].get("arrived", 0)
            if arrived >= c["delivered"]:
                break
            time.sleep(period)
        counted = time.monotonic() - start
        print(f"   receipts: {arrived:,} of {c['delivered']:,} counted arrived {counted:.2f} s after the push call "
              f"({arrived / counted:,.0f}/s), {counted - elapsed:.2f} s after its last delivery")
    print(f"RATE {rate:.0f}")


if __name__ == "__main__":
    main()
