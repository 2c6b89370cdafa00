#!/usr/bin/env python3
"""Per-function self cost per request from callgrind output files, and its change between
two builds.

    bench/cgdiff.py SHORT.out LONG.out                  # one build: (LONG - SHORT) / Δrequests
    bench/cgdiff.py S1.out L1.out S2.out L2.out          # two builds: per request, before → after

`CALLGRIND=1 CG_OUT=DIR bench/throughput.sh` keeps `TOOL-SECONDS.out` and beside it
`TOOL-SECONDS.req` (the requests that run made); the request counts are read from there, or
given as `--requests SHORT,LONG[,SHORT2,LONG2]`. A run counted per thread (files FILE-01,
FILE-02, ...) is summed over its threads, or with `--busiest` only its busiest thread is read. Self cost is the events a function spent in
its own code (callgrind's "Ir" by default), summed over every thread and every object that
names the function the same way. Prints the functions whose per-request cost moved most
(`--top N`, default 40), then the total. The difference of a long and a short run of the same
build drops start-up and the end-of-run report out; what is left is per request, plus the
once-a-second work that callgrind's slowdown spreads over the requests.
"""

import argparse
import glob
import os
import re
import sys
from collections import defaultdict


def self_costs(path, event=None):
    """{function name: self cost of `event` (the first event by default)} of one file."""
    names = {}
    costs = defaultdict(int)
    positions = 1
    col = 0
    fn = None
    skip_next = False
    with open(path, errors="replace") as f:
        for line in f:
            if not line or line[0] == "\n":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                i = positions + col
                if fn is not None and i < len(parts):
                    costs[fn] += int(parts[i])
                continue
            if line.startswith("fn="):
                fn = _name(line[3:].strip(), names)
            elif line.startswith("cfn="):
                _name(line[4:].strip(), names)  # a called function's name is defined here too
            elif line.startswith("calls="):
                skip_next = True  # the next cost line is the call's inclusive cost
            elif line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith("events:"):
                evs = line.split()[1:]
                col = evs.index(event) if event and event in evs else 0
    return costs


def _name(spec, names):
    m = re.match(r"\((\d+)\)\s*(.*)", spec)
    if not m:
        return spec
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), spec)


def thread_files(path):
    """The files of one run: PATH itself, or PATH-01, PATH-02, ... (--separate-threads=yes)."""
    files = sorted(glob.glob(glob.escape(path) + "-[0-9]*"))
    if files:
        return files
    if os.path.exists(path):
        return [path]
    sys.exit(f"cgdiff.py: neither {path} nor {path}-NN exists")


def run_costs(path, event, busiest, thread_with=None):
    """Self costs of a run: every thread's summed, only the busiest thread's, or only the
    thread's where a function whose name contains `thread_with` has a cost."""
    per_thread = [self_costs(f, event) for f in thread_files(path)]
    if thread_with:
        hits = [c for c in per_thread if any(thread_with in k for k in c)]
        if not hits:
            sys.exit(f"cgdiff.py: no thread of {path} ran a function named like {thread_with!r}")
        return hits[0]
    if busiest:
        return max(per_thread, key=lambda c: sum(c.values()))
    total = defaultdict(int)
    for c in per_thread:
        for k, v in c.items():
            total[k] += v
    return total


def requests_of(path):
    req = os.path.splitext(path)[0] + ".req"
    try:
        return int(open(req).read().strip())
    except (OSError, ValueError):
        return None


def per_request(short, long, n_short, n_long, event, busiest, thread_with):
    a = run_costs(short, event, busiest, thread_with)
    b = run_costs(long, event, busiest, thread_with)
    d = n_long - n_short
    if d <= 0:
        sys.exit(f"cgdiff.py: the long run made no more requests than the short one ({n_short} → {n_long})")
    return {k: (b.get(k, 0) - a.get(k, 0)) / d for k in set(a) | set(b)}, d


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", help="SHORT LONG [SHORT2 LONG2]")
    p.add_argument("--requests", help="the runs' request counts, comma-separated, in the files' order")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--event", default=None, help="callgrind event (default: the first, Ir)")
    p.add_argument("--busiest", action="store_true",
                   help="per-thread files: only the thread with most events")
    p.add_argument("--thread-with", metavar="NAME",
                   help="per-thread files: only the thread that ran a function named like NAME "
                        "(volley's worker: h1::parse_head)")
    a = p.parse_args()
    if len(a.files) not in (2, 4):
        p.error("give SHORT LONG, or SHORT LONG SHORT2 LONG2")
    if a.requests:
        reqs = [int(x) for x in a.requests.split(",")]
        if len(reqs) != len(a.files):
            p.error(f"--requests needs {len(a.files)} counts")
    else:
        reqs = [requests_of(f) for f in a.files]
        missing = [f for f, r in zip(a.files, reqs) if r is None]
        if missing:
            p.error(f"no request count beside {', '.join(missing)} (a .req file); give --requests")
    before, d1 = per_request(a.files[0], a.files[1], reqs[0], reqs[1], a.event, a.busiest, a.thread_with)
    if len(a.files) == 2:
        rows = sorted(before.items(), key=lambda kv: -abs(kv[1]))[: a.top]
        print(f"self cost per request, (long − short) ÷ {d1:,} requests")
        print("| function | per request |\n|---|---|")
        for k, v in rows:
            print(f"| `{k[:110]}` | {v:,.1f} |")
        print(f"| **total** | **{sum(before.values()):,.0f}** |")
        return
    after, d2 = per_request(a.files[2], a.files[3], reqs[2], reqs[3], a.event, a.busiest, a.thread_with)
    keys = set(before) | set(after)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in keys}
    rows = sorted(keys, key=lambda k: -abs(delta[k]))[: a.top]
    print(f"self cost per request: before ÷ {d1:,} requests, after ÷ {d2:,}")
    print("| function | before | after | Δ |\n|---|---|---|---|")
    for k in rows:
        print(f"| `{k[:110]}` | {before.get(k, 0):,.1f} | {after.get(k, 0):,.1f} | {delta[k]:+,.1f} |")
    tb, ta = sum(before.values()), sum(after.values())
    print(f"| **total** | **{tb:,.0f}** | **{ta:,.0f}** | **{ta - tb:+,.0f}** |")


if __name__ == "__main__":
    main()
