#!/usr/bin/env bash
# Two or more volley binaries reading one file, interleaved round by round (so drift on a noisy
# machine falls on every binary alike): the median, min and max of user + sys CPU seconds per GB,
# the median wall time and the peak RSS of each, with VOLLEY_IMPORT_THREADS (default 2).
#   bench/import/ab.sh FILE ROUNDS BINARY...
# e.g. bench/import/ab.sh /tmp/volley-import-bench/big-3000000.ngrinder.csv 7 ./volley.old target/release/volley
# CPU time is the child's rusage, read with wait4 to the microsecond (child.py).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 FILE ROUNDS BINARY..." >&2; exit 2; }
exec python3 - "$(dirname "$0")" "$@" <<'EOF'
import os, statistics, sys

sys.path.insert(0, sys.argv[1])
from child import run

path, rounds, bins = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
size = os.path.getsize(path)
env = dict(os.environ, VOLLEY_IMPORT_THREADS=os.environ.get("VOLLEY_IMPORT_THREADS", "2"))
runs = {b: [] for b in bins}
for _ in range(rounds):
    for b in bins:
        wall, cpu, peak = run([b, "report", "--format", "json", path], env)
        runs[b].append((cpu / (size / 1e9), wall, int(peak)))
name = os.path.basename(path)
for b in bins:
    cpu = sorted(r[0] for r in runs[b])
    wall = statistics.median(r[1] for r in runs[b])
    peak = max(r[2] for r in runs[b])
    print(f"{name:26} {b:28} CPU s/GB median {statistics.median(cpu):.3f} (min {cpu[0]:.3f} max {cpu[-1]:.3f})"
          f"  wall {wall:.3f} s  {size / 1e6 / wall:.0f} MB/s  peak {peak} MB")
EOF
