#!/usr/bin/env python3
"""Mixed requests across every API family, for make bench-memory (bench/memory.sh). Not a test.

Sends --count requests over --connections keep-alive connections to one gateway on loopback:
native device registrations, lookups, pushes and message reads; Baidu signed pushes and tag
calls; Tencent sendmsg and account imports; Easemob messages and user reads; and the bad input a
fuzzer sends (broken JSON, wrong signatures and tokens, unknown paths, bodies of 64 KiB–1 MiB).
Every --sample requests it prints the gateway's resident memory (VmRSS) and its peak (VmHWM).
"""

import argparse
import hashlib
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from push_watch import user_sig  # noqa: E402  (bench/push_watch.py, beside this file)


def memory_mb(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon"):
                fields[name] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"], fields["RssAnon"]


def sqlite_mb(port):
    """The gateway's tuisong_sqlite_memory_bytes, in MB."""
    connection = Connection(port)
    connection.exchange("GET", "/metrics", {}, b"")
    for line in connection.body.decode().splitlines():
        if line.startswith("tuisong_sqlite_memory_bytes "):
            return float(line.split()[1]) / 2**20
    return float("nan")


def baidu_signed(args, path, params):
    """A Baidu REST call's form body, signed as the Python SDK signs it."""
    params = dict(params, apikey=args.baidu[0], timestamp=str(int(time.time())))
    url = f"http://127.0.0.1:{args.port}{path}"
    text = "POST" + url + "".join(f"{k}={params[k]}" for k in sorted(params)) + args.baidu[1]
    params["sign"] = hashlib.md5(urllib.parse.quote_plus(text).encode()).hexdigest()
    return urllib.parse.urlencode(params)


class Requests:
    """Builds the n-th request of the mix: (method, path, headers, body bytes)."""

    def __init__(self, args):
        self.args = args
        self.sig = user_sig(int(args.tencent[0]), args.tencent[1], "administrator")
        self.kinds = [
            (12, self.native_register), (12, self.native_lookup), (8, self.native_push),
            (4, self.native_message), (8, self.baidu_push), (4, self.baidu_tag), (8, self.tencent_sendmsg),
            (4, self.tencent_import), (8, self.easemob_message), (4, self.easemob_user),
            (4, self.broken_json), (3, self.bad_credentials), (3, self.unknown_path), (2, self.large_body),
            (2, self.healthz),
        ]
        self.weights = [w for w, _ in self.kinds]

    def make(self, rng, n):
        """The kind's name and its request."""
        kind = rng.choices(self.kinds, weights=self.weights)[0][1]
        return kind.__name__, kind(rng, n)

    def native(self, method, path, body=None):
        head = {"Authorization": f"Bearer {self.args.key}"}
        if body is not None:
            head["Content-Type"] = "application/json"
        return method, path, head, json.dumps(body).encode() if body is not None else b""

    def token(self, rng):
        return "%064x" % (0x7000000000 + rng.randrange(self.args.devices))

    def native_register(self, rng, n):
        return self.native("PUT", f"/api/v1/devices/{self.token(rng)}", {
            "environment": "production", "user": f"user{rng.randrange(1000)}",
            "tags": [f"t{rng.randrange(50)}"], "locale": rng.choice(["zh-CN", "en-US"])})

    def native_lookup(self, rng, n):
        return self.native("GET", f"/api/v1/devices/{self.token(rng)}")

    def native_push(self, rng, n):
        audience = rng.choice([{"tokens": [self.token(rng)]}, {"tag": f"t{rng.randrange(50)}"}])
        return self.native("POST", "/api/v1/push", {
            "audience": audience, "notification": {"alert": {"title": "t", "body": "x" * rng.randrange(1, 800)},
                                                   "badge": rng.randrange(5), "custom": {"n": n}}})

    def native_message(self, rng, n):
        return self.native("GET", f"/api/v1/messages/{rng.randrange(1, max(2, n // 10))}")

    def baidu(self, path, params):
        body = baidu_signed(self.args, path, params).encode()
        return "POST", path, {"Content-Type": "application/x-www-form-urlencoded;charset=utf-8"}, body

    def baidu_push(self, rng, n):
        message = json.dumps({"aps": {"alert": f"baidu {n}", "badge": 1}, "k": "v" * rng.randrange(200)})
        return self.baidu("/rest/3.0/push/single_device", {
            "channel_id": str(5000000000000000000 + rng.randrange(1000)), "msg_type": "1", "msg": message,
            "deploy_status": "2"})

    def baidu_tag(self, rng, n):
        return self.baidu("/rest/3.0/app/query_tags", {})

    def tencent(self, command, body):
        path = (f"/v4/{command}?sdkappid={self.args.tencent[0]}&identifier=administrator&usersig={self.sig}"
                f"&random={random.randint(1, 2**31)}&contenttype=json")
        return "POST", path, {"Content-Type": "application/json"}, json.dumps(body).encode()

    def tencent_sendmsg(self, rng, n):
        return self.tencent("openim/sendmsg", {
            "SyncOtherMachine": 2, "From_Account": "sender", "To_Account": f"user{rng.randrange(1000)}",
            "MsgRandom": rng.randrange(2**31),
            "MsgBody": [{"MsgType": "TIMTextElem", "MsgContent": {"Text": "y" * rng.randrange(1, 500)}}]})

    def tencent_import(self, rng, n):
        return self.tencent("im_open_login_svc/account_import", {"UserID": f"user{rng.randrange(5000)}"})

    def easemob(self, method, path, body=None):
        head = {"Authorization": f"Bearer {self.args.easemob[2]}"}
        if body is not None:
            head["Content-Type"] = "application/json"
        org, app = self.args.easemob[0], self.args.easemob[1]
        return method, f"/{org}/{app}{path}", head, json.dumps(body).encode() if body is not None else b""

    def easemob_message(self, rng, n):
        return self.easemob("POST", "/messages/users", {
            "from": "sender", "to": [f"user{rng.randrange(1000)}"], "type": "txt",
            "body": {"msg": "z" * rng.randrange(1, 500)}})

    def easemob_user(self, rng, n):
        return self.easemob("GET", f"/users/user{rng.randrange(1000)}")

    def broken_json(self, rng, n):
        family = rng.randrange(3)
        body = b'{"audience": {"tokens": [' + os.urandom(rng.randrange(1, 300)).hex().encode()
        if family == 0:
            return "POST", "/api/v1/push", {"Authorization": f"Bearer {self.args.key}",
                                            "Content-Type": "application/json"}, body
        if family == 1:
            method, path, head, _ = self.tencent_sendmsg(rng, n)
            return method, path, head, body
        method, path, head, _ = self.easemob_message(rng, n)
        return method, path, head, body

    def bad_credentials(self, rng, n):
        family = rng.randrange(3)
        if family == 0:
            return "GET", f"/api/v1/devices/{self.token(rng)}", {"Authorization": "Bearer wrong-" + str(n)}, b""
        if family == 1:
            method, path, head, body = self.baidu_push(rng, n)
            return method, path, head, body.replace(b"sign=", b"sign=0")
        return "GET", f"/{self.args.easemob[0]}/{self.args.easemob[1]}/users/x", {"Authorization": "Bearer nope"}, b""

    def unknown_path(self, rng, n):
        return "GET", rng.choice(["/nothing", "/api/v1/nowhere", "/v4/none/x", "/rest/3.0/x/y", f"/o/a/{n}"]), {}, b""

    def large_body(self, rng, n):
        size = rng.choice([64, 256, 1024]) * 1024
        body = json.dumps({"audience": {"all": True}, "notification": {"alert": "a" * size}}).encode()
        return "POST", "/api/v1/push", {"Authorization": f"Bearer {self.args.key}",
                                        "Content-Type": "application/json"}, body

    def healthz(self, rng, n):
        return "GET", "/healthz", {}, b""


class Connection:
    def __init__(self, port):
        self.port = port
        self.sock = None
        self.buffer = b""
        self.body = b""

    def open(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.buffer = b""

    def exchange(self, method, path, head, body):
        if self.sock is None:
            self.open()
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}", f"Content-Length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in head.items()]
        try:
            self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
            return self.read_answer()
        except OSError:
            self.close()
            return 0

    def read_answer(self):
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                self.close()
                return 0
            self.buffer += chunk
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        closing = False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            if name.strip().lower() == b"connection" and b"close" in value.lower():
                closing = True
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        self.body = rest[:length]
        self.buffer = rest[length:]
        if closing:
            self.close()
        return status

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--baidu", nargs=2, metavar=("APIKEY", "SECRET"), required=True)
    parser.add_argument("--tencent", nargs=2, metavar=("SDKAPPID", "SECRET"), required=True)
    parser.add_argument("--easemob", nargs=3, metavar=("ORG", "APP", "TOKEN"), required=True)
    parser.add_argument("--count", type=int, default=100000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--devices", type=int, default=20000)
    parser.add_argument("--sample", type=int, default=10000)
    args = parser.parse_args()

    requests = Requests(args)
    lock = threading.Lock()
    state = {"next": 0, "statuses": {}, "kinds": {}, "next_sample": args.sample}
    rss, peak, anon = memory_mb(args.pid)
    print(f"{'requests':>9} {'rss MB':>8} {'peak MB':>8} {'anon MB':>8} {'sqlite MB':>9}   statuses so far")
    print(f"{0:>9} {rss:>8.1f} {peak:>8.1f} {anon:>8.1f} {sqlite_mb(args.port):>9.1f}")
    start = time.monotonic()

    def worker(seed):
        rng = random.Random(seed)
        connection = Connection(args.port)
        while True:
            with lock:
                n = state["next"]
                if n >= args.count:
                    break
                state["next"] += 1
            kind, request = requests.make(rng, n)
            status = connection.exchange(*request)
            with lock:
                state["statuses"][status] = state["statuses"].get(status, 0) + 1
                key = (kind, status)
                state["kinds"][key] = state["kinds"].get(key, 0) + 1
                done = sum(state["statuses"].values())
                if done >= state["next_sample"]:
                    state["next_sample"] += args.sample
                    rss, peak, anon = memory_mb(args.pid)
                    counts = " ".join(f"{k}:{v}" for k, v in sorted(state["statuses"].items()))
                    sqlite = sqlite_mb(args.port)
                    print(f"{done:>9} {rss:>8.1f} {peak:>8.1f} {anon:>8.1f} {sqlite:>9.1f}   {counts}", flush=True)
        connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    print(f"{args.count} requests in {elapsed:.1f} s ({args.count / elapsed:.0f}/s); by kind and status:")
    for (kind, status), count in sorted(state["kinds"].items()):
        print(f"  {kind:<18} {status} {count}")
    if state["statuses"].get(0) or any(status >= 500 for status in state["statuses"]):
        print("FAILED: dropped connections or 5xx answers", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
