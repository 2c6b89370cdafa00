#!/usr/bin/env bash
# nGrinder's output.csv by test length: `volley report` against the seed's own pandas script
# (seed_suite.py) on one-second rows of an hour, a day, a week and 35 days, and on the longest,
# the least any reader does (floor.rs: split and `str::parse::<f64>` every field on one core;
# then the same keeping each row's 15 numbers). Median of ROUNDS, interleaved: wall, user+sys
# CPU (wait4, to the microsecond), CPU ns per row and per byte, peak RSS; and whether volley
# prints the same suite figures as the seed script, line for line.
#   bench/import/ngrinder.sh [ROUNDS]        (default 5)
# Env: WORK (files, venv; default /tmp/volley-import-bench), VOLLEY_IMPORT_THREADS (default 2),
# NO_PANDAS=1. Needs target/release/volley (cargo build --release) and rustc.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
WORK=${WORK:-/tmp/volley-import-bench}
mkdir -p "$WORK"
[ -x target/release/volley ] || cargo build --release
rustc -O -o "$WORK/floor" bench/import/floor.rs
if [ -z "${NO_PANDAS:-}" ] && [ ! -x "$WORK/venv/bin/python" ]; then
  python3 -m venv "$WORK/venv" && "$WORK/venv/bin/pip" install -q pandas numpy
fi
files=()
for rows in 3600 86400 604800 3000000; do
  f="$WORK/ngrinder-$rows.csv"
  [ -f "$f" ] || python3 bench/import/gen.py ngrinder "$rows" "$f"
  files+=("$f")
done
exec python3 - "$ROUNDS" "$WORK" "${files[@]}" <<'PY'
import os, re, statistics, subprocess, sys
sys.path.insert(0, "bench/import")
from child import run as child
rounds, work, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
env = dict(os.environ, VOLLEY_IMPORT_THREADS=os.environ.get("VOLLEY_IMPORT_THREADS", "2"), LC_ALL="C.UTF-8")
tools = {"volley report": lambda f: ["target/release/volley", "report", "--format", "json", f]}
if not os.environ.get("NO_PANDAS"):
    tools["seed script"] = lambda f: [f"{work}/venv/bin/python", "bench/import/seed_suite.py", f]
run = lambda argv: child(argv, env)
def figures(text, value):
    # The suite's fourteen lines (Total Tests .. the variability): the numbers of each value.
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if "Total Tests" in l)
    return [n.replace(",", "") for l in lines[start:start + 14] for n in re.findall(r"[0-9][0-9,]*(?:\.[0-9]+)?", value(l))]
print(f"{'rows':>9} {'MB':>7}  {'reader':<24} {'wall ms':>9} {'CPU ms':>9} {'ns/row':>7} {'CPU s/GB':>8} {'peak MB':>8}")
for f in files:
    size, rows = os.path.getsize(f), sum(1 for _ in open(f, "rb")) - 1
    these = dict(tools)
    if f == files[-1]:
        these["floor: parse only"] = lambda f: [f"{work}/floor", f]
        these["floor: parse and keep"] = lambda f: [f"{work}/floor", f, "store"]
    got = {t: [] for t in these}
    for _ in range(rounds):
        for t, argv in these.items():
            got[t].append(run(argv(f)))
    if "seed script" in tools:
        ours = figures(subprocess.run(["target/release/volley", "report", f], env=env, capture_output=True, text=True, check=True).stdout, lambda l: re.split(r"\s{2,}", l.strip(), maxsplit=1)[-1])
        seeds = figures(subprocess.run(tools["seed script"](f), env=env, capture_output=True, text=True, check=True).stdout, lambda l: l.split(":", 1)[-1])
        print(f"{rows:>9} figures: {'the same 14 as the seed script prints' if ours == seeds else f'DIFFER: volley {ours} seed {seeds}'}")
    for t, runs in got.items():
        w, c, m = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"{rows:>9} {size / 1e6:>7.1f}  {t:<24} {w * 1e3:>9.1f} {c * 1e3:>9.1f} {c / rows * 1e9:>7.0f} {c / (size / 1e9):>8.2f} {m:>8.0f}")
PY
