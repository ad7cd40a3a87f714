#!/usr/bin/env python3
"""Many small messages: bench/messages.sh's load generator. Not a test.

Sends --count one-recipient messages from --clients concurrent keep-alive HTTP/1.1 connections
(asyncio, raw sockets: a client library would measure itself), message i to recipient i, through
one API: the native push (`tokens`), Tencent `openim/sendmsg`, or Easemob `messages/users`.
With --rate the messages are offered at that rate (spread over the clients) instead of as fast
as the gateway answers. Then waits until every message is completed in the database and prints
one line of key=value figures:
  accepted_s    first request to last 2xx
  delivered     messages/s, first request to the last completion
  p50_ms p99_ms from each message's acceptance (created_at) to its completion (completed_at)
  cpu_us        the gateway's CPU per message (utime + stime, all nodes), over the whole run
  load_cpu_us   this generator's own CPU per message while it sends: the same requests every
                run, so it moves only with the machine's speed
  cpu_per_load  cpu_us / load_cpu_us: the gateway's CPU in units of the generator's, which holds
                still across the phases of a shared VM where cpu_us swings by half (as fast as
                answered; at an offered --rate the generator also waits)
  rss_mb        the gateway's peak RSS (VmHWM; the largest node's)
"""
import argparse
import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

from push_watch import cpu_seconds, user_sig  # bench/push_watch.py, beside this file


def peak_rss_mb(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["VmHWM"].split()[0]) / 1024


def query(database, sql):
    """Rows of `sql` from the gateway's database (SQLite path, or a postgresql:// URL through psql)."""
    if database.startswith(("postgresql://", "postgres://")):
        out = subprocess.run(["psql", "-XAtq", "-F", "|", "-v", "ON_ERROR_STOP=1", "-d", database],
                             input=sql, capture_output=True, text=True, timeout=120, check=True).stdout
        return [tuple(line.split("|")) for line in out.splitlines() if line]
    db = sqlite3.connect(database, timeout=30)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def requests(args):
    """The request (method, path, headers, body) for recipient n."""
    if args.api == "native":
        head = f"Authorization: Bearer {args.key}\r\nContent-Type: application/json\r\n"

        def make(n):
            body = json.dumps({"audience": {"tokens": ["%064x" % (args.token_base + n)]},
                               "notification": {"alert": {"title": "chat", "body": f"line {n}"}, "badge": 1}})
            return "/api/v1/push", head, body
        return make
    if args.api == "tencent":
        sdkappid, secret = int(args.tencent[0]), args.tencent[1]
        sig = user_sig(sdkappid, secret, "administrator")
        head = "Content-Type: application/json\r\n"

        def make(n):
            path = (f"/v4/openim/sendmsg?sdkappid={sdkappid}&identifier=administrator&usersig={sig}"
                    f"&random={random.randint(1, 2**31)}&contenttype=json")
            body = json.dumps({"SyncOtherMachine": 2, "From_Account": "sender", "To_Account": f"user{n}",
                               "MsgRandom": random.randint(1, 2**31),
                               "MsgBody": [{"MsgType": "TIMTextElem", "MsgContent": {"Text": f"line {n}"}}]})
            return path, head, body
        return make
    org, app, token = args.easemob
    head = f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"

    def make(n):
        body = json.dumps({"from": "sender", "to": [f"user{n}"], "type": "txt", "body": {"msg": f"line {n}"}})
        return f"/{org}/{app}/messages/users", head, body
    return make


async def client(args, port, make, numbers, stats, pace):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for n, due in numbers:
        if pace:
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        while True:
            path, head, body = make(n)
            data = body.encode()
            writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(data)}\r\n\r\n"
                         .encode() + data)
            status_line = await reader.readline()
            length = 0
            retry_after = None
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
                elif name.lower() == "retry-after":
                    retry_after = float(value)
            answer = await reader.readexactly(length)
            status = int(status_line.split()[1])
            # Admission (the app's backlog at delivery.max_backlog_per_app): nothing was accepted;
            # a client waits as told and sends the same message again.
            if retry_after is not None and (status == 429 or b'"ErrorCode":60007' in answer):
                stats["refused"] += 1
                await asyncio.sleep(retry_after)
                continue
            break
        if status >= 300 or (args.api == "tencent" and b'"ActionStatus":"OK"' not in answer):
            stats["errors"] += 1
            if stats["errors"] <= 3:
                print(f"error {status}: {answer[:200]!r}", file=sys.stderr)
        stats["done"] += 1
    writer.close()


async def load(args, make):
    stats = {"done": 0, "errors": 0, "refused": 0}
    start = time.monotonic()
    per_client = [[] for _ in range(args.clients)]
    for i in range(args.count):
        due = start + i / args.rate if args.rate else 0
        per_client[i % args.clients].append((args.first + i, due))
    ports = [int(p) for p in args.ports.split(",")]
    await asyncio.gather(*(client(args, ports[i % len(ports)], make, numbers, stats, bool(args.rate))
                           for i, numbers in enumerate(per_client)))
    return stats, time.monotonic() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ports", required=True, help="the gateway nodes' ports, comma-separated (clients spread over them)")
    p.add_argument("--api", choices=["native", "tencent", "easemob"], default="native")
    p.add_argument("--key", help="native: the app's API key")
    p.add_argument("--token-base", type=lambda s: int(s, 0), default=0, help="native: token n is %%064x of base + n")
    p.add_argument("--tencent", nargs=2, metavar=("SDKAPPID", "SECRET"))
    p.add_argument("--easemob", nargs=3, metavar=("ORG", "APP", "TOKEN"))
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--first", type=int, default=1, help="the first recipient's number")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--rate", type=float, default=0, help="messages/s offered (0: as fast as answered)")
    p.add_argument("--pids", required=True, help="the gateway's pids, comma-separated")
    p.add_argument("--database", required=True)
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    pids = [int(x) for x in args.pids.split(",")]

    before = int(query(args.database, "SELECT coalesce(max(id), 0) FROM messages")[0][0])
    cpu0 = sum(cpu_seconds(pid) for pid in pids)
    load_cpu0 = time.process_time()
    stats, accepted = asyncio.run(load(args, requests(args)))
    load_cpu = time.process_time() - load_cpu0
    deadline = time.monotonic() + args.timeout
    while True:
        left = int(query(args.database, f"SELECT count(*) FROM messages WHERE id > {before} "
                                        "AND state <> 'completed'")[0][0])
        if left == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu0
    # PostgreSQL keeps a message's counts on its slices.
    delivered_column = ("delivered + coalesce((SELECT sum(s.delivered) FROM message_slices s WHERE s.message_id = m.id), 0)"
                        if args.database.startswith(("postgresql://", "postgres://")) else "delivered")
    rows = query(args.database, f"SELECT created_at, completed_at, {delivered_column} FROM messages m "
                                f"WHERE id > {before} AND completed_at IS NOT NULL")
    latencies = sorted(int(done) - int(created) for created, done, _ in rows)
    delivered = sum(int(d) for _, _, d in rows)
    if not latencies:
        sys.exit("no message completed")
    span = (max(int(done) for _, done, _ in rows) - min(int(created) for created, _, _ in rows)) / 1000
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print(f"messages={args.count} errors={stats['errors']} refused_429={stats['refused']} completed={len(rows)} "
          f"devices_delivered={delivered} "
          f"unfinished={left} accepted_s={accepted:.2f} delivered={len(rows) / max(span, 1e-3):.0f}/s "
          f"p50_ms={pct(0.5)} p99_ms={pct(0.99)} cpu_us={cpu / args.count * 1e6:.0f} "
          f"load_cpu_us={load_cpu / args.count * 1e6:.0f} cpu_per_load={cpu / max(load_cpu, 1e-9):.2f} "
          f"rss_mb={max(peak_rss_mb(pid) for pid in pids):.0f}")


if __name__ == "__main__":
    main()
