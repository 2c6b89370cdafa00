#!/usr/bin/env bash
# volley beside the peer load tools (wrk, hey, k6, Locust FastHttpUser and HttpUser, oha when
# installed) on the same loopback targets, with the peer harness in bench/harness/ (a copy of the project's shared harness): nginx
# and every client pinned to their own CPU, interleaved rounds, one table per test.
#   bench/peers.sh                        # install what is missing, then all four tests
#   bench/peers.sh throughput co          # a subset
# Tools are installed from their registries (apt, the Go module proxy, PyPI) under
# $BENCH_WORK (default /tmp/volley-bench); see bench/harness/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
harness=${VOLLEY_BENCH_HARNESS:-bench/harness}
[ -x "$harness/run.sh" ] || { echo "peers.sh: the peer harness is not at $harness (set VOLLEY_BENCH_HARNESS)" >&2; exit 2; }
[ -x target/release/volley ] || cargo build --release
"$harness/install.sh"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(throughput co delay memory)
"$harness/run.sh" "${tests[@]}" --volley target/release/volley
