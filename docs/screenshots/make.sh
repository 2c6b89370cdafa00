#!/usr/bin/env bash
# Screenshots of the pages a person reads, taken in headless Chromium as a person would see
# them: a run's report, a run whose errors lead its findings, a comparison, a sweep, a run group,
# a capacity search and a comparison of two, and a group of runs served with `report --serve`'s
# page (the same HTML). The live dashboard's is taken by its own test
# (crates/cli/tests/it/live.rs writes target/live-dashboard.png), copied here when present.
#
#   docs/screenshots/make.sh            # uses target/debug/volley (cargo build first)
#   VOLLEY=target/release/volley docs/screenshots/make.sh
#
# Loads only the embedded demo target on loopback; about two minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
V=${VOLLEY:-target/debug/volley}
out=docs/screenshots
T=$(mktemp -d)
srv=
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome)

# Quiet runs: the demo's phases, their comparison, and each phase's report.html.
"$V" demo --quick -o "$T/demo" >/dev/null
"$V" sweep --demo --vary db-pool=2,8 --demo-knob db-rtt=5ms -o "$T/sweep" -- \
  --url '{target}/rooms' --vus 8 --duration 4s --interval 250ms >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$V" target serve --listen "127.0.0.1:$port" --db-pool 4 >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
"$V" run --url "http://127.0.0.1:$port/rooms" --vus 6 --duration 4s --repeat 3 --name rooms \
  --threshold 'ttfb p99 < 200ms' -o "$T/group" --progress none >/dev/null 2>&1 || true
"$V" report --html "$T/group.html" "$T"/group/* >/dev/null
# Two capacity searches of the same target (a pool of 4, then the same with 2 connections held
# by --connections), and their comparison.
for c in a b; do
  extra=(); [ "$c" = b ] && extra=(--connections 2)
  "$V" capacity --url "http://127.0.0.1:$port/rooms" --rates 50..3000 --slo 'ttfb p99 < 100ms' \
    --probe 2s --warmup 1s --precision 20% --server-metrics "http://127.0.0.1:$port/metrics" \
    "${extra[@]}" -o "$T/cap-$c" >/dev/null 2>&1 || true
done
"$V" compare "$T"/cap-a/*/ "$T"/cap-b/*/ --html "$T/capacity-compare.html" >/dev/null 2>&1 || true

shoot() { # name height page
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=5000 \
    --window-size=1200,"$2" --screenshot="$out/$1.png" "file://$3" 2>/dev/null
  echo "wrote $out/$1.png"
}
report=$(ls -d "$T"/demo/*/ | grep -i phase | tail -1)
shoot report 2400 "${report}report.html"
original=$(ls -d "$T"/demo/*/ | grep -i original | tail -1)
shoot errors 1600 "${original}report.html"
shoot capacity 2400 "$(ls -d "$T"/cap-a/*/ | head -1)capacity.html"
shoot capacity-compare 2000 "$T/capacity-compare.html"
shoot compare 2400 "$T/demo/comparison.html"
shoot sweep 2000 "$T/sweep/sweep.html"
shoot group 2000 "$T/group.html"
if [ -f target/live-dashboard.png ]; then cp target/live-dashboard.png "$out/dashboard.png"; echo "copied $out/dashboard.png"; fi
