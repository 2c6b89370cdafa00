#!/usr/bin/env bash
# Run-to-run noise: does `volley compare` mark only real changes? (issue 14, section 1)
#
# Against the embedded demo target (`volley target serve`, GET /rooms, a 2-connection DB pool
# whose every query holds its connection for --db-rtt, 8 VUs: TPS ≈ 2 / rtt, MTTFB ≈ 4 · rtt):
#
#   A. identical: PAIRS pairs of run groups of 3 on the same target → no row may be marked;
#      every run's figures are kept for the calibration (CV across runs; single-run pairs
#      compared with the single-run rule, to see what a single run would have marked);
#   B. 2× slower: SLOW_PAIRS pairs, a group of 3 from A against a group of 3 on a target with
#      twice the DB round trip → TPS and MTTFB rows must be 🔴 in every pair;
#   C. 10 % slower: SMALL_PAIRS pairs of groups of 5, rtt 20 ms against 22 ms → the detection
#      rate of TPS average and MTTFB average (reported, not asserted);
#   D. the pool case: FIVE_PAIRS pairs, a group of 3 on --db-pool 2 against a group of 3 on
#      --db-pool 10 (rtt 10 ms, 8 VUs: 4× the throughput) → TPS, MTTFB and TTFB p95 rows
#      marked in every pair.
#
#   LOAD=1 loads the machine first: LOAD_PROCS (4) busy loops in other processes, so the
#   load average is ≥ 4 on this 2-core VM while volley and the target run; they are stopped
#   at the end, and the load average is printed before, during and after.
#
#   bench/noise.sh                                   # ~15 min with DURATION=5s
#   LOAD=1 bench/noise.sh                            # the same on a loaded machine
#   PAIRS=10 SLOW_PAIRS=10 SMALL_PAIRS=5 FIVE_PAIRS=2 DURATION=5s bench/noise.sh
#   JUDGE_ONLY=1 WORK=/tmp/volley-noise.XXXX bench/noise.sh   # judge recorded groups again
#
# Needs a release build (cargo build --release) and python3. Prints a Markdown summary and
# exits 1 when A, B (≥ 9 in 10 pairs) or D fails. Everything stays in $WORK (a temporary
# directory by default).
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
PAIRS=${PAIRS:-10}
SLOW_PAIRS=${SLOW_PAIRS:-10}
SMALL_PAIRS=${SMALL_PAIRS:-5}
FIVE_PAIRS=${FIVE_PAIRS:-2}
LOAD=${LOAD:-}
LOAD_PROCS=${LOAD_PROCS:-4}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
INTERVAL=${INTERVAL:-250ms}
VUS=${VUS:-8}
PORT=${PORT:-18481}
WORK=${WORK:-$(mktemp -d /tmp/volley-noise.XXXXXX)}
[ -x "$VOLLEY" ] || { echo "noise.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "noise.sh: python3 is missing" >&2; exit 2; }
mkdir -p "$WORK"

target_pid=
serve() { # serve RTT [POOL]: (re)start the demo target with that DB round trip and pool (2)
  stop_target
  "$VOLLEY" target serve --listen "127.0.0.1:$PORT" --db-pool "${2:-2}" --db-rtt "$1" >"$WORK/serve-$1.log" 2>&1 &
  target_pid=$!
  for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return; sleep 0.1; done
  echo "noise.sh: the demo target did not start (see $WORK/serve-$1.log)" >&2; exit 2
}
stop_target() { if [ -n "$target_pid" ]; then kill "$target_pid" 2>/dev/null || true; wait "$target_pid" 2>/dev/null || true; target_pid=; fi; }
hogs=()
stop_load() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done; hogs=(); }
trap 'stop_target; stop_load' EXIT
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

group() { # group NAME N: a run group of N runs into $WORK/NAME; prints the group directory
  "$VOLLEY" run --url "http://127.0.0.1:$PORT/rooms" --vus "$VUS" --duration "$DURATION" --warmup "$WARMUP" \
    --interval "$INTERVAL" --repeat "$2" --name "$1" -o "$WORK/$1" --progress none >"$WORK/$1.out" 2>"$WORK/$1.err" \
    || { echo "noise.sh: run group $1 failed (see $WORK/$1.err)" >&2; exit 2; }
  ls -d "$WORK/$1"/*/ | head -1
}
compare() { # compare OUT BEFORE AFTER: the comparison as JSON in OUT
  "$VOLLEY" compare --format json "$2" "$3" >"$1"
}

started=$(date +%s)
first() { ls -d "$1"/*/ | head -1; }   # the first directory under $1 (a group, or a group's first run)
if [ -z "${JUDGE_ONLY:-}" ]; then
  echo "noise.sh: work in $WORK; $(nproc) CPUs, load average $(loadavg)" >&2
  if [ -n "$LOAD" ]; then
    # Busy loops in other processes (not niced): each wants a whole core all the time.
    for _ in $(seq "$LOAD_PROCS"); do sh -c 'while :; do :; done' & hogs+=($!); done
    sleep 60   # the 1-minute load average needs a minute to show them
    echo "noise.sh: $LOAD_PROCS busy loops started; load average $(loadavg)" >&2
    echo "load: $LOAD_PROCS busy loops (sh -c 'while :; do :; done'), load average $(loadavg) at the start" >"$WORK/load.txt"
  fi
  serve 10ms
  for i in $(seq "$PAIRS"); do group "same-a$i" 3 >/dev/null; group "same-b$i" 3 >/dev/null; done
  serve 20ms
  for i in $(seq "$SLOW_PAIRS"); do group "slow$i" 3 >/dev/null; done
  for i in $(seq "$SMALL_PAIRS"); do
    serve 20ms; group "ten-a$i" 5 >/dev/null
    serve 22ms; group "ten-b$i" 5 >/dev/null
  done
  for i in $(seq "$FIVE_PAIRS"); do
    serve 10ms 2; group "pool2-$i" 3 >/dev/null
    serve 10ms 10; group "pool10-$i" 3 >/dev/null
  done
  stop_target
  echo "noise.sh: load average after recording $(loadavg)" >&2
  [ -n "$LOAD" ] && echo "load average at the end, with the busy loops: $(loadavg)" >>"$WORK/load.txt"
  stop_load
fi
# Judged from what is on disk: JUDGE_ONLY=1 WORK=<dir> bench/noise.sh judges recorded groups again.
for i in $(seq "$PAIRS"); do
  a=$(first "$WORK/same-a$i"); b=$(first "$WORK/same-b$i")
  compare "$WORK/A-$i.json" "$a" "$b"
  # The same runs, one against one: what the single-run rule would have said.
  compare "$WORK/A1-$i.json" "$(first "$a")" "$(first "$b")"
done
for i in $(seq "$SLOW_PAIRS"); do compare "$WORK/B-$i.json" "$(first "$WORK/same-a$i")" "$(first "$WORK/slow$i")"; done
for i in $(seq "$SMALL_PAIRS"); do compare "$WORK/C-$i.json" "$(first "$WORK/ten-a$i")" "$(first "$WORK/ten-b$i")"; done
for i in $(seq "$FIVE_PAIRS"); do compare "$WORK/D-$i.json" "$(first "$WORK/pool2-$i")" "$(first "$WORK/pool10-$i")"; done
elapsed=$(( $(date +%s) - started ))

python3 - "$WORK" "$PAIRS" "$SLOW_PAIRS" "$SMALL_PAIRS" "$elapsed" "$DURATION" "$FIVE_PAIRS" <<'PY'
import glob, json, math, os, statistics, sys
work, pairs, slow, small, elapsed, duration, five = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], int(sys.argv[7])
load = lambda p: json.load(open(p))
rows = lambda c: c["steps"][0]["rows"]
ok = True
print(f"## bench/noise.sh — {pairs} identical pairs, {slow} 2× pairs, {small} 10 % pairs, {five} pool pairs; runs of {duration}; {elapsed} s in all\n")
if os.path.exists(f"{work}/load.txt"):
    print(open(f"{work}/load.txt").read())
notes = lambda c: c["steps"][0].get("notes", [])
# A: identical groups of 3.
marked = [(i, r["key"], r["verdict"], round(r["change_pct"], 1)) for i in range(1, pairs + 1) for r in rows(load(f"{work}/A-{i}.json")) if r["verdict"] != "noise"]
single = [(i, r["key"], r["verdict"], round(r["change_pct"], 1)) for i in range(1, pairs + 1) for r in rows(load(f"{work}/A1-{i}.json")) if r["verdict"] != "noise"]
print(f"A. identical, groups of 3: {len(marked)} rows marked in {pairs} pairs {marked if marked else ''}")
print(f"   the same pairs' first runs, single-run rule: {len(single)} rows marked {single if single else ''}")
ok &= not marked
# B: 2× slower.
need = ["tps_avg", "tps_p50", "mttfb_avg_ms", "mttfb_p50_ms"]
hits = 0
for i in range(1, slow + 1):
    v = {r["key"]: r for r in rows(load(f"{work}/B-{i}.json"))}
    good = all(v[k]["verdict"] == "worse" for k in need)
    hits += good
    print(f"B. pair {i}: " + ", ".join(f"{k} {v[k]['change_pct']:+.1f}% {v[k]['verdict']}" for k in need))
print(f"B. 2× slower, groups of 3: TPS and MTTFB rows 🔴 in {hits} of {slow} pairs")
ok &= hits >= math.ceil(0.9 * slow)
# C: 10 % slower, groups of 5.
det = {"tps_avg": 0, "mttfb_avg_ms": 0}
for i in range(1, small + 1):
    v = {r["key"]: r for r in rows(load(f"{work}/C-{i}.json"))}
    for k in det:
        det[k] += v[k]["verdict"] == "worse"
    print(f"C. pair {i}: " + ", ".join(f"{k} {v[k]['change_pct']:+.1f}% (noise ±{v[k]['noise_pct']:.1f}%) {v[k]['verdict']}" for k in det))
print("C. 10 % slower, groups of 5: detected " + ", ".join(f"{k} {n}/{small}" for k, n in det.items()))
# D: pool 2 against pool 10 (4× the throughput).
needd = ["tps_avg", "mttfb_avg_ms", "mttfb_p95_ms", "ttfb_p95_ms"]
dhits = 0
for i in range(1, five + 1):
    c = load(f"{work}/D-{i}.json")
    v = {r["key"]: r for r in rows(c)}
    good = all(v[k]["verdict"] != "noise" for k in needd if k in v)
    dhits += good
    print(f"D. pair {i}: " + ", ".join(f"{k} {v[k]['change_pct']:+.1f}% (noise ±{v[k]['noise_pct']:.1f}%) {v[k]['verdict']}" for k in needd if k in v))
print(f"D. pool 2 → pool 10, groups of 3: TPS, MTTFB and TTFB p95 marked in {dhits} of {five} pairs")
ok &= dhits == five
# What the groups said they can call, and the runs they left out.
for tag, n in [("A", pairs), ("B", slow), ("D", five)]:
    for i in range(1, n + 1):
        for note in notes(load(f"{work}/{tag}-{i}.json")):
            print(f"{tag}. pair {i}: {note}")
# Calibration: every identical run's figures (A), spread across runs and single-run pair changes.
print("\n### Run-to-run spread, identical runs (A)\n\n| figure | runs | mean | CV across runs | median abs change, pairs of single runs | 95th pct abs change | max abs change |\n|---|---|---|---|---|---|---|")
for key in ["tps_avg", "mttfb_avg_ms", "mttfb_p99_ms", "ttfb_p50_ms", "ttfb_p99_ms", "ttfb_p99_9_ms"]:
    vals = []
    for f in sorted(glob.glob(f"{work}/same-*/*/summary.json")):
        vals += [r["values"] for r in load(f)["rows"] if r["key"] == key]
    runs = [x for v in vals for x in v]
    if len(runs) < 2:
        continue
    changes = sorted(abs(b - a) / a * 100 for a, b in zip(runs[0::2], runs[1::2]))
    p95 = changes[min(len(changes) - 1, int(0.95 * len(changes)))]
    print(f"| {key} | {len(runs)} | {statistics.mean(runs):.2f} | {statistics.stdev(runs) / statistics.mean(runs) * 100:.1f}% | {statistics.median(changes):.1f}% | {p95:.1f}% | {changes[-1]:.1f}% |")
print(f"\nverdict: {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
