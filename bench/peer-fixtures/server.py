#!/usr/bin/env python3
"""Loopback target with a known latency distribution and error rate, for bench/peer-fixtures.sh.

  GET /fast  waits uniform 2–8 ms, GET /slow waits uniform 20–40 ms (seeded, so the same
             sequence every run); every 20th request to each path answers 500 (5 % errors),
             the others 200 with a 100-byte body.
  GET /stats requests served per path and status, as JSON (not counted).
  GET /quit  stops the server.

Usage: server.py PORT   (binds 127.0.0.1 only)
"""
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY_MS = {"/fast": (2.0, 8.0), "/slow": (20.0, 40.0)}
ERROR_EVERY = 20
BODY = b"x" * 99 + b"\n"

lock = threading.Lock()
rng = random.Random(14)
served = {}  # (path, status) -> count
seen = {}  # path -> requests so far


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/stats":
            with lock:
                out = {f"{p} {s}": n for (p, s), n in sorted(served.items())}
            return self.reply(200, json.dumps(out).encode(), "application/json")
        if path == "/quit":
            self.reply(200, b"bye\n")
            threading.Thread(target=self.server.shutdown).start()
            return
        if path not in DELAY_MS:
            return self.reply(404, b"no such path\n")
        lo, hi = DELAY_MS[path]
        with lock:
            n = seen.get(path, 0) + 1
            seen[path] = n
            delay = rng.uniform(lo, hi)
        time.sleep(delay / 1000.0)
        status = 500 if n % ERROR_EVERY == 0 else 200
        with lock:
            served[(path, status)] = served.get((path, status), 0) + 1
        self.reply(status, BODY)


if __name__ == "__main__":
    port = int(sys.argv[1])
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.serve_forever()
