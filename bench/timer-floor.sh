#!/usr/bin/env bash
# The floor under volley's schedule lag: how late this machine wakes a thread that waits on a
# timerfd for an absolute due time, with nothing else to do (bench/harness/timer_floor.c, C,
# no runtime). Waits 1 ms apart (1,000/s) and 200 µs apart (5,000/s), on any CPU and pinned to
# the client CPU that bench/open-model.sh uses, and prints the delay's p50 / p99 / p99.9 / max.
# Compare with open-model.sh's lag columns: what both show is the machine's, not volley's.
# Then the same pinned waits spinning on the clock instead of sleeping (`spin`): what is still
# late then is time the thread was not running at all, which no way of waiting can take back.
#
#   bench/timer-floor.sh               # 10 s per line
#   SECONDS_EACH=30 bench/timer-floor.sh
#
# Needs a C compiler (gcc) and taskset.
set -euo pipefail
cd "$(dirname "$0")"
s=${SECONDS_EACH:-10}
out=$(mktemp -d /tmp/volley-timer-floor.XXXXXX)
gcc -O2 -o "$out/timer_floor" harness/timer_floor.c
cpus=($(taskset -pc $$ | sed 's/.*: //' | tr ',' ' ' | tr '-' ' '))
client=${CLIENT_CPU:-${cpus[1]:-${cpus[0]}}}
"$out/timer_floor" $((s * 1000)) 1000000
"$out/timer_floor" $((s * 5000)) 200000
taskset -c "$client" "$out/timer_floor" $((s * 1000)) 1000000
taskset -c "$client" "$out/timer_floor" $((s * 5000)) 200000
taskset -c "$client" "$out/timer_floor" $((s * 1000)) 1000000 spin
taskset -c "$client" "$out/timer_floor" $((s * 5000)) 200000 spin
rm -rf "$out"
