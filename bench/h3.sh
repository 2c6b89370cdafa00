#!/usr/bin/env bash
# volley beside oha over HTTP/3 (issue 57 §3), against one loopback server: Debian's caddy
# 2.6.2 (`respond "hello" 200`, HTTP/3 on UDP, an openssl self-signed certificate, GOMAXPROCS=1)
# pinned to the first CPU, each client to the second. For each C in CONNS: oha -c C -p 1
# (C connections, one request at a time on each) and volley --vus C (one connection per VU,
# the same). Rounds are interleaved (oha, volley, oha, volley, ...). Prints one Markdown
# table: requests/s, client CPU µs per request (user+sys of the whole process, start-up
# included, from GNU time), peak RSS, mean request time, each the median over the rounds,
# then each round's requests/s and CPU µs per request (the spread), and volley's ratios to
# oha (of the medians, and round by round). The CPU-per-request ratio is the figure to read on
# a shared machine: requests/s moves with whatever else runs.
#
#   bench/h3.sh                          # 3 rounds of 10 s, C = 50 and 10
#   RUNS=5 DURATION=20 bench/h3.sh       # on a quiet machine
#   CONNS=50 RUNS=1 bench/h3.sh          # one cell
#   CALLGRIND=1 RUNS=0 bench/h3.sh       # only user-space instructions per request (below)
#
# CALLGRIND=1 adds, per C, each client's user-space instructions per request under valgrind's
# callgrind: each client runs twice (N1 and N2 requests, default 2,000 and 6,000) and the
# difference over the extra requests leaves start-up and the report out. CG_WRAP goes before
# valgrind, as in h2.sh.
#
# Needs caddy (Debian: apt-get install caddy; only for this bench), openssl, GNU time, python3,
# oha built with HTTP/3:
#   cargo install oha --version 1.16.0 --locked --features http3 --root target/tools/oha
# (oha's own build uses aws-lc-rs; it is a bench tool and never enters volley's tree), and a
# release build of volley: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
OHA=${OHA:-target/tools/oha/bin/oha}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
CONNS=${CONNS:-"50 10"}
PORT=${PORT:-18443}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
N1=${N1:-2000}
N2=${N2:-6000}

for tool in caddy openssl taskset python3; do
  command -v "$tool" >/dev/null || { echo "h3.sh: $tool is missing (apt-get install caddy openssl util-linux python3)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "h3.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "h3.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
[ -x "$OHA" ] || { echo "h3.sh: $OHA missing (cargo install oha --version 1.16.0 --locked --features http3 --root target/tools/oha)" >&2; exit 2; }
"$VOLLEY" run --help | grep -q -- --http3 || { echo "h3.sh: $VOLLEY has no --http3 (rebuild: cargo build --release)" >&2; exit 2; }

work=$(mktemp -d /tmp/volley-h3.XXXXXX)
mkdir -p "$work/runs" "$work/xdg"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
cat >"$work/Caddyfile" <<EOF
{
	admin off
	auto_https off
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$PORT {
	tls $work/cert.pem $work/key.pem
	respond "hello" 200
}
EOF
XDG_DATA_HOME=$work/xdg XDG_CONFIG_HOME=$work/xdg GOMAXPROCS=1 \
  taskset -c "$SERVER_CPU" caddy run --config "$work/Caddyfile" --adapter caddyfile >"$work/caddy.log" 2>&1 &
caddy_pid=$!
trap 'kill $caddy_pid 2>/dev/null; wait $caddy_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
url=https://localhost:$PORT/
# One request each way first: the server answers over HTTP/3, or the bench stops.
"$VOLLEY" run --http3 --insecure --url "$url" --vus 1 --iterations 1 --progress none -o "$work/runs" --name probe >/dev/null 2>"$work/probe.err" \
  || { echo "h3.sh: volley could not reach caddy over HTTP/3:"; tail -5 "$work/probe.err"; tail -5 "$work/caddy.log"; exit 1; } >&2

results=$work/results.tsv
for round in $(seq "$RUNS"); do
  for c in $CONNS; do
    /usr/bin/time -f "%U %S %M" -o "$work/oha.time" taskset -c "$CLIENT_CPU" \
      "$OHA" --http-version 3 --insecure -c "$c" -p 1 -z "${DURATION}s" --no-tui --output-format json "$url" >"$work/oha.json" 2>"$work/oha.err" \
      || { echo "h3.sh: oha failed:"; tail -5 "$work/oha.err"; exit 1; } >&2
    python3 - "$work/oha.json" "$work/oha.time" "$round" "$c" "$DURATION" >>"$results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); u, s, rss = open(sys.argv[2]).read().split()[-3:]
codes = r["statusCodeDistribution"]; ok = sum(v for k, v in codes.items() if k.startswith("2"))
# The requests in flight when -z ends are "aborted due to deadline", not failures (oha's own
# successRate leaves them out too).
errors = sum(codes.values()) - ok + sum(v for k, v in r.get("errorDistribution", {}).items() if k != "aborted due to deadline")
# oha 1.16's HTTP/3 process lingers ~30 s after its -z window (summary.total 40 s for -z 10s,
# and requestsPerSec divided by that); its requests were all sent within the window.
print("oha", sys.argv[3], sys.argv[4], ok, errors, min(r["summary"]["total"], float(sys.argv[5])), float(u) + float(s), int(rss), r["summary"]["average"] * 1e3, "", "", sep="\t")
PY
    rm -rf "$work/runs"/*
    /usr/bin/time -f "%U %S %M" -o "$work/volley.time" taskset -c "$CLIENT_CPU" \
      "$VOLLEY" run --http3 --insecure --url "$url" --vus "$c" --duration "${DURATION}s" \
      --threads 1 --progress none --no-error-stop -o "$work/runs" --name bench >"$work/volley.out" 2>"$work/volley.err" \
      || { echo "h3.sh: volley failed:"; tail -5 "$work/volley.err"; exit 1; } >&2
    python3 - "$work/runs" "$work/volley.time" "$round" "$c" "$DURATION" >>"$results" <<'PY'
import glob, json, sys
r = json.load(open(glob.glob(sys.argv[1] + "/*/report.json")[0])); u, s, rss = open(sys.argv[2]).read().split()[-3:]
pr = r["per_request"]; ok = r["seed_suite"]["total_tests"]; errors = r["seed_suite"]["errors"]
print("volley", sys.argv[3], sys.argv[4], ok - errors, errors, sys.argv[5], float(u) + float(s), int(rss), pr["total_ms"]["mean_ms"], pr["ttfb_ms"]["p50_ms"], pr["ttfb_ms"]["p99_ms"], sep="\t")
PY
  done
done

[ "$RUNS" -gt 0 ] && python3 - "$results" "$RUNS" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
by = {}
for tool, rnd, c, ok, err, secs, cpu, rss, mean, p50, p99 in rows:
    ok, err = int(ok), int(err)
    by.setdefault((c, tool), []).append(
        (ok / float(secs), float(cpu) * 1e6 / max(ok + err, 1), int(rss) / 1024, float(mean), err, p50, p99))
print(f"HTTP/3, caddy 2.6.2 (GOMAXPROCS=1) on one core, the client on the other; median of {sys.argv[2]} interleaved rounds")
print("C connections, one request at a time on each: oha -c C -p 1; volley --vus C\n")
print("| C | tool | req/s | CPU µs/req | peak RSS MB | mean req ms | TTFB p50/p99 ms | errors | per-round req/s | per-round CPU µs/req |")
print("|---|---|---|---|---|---|---|---|---|---|")
ratios = []
for (c, tool), v in sorted(by.items(), key=lambda kv: (-int(kv[0][0]), kv[0][1])):
    med = [statistics.median(x) for x in zip(*[r[:5] for r in v])]
    lat = f"{statistics.median(float(r[5]) for r in v):.2f} / {statistics.median(float(r[6]) for r in v):.2f}" if v[0][5] else "-"
    print(f"| {c} | {tool} | {med[0]:,.0f} | {med[1]:.1f} | {med[2]:.1f} | {med[3]:.3f} | {lat} | {med[4]:.0f} | {' / '.join(f'{r[0]:,.0f}' for r in v)} | {' / '.join(f'{r[1]:.1f}' for r in v)} |")
    if tool == "volley" and (c, "oha") in by:
        ov = by[(c, "oha")]
        o = [statistics.median(x) for x in zip(*[r[:2] for r in ov])]
        per_round = " / ".join(f"{a[1] / b[1]:.2f}" for a, b in zip(v, ov))
        ratios.append(f"C={c}: volley/oha {med[0] / o[0]:.2f}x req/s, {med[1] / o[1]:.2f}x CPU per request (per round: {per_round})")
print()
print("\n".join(ratios))
PY

if [ -n "${CALLGRIND:-}" ]; then
  command -v valgrind >/dev/null || { echo "h3.sh: CALLGRIND=1 needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  echo
  echo "| C | oha instructions/request | volley instructions/request | ratio |"
  echo "|---|---|---|---|"
  # instructions TOOL C N: callgrind's instruction count for N requests.
  instructions() {
    local tool=$1 c=$2 n=$3
    rm -rf "$work/runs"/*
    if [ "$tool" = oha ]; then
      ${CG_WRAP:-} valgrind --tool=callgrind --callgrind-out-file=/dev/null "$OHA" --http-version 3 --insecure -c "$c" -p 1 -n "$n" --no-tui --output-format quiet "$url" >/dev/null 2>"$work/cg.err"
    else
      ${CG_WRAP:-} valgrind --tool=callgrind --callgrind-out-file=/dev/null "$VOLLEY" run --http3 --insecure --url "$url" --vus "$c" \
        --iterations $((n / c)) --threads 1 --progress none -o "$work/runs" --name cg >/dev/null 2>"$work/cg.err"
    fi
    if grep -q 'Process terminating' "$work/cg.err" || ! grep -q 'Collected : [0-9]' "$work/cg.err"; then
      { echo "h3.sh: $tool died under callgrind (see CG_WRAP in h2.sh):"; grep -v '^==[0-9]*==    by' "$work/cg.err" | tail -12; } >&2
      return 1
    fi
    grep -o 'Collected : [0-9]*' "$work/cg.err" | tr -dc 0-9
  }
  for c in $CONNS; do
    o2=$(instructions oha "$c" "$N2"); o1=$(instructions oha "$c" "$N1")
    v2=$(instructions volley "$c" "$N2"); v1=$(instructions volley "$c" "$N1")
    o=$(( (o2 - o1) / (N2 - N1) )) v=$(( (v2 - v1) / (N2 - N1) ))
    echo "| $c | $o | $v | $(awk -v v="$v" -v o="$o" 'BEGIN { if (o > 0) printf "%.2f×", v / o; else printf "–" }') |"
  done
fi
