#!/usr/bin/env python3
"""An app server's webhook endpoint for `make bench-webhooks`: answers every POST 204 at once,
on keep-alive HTTP/1.1 connections (asyncio streams; one process, one thread). Not a test.

GET /stats answers {"posts", "distinct", "first", "last"}: POSTs received, distinct
webhook-ids among them, and the wall-clock time (time.time()) of the first and the last.
POST /reset forgets them. Prints its port on the first line of stdout.
"""
import argparse
import asyncio
import json
import time

NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


class Stats:
    def __init__(self):
        self.reset()

    def reset(self):
        self.posts = 0
        self.ids = set()
        self.first = None
        self.last = None

    def as_json(self):
        return json.dumps({"posts": self.posts, "distinct": len(self.ids), "first": self.first, "last": self.last}).encode()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    stats = Stats()

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                if length:
                    await reader.readexactly(length)
                if method == "POST" and path != "/reset":
                    now = time.time()
                    stats.posts += 1
                    stats.ids.add(headers.get("webhook-id"))
                    stats.first = stats.first or now
                    stats.last = now
                    writer.write(NO_CONTENT)
                else:
                    if path == "/reset":
                        stats.reset()
                    body = stats.as_json()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
