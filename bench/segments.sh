#!/usr/bin/env bash
# Split runs across network namespaces, and the cost of merging long ones.
#
# 1. The acceptance test of crates/cli/tests/it/netns.rs in release mode: N = 1, 2, 4
#    `volley run --segment i/N` processes, each in its own network namespace and address,
#    against the demo target in another; prints the target's count, the merged count, TPS and
#    TTFB percentiles per N (needs root for `ip netns`).
# 2. `volley merge` of 8 synthetic segments × HOURS hours at 1 s intervals (written through the
#    real RunWriter by crates/merge/examples/synth_segments.rs), then `volley report` of the
#    merged run, each timed by GNU time (peak RSS: it must not grow with the run's length).
#
#   bench/segments.sh                         # both
#   RATE=5000 HOURS=2 bench/segments.sh       # requests/s per segment (default 1000), hours (1)
#   MERGE_ONLY=1 RATE=5000 bench/segments.sh  # part 2 only
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}

if [ -z "${MERGE_ONLY:-}" ]; then
echo "== segments in network namespaces (release)"
cargo test --release --locked -p volley-cli --test it netns -- --nocapture 2>&1 | grep -E '^(run|open|closed|SKIPPED)|test result'

fi

intervals=$(( ${HOURS:-1} * 3600 ))
echo "== merge: 8 segments x $intervals intervals, ${RATE:-1000} requests/s in all"
cargo build --release --locked -p volley-cli
cargo build --release --locked -p volley-merge --example synth_segments
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$CARGO_TARGET_DIR/release/examples/synth_segments" "$work/in" 8 "$intervals" "${RATE:-1000}" 2>/dev/null
du -sh "$work/in"
/usr/bin/time -v "$CARGO_TARGET_DIR/release/volley" merge "$work/in" -o "$work/merged" >/dev/null 2>"$work/time.txt" || true
grep -E 'Elapsed \(wall|Maximum resident|User time|System time|Exit status' "$work/time.txt"
tail -n 3 "$work/merged/series.csv" | cut -c1-80
du -sh "$work/merged/latency.hlog"
echo "== report of the merged run"
/usr/bin/time -v "$CARGO_TARGET_DIR/release/volley" report "$work/merged" >/dev/null 2>"$work/time.txt" || true
grep -E 'Elapsed \(wall|Maximum resident|User time|System time|Exit status' "$work/time.txt"
