#!/usr/bin/env python3
"""The limit that meets an SLO, worked out from a target's own rule, for bench/capacity.sh.

A target of the demo (`volley target serve`) whose rule is known:
  queue    P requests at once (--db-pool P), each holding its connection H ms (--db-rtt H);
           the rest wait in order (HikariCP's pending queue, --db-timeout far away).
  refuse   P slots (--max-threads P --accept-count 0 --db-pool P), H ms each; an arrival that
           finds every slot busy is refused at once (503).
  timeout  as queue, but a request that waits longer than T ms for a connection fails (500):
           --db-timeout T.

For each arrival kind, the largest load under `ttfb p99 < S ms` and `error_rate < 1 %`:
  even     arrivals evenly spaced: nothing waits below P/H, so the limit is P/H per second.
  poisson  exponential gaps: the queue's (or the loss system's) steady state, by simulation
           (queue, timeout) or Erlang's B formula (refuse), bisected on the rate.
  closed   N users in a loop with no think time: each waits N/P holds, so the largest N with
           N·H/P < S (queue), N ≤ P (refuse: the next user is refused), and N with the wait
           (N/P − 1)·H within T and the response within S (timeout).

Usage: capacity_limits.py KIND P H_MS SLO_MS [TIMEOUT_MS]  → one JSON line.
"""

import heapq
import json
import math
import random
import sys


def erlang_b(c, a):
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def simulate(rate, p, h, timeout, n=200_000, seed=1):
    """M/D/P FIFO, deterministic service h ms; a request that would wait more than timeout
    ms fails at once. Returns (p99 of successful response times, ms; error share)."""
    rng = random.Random(seed)
    free = [0.0] * p  # when each server is next free, ms
    heapq.heapify(free)
    t = 0.0
    times = []
    failed = 0
    for _ in range(n):
        t += rng.expovariate(rate / 1000.0)
        start = max(t, free[0])
        wait = start - t
        if timeout is not None and wait > timeout:
            failed += 1
            continue
        heapq.heapreplace(free, start + h)
        times.append(wait + h)
    times.sort()
    p99 = times[max(0, math.ceil(0.99 * len(times)) - 1)] if times else math.inf
    return p99, failed / n


def bisect(ok, lo, hi, steps=30):
    for _ in range(steps):
        mid = (lo + hi) / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def limits(kind, p, h, slo, timeout=None):
    mu = p / h * 1000.0
    if kind == "queue":
        even = mu
        poisson = bisect(lambda r: simulate(r, p, h, None)[0] < slo, 0.0, mu)
        closed = math.ceil(slo * p / h) - 1
    elif kind == "refuse":
        even = mu
        # Erlang B: the offered load a = λ·H (erlangs) that loses 1 % on p slots.
        a = bisect(lambda a: erlang_b(p, a) < 0.01, 0.0, float(p))
        poisson = a / h * 1000.0
        closed = p
    elif kind == "timeout":
        even = mu
        poisson = bisect(
            lambda r: (lambda q: q[0] < slo and q[1] < 0.01)(simulate(r, p, h, timeout)), 0.0, mu
        )
        n_wait = math.floor((timeout / h + 1) * p)
        n_slo = math.ceil(slo * p / h) - 1
        closed = min(n_wait, n_slo)
    else:
        raise SystemExit(f"unknown kind {kind}: queue, refuse or timeout")
    return {"kind": kind, "even": round(even, 2), "poisson": round(poisson, 2), "closed": closed}


if __name__ == "__main__":
    kind, p, h, slo = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else None
    print(json.dumps(limits(kind, p, h, slo, timeout)))
