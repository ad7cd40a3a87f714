#!/usr/bin/env python3
"""`make bench-webhooks`'s driver (bench/webhooks.sh starts the gateway, the APNs look-alike and
the receiver, and imports the devices). Not a test. Everything goes through the real path: a
native tag push whose deliveries the look-alike fails with 410 writes one `delivery.failed`
event per device into the outbox, in the transaction that records the delivery, and the
gateway's sender POSTs them to the receiver.

  (1) an endpoint subscribed to delivery.failed and a push to --gone devices (every one
      answered 410): events/s at the receiver, first to last event, and from the push to the
      last event.
  (2) a push to --everyone devices (1 % answered 410) without any endpoint, then with an endpoint
      subscribed to delivery.failed: the push's outcomes/s in each, and their ratio.
Devices a 410 invalidated are made valid again in the database between pushes.
"""
import argparse
import http.client
import json
import sqlite3
import sys
import time

DEADLINE = 240  # seconds any one wait may take: the bench stops itself


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--receiver", required=True, help="the receiver's base URL")
    p.add_argument("--database", required=True)
    p.add_argument("--gone", type=int, required=True, help="devices tagged gone (all answered 410)")
    p.add_argument("--everyone", type=int, required=True, help="devices tagged everyone (1 %% answered 410)")
    p.add_argument("--repeat", type=int, default=1, help="(2)'s pair of pushes this many times")
    args = p.parse_args()

    gateway = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
    receiver_host, receiver_port = args.receiver.removeprefix("http://").split(":")
    receiver = http.client.HTTPConnection(receiver_host, int(receiver_port), timeout=30)
    headers = {"Authorization": "Bearer " + args.key, "Content-Type": "application/json"}

    def call(method, path, body=None, expect=(200, 201, 202, 204)):
        nonlocal gateway
        try:
            gateway.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
            response = gateway.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The gateway closes a keep-alive connection idle while the bench waited on the receiver.
            gateway.close()
            gateway = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
            gateway.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
            response = gateway.getresponse()
        data = response.read()
        if response.status not in expect:
            sys.exit(f"{method} {path}: HTTP {response.status} {data[:300]!r}")
        return json.loads(data) if data else None

    def stats(reset=False):
        receiver.request("POST" if reset else "GET", "/reset" if reset else "/stats", body=b"" if reset else None)
        return json.loads(receiver.getresponse().read())

    db = sqlite3.connect(args.database, timeout=30)

    def sql(statement):
        for _ in range(50):
            try:
                rows = db.execute(statement).fetchall()
                db.commit()
                return rows
            except sqlite3.OperationalError as error:  # the gateway holds the write lock a moment
                if "locked" not in str(error):
                    raise
                time.sleep(0.1)
        sys.exit(f"database busy: {statement}")

    def revalidate():
        sql("UPDATE devices SET invalidated_at = NULL, invalid_reason = NULL WHERE invalidated_at IS NOT NULL")

    def push(tag):
        """Pushes to `tag` and waits until every device has an outcome: (seconds, counts)."""
        start = time.monotonic()
        message = call("POST", "/api/v1/push", {"audience": {"tag": tag}, "notification": {
            "alert": {"title": "Tuisong", "body": "bench"}, "custom": {"id": 42}}})["message_id"]
        while True:
            status = call("GET", f"/api/v1/messages/{message}")
            c = status["counts"]
            if status["state"] == "completed" and c["queued"] == 0 and c["sending"] == 0:
                return time.monotonic() - start, c, start
            if time.monotonic() - start > DEADLINE:
                sys.exit(f"push to {tag} did not finish: {status}")
            time.sleep(0.05)

    def wait_received(count, since):
        while True:
            s = stats()
            if s["distinct"] >= count:
                return s
            if time.monotonic() - since > DEADLINE:
                sys.exit(f"the receiver has {s} of {count} events")
            time.sleep(0.05)

    def endpoint():
        return call("POST", "/api/v1/webhooks", {"url": args.receiver + "/hooks", "events": ["delivery.failed"]})["id"]

    print(f"== (1) {args.gone:,} delivery.failed events from one push (every device answered 410)")
    # A disabled endpoint gets no new events (they are written for enabled endpoints only), so
    # there is no backlog to drain: the push fails its devices at the push's rate and the
    # sender's rate shows as first-to-last event at the receiver.
    stats(reset=True)
    hook = endpoint()
    seconds, counts, start = push("gone")
    push_wall = time.time() - (time.monotonic() - start)
    s = wait_received(counts["failed"], start)
    window = s["last"] - s["first"]
    print(f"   push: {counts['failed']:,} failed in {seconds:.2f} s; the receiver got {s['distinct']:,} events "
          f"({s['posts']:,} POSTs), the first {s['first'] - push_wall:.2f} s and the last {s['last'] - push_wall:.2f} s "
          f"after the push")
    print(f"   {s['distinct'] / window:,.0f} events/s delivered (first to last event), "
          f"{s['distinct'] / (s['last'] - push_wall):,.0f} events/s from the push to the last event")
    print(f"RATE events {s['distinct'] / window:.0f}")
    call("DELETE", f"/api/v1/webhooks/{hook}")

    print(f"== (2) a {args.everyone:,}-device push, 1 % answered 410, without and with delivery.failed subscribed")
    ratios = []
    for round_ in range(args.repeat):
        revalidate()
        seconds, counts, _ = push("everyone")
        outcomes = counts["delivered"] + counts["failed"]
        without = outcomes / seconds
        print(f"   without: {counts['delivered']:,} delivered, {counts['failed']:,} failed in {seconds:.2f} s = {without:,.0f}/s")
        revalidate()
        stats(reset=True)
        hook = endpoint()
        seconds, counts, start = push("everyone")
        outcomes = counts["delivered"] + counts["failed"]
        with_ = outcomes / seconds
        s = wait_received(counts["failed"], start)
        print(f"   with:    {counts['delivered']:,} delivered, {counts['failed']:,} failed in {seconds:.2f} s = {with_:,.0f}/s; "
              f"{s['distinct']:,} delivery.failed events received")
        call("DELETE", f"/api/v1/webhooks/{hook}")
        ratios.append(with_ / without)
        print(f"   ratio {with_ / without:.2f} (target ≥ 0.9)")
    print(f"RATIO {min(ratios):.2f}")


if __name__ == "__main__":
    main()
