#!/usr/bin/env bash
# volley beside h2load (nghttp2) over HTTP/2, against a loopback nginx (`return 200 "hello\n"`,
# one worker): h2c with prior knowledge and h2 over TLS (ALPN; TLS 1.3 with one cipher suite,
# TLS_AES_128_GCM_SHA256, forced by nginx so both clients use the same), for each shape of
# the matrix: C connections carrying M streams each (h2load -c C -m M; volley --vus C*M
# --connections C). nginx is pinned to the first CPU, each client to the second; rounds are
# interleaved (h2load, volley, h2load, volley, ...). Prints one Markdown table: requests/s,
# client CPU µs per request (user+sys of the whole process, start-up included, from GNU
# time), peak RSS, mean request time (h2load gives no percentiles; volley's p50/p99 TTFB
# beside), each the median over the rounds, then each round's requests/s and CPU µs per
# request (the spread), and volley's ratios to h2load (of the medians, and round by round).
#
#   bench/h2.sh                                   # 3 rounds of 10 s, the whole matrix
#   RUNS=5 DURATION=20 bench/h2.sh                # on a quiet machine
#   SHAPES="50x1" MODES="h2c" RUNS=1 bench/h2.sh  # one cell
#   CALLGRIND=1 RUNS=0 bench/h2.sh                # only the instruction counts (below)
#
# CALLGRIND=1 adds, per cell, each client's user-space instructions per request under
# valgrind's callgrind — repeatable where the wall-clock rounds spread ±20 % on a shared VM.
# Each client runs twice (5,000 and 25,000 requests); the difference over the 20,000 extra
# requests leaves start-up and the end-of-run report out. Kernel time (the sockets) is not in
# it, so it is the clients' own code only. CG_OUT=DIR keeps the callgrind.out files there
# (TOOL-MODE-CxM-N.out) for callgrind_annotate; CG_TOOLS (default "h2load volley") picks the
# clients. CG_WRAP is put before valgrind: a volley that reads the clock through rustix >= 1
# (the closed run's alarm, since 5a55662) dies under valgrind 3.19 on Linux >= 6.4, which hands
# rustix the host's auxv through prctl(PR_GET_AUXV) and so a vDSO the guest does not have
# (rustix issue 1559); a wrapper that makes that prctl fail (a seccomp filter, then exec)
# sends rustix to /proc/self/auxv, which valgrind fakes. The script stops if a client dies.
# Beside each count, system calls per request (every thread, perf's raw_syscalls:sys_enter,
# the same 25,000 − 5,000 requests run natively) when perf can read that tracepoint.
#
# Needs nginx (with http_v2, Debian's nginx-light has it), h2load (nghttp2-client), openssl
# and GNU time (Debian: apt-get install nginx-light nghttp2-client openssl time), and a
# release build: cargo build --release.
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
SHAPES=${SHAPES:-"50x1 10x10 1x100"}
MODES=${MODES:-"h2c tls"}
PORT=${PORT:-18092}
TLS_PORT=${TLS_PORT:-18093}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PATH=$PATH:/usr/sbin

for tool in nginx h2load openssl taskset python3; do
  command -v "$tool" >/dev/null || { echo "h2.sh: $tool is missing (apt-get install nginx-light nghttp2-client openssl util-linux python3)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "h2.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "h2.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
for p in "$PORT" "$TLS_PORT"; do
  if (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "h2.sh: port $p is taken; set PORT / TLS_PORT" >&2; exit 2; fi
done

work=$(mktemp -d /tmp/volley-h2.XXXXXX)
mkdir -p "$work/tmp" "$work/runs"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
hello_nginx_conf "$work" "127.0.0.1:$PORT http2" 4096 "  http2_max_concurrent_streams 128;
  server {
    listen 127.0.0.1:$TLS_PORT ssl http2;
    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.3;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
    location / { return 200 \"hello\\n\"; }
  }" >"$work/nginx.conf"
taskset -c "$SERVER_CPU" nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$TLS_PORT) 2>/dev/null && break; sleep 0.1; done

results=$work/results.tsv
for round in $(seq "$RUNS"); do
  for mode in $MODES; do
    for shape in $SHAPES; do
      c=${shape%x*} m=${shape#*x}
      if [ "$mode" = tls ]; then url=https://localhost:$TLS_PORT/; extra=(--insecure); else url=http://127.0.0.1:$PORT/; extra=(--http2); fi
      /usr/bin/time -f "%U %S %M" -o "$work/h2load.time" taskset -c "$CLIENT_CPU" \
        h2load -t1 -c"$c" -m"$m" -D"$DURATION" "$url" >"$work/h2load.out" 2>&1
      python3 - "$work/h2load.out" "$work/h2load.time" "$round" "$mode" "$shape" "$DURATION" >>"$results" <<'PY'
import re, sys
out = open(sys.argv[1]).read(); u, s, rss = open(sys.argv[2]).read().split()[-3:]
m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
if not m:
    sys.exit("h2load gave no summary:\n" + out)
ok, failed, errored = map(int, m.groups())
t = re.search(r"time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\s", out)
mean = float(t.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[t.group(2)]
secs = float(re.search(r"finished in ([\d.]+)s", out).group(1))
print("h2load", sys.argv[3], sys.argv[4], sys.argv[5], ok, failed + errored, secs, float(u) + float(s), int(rss), mean, "", "", sep="\t")
PY
      rm -rf "$work/runs"/*
      /usr/bin/time -f "%U %S %M" -o "$work/volley.time" taskset -c "$CLIENT_CPU" \
        "$VOLLEY" run --url "$url" "${extra[@]}" --vus $((c * m)) --connections "$c" --duration "${DURATION}s" \
        --threads 1 --progress none --no-error-stop -o "$work/runs" --name bench >"$work/volley.out" 2>"$work/volley.err" \
        || { echo "h2.sh: volley failed:"; tail -5 "$work/volley.err"; exit 1; } >&2
      python3 - "$work/runs" "$work/volley.time" "$round" "$mode" "$shape" "$DURATION" >>"$results" <<'PY'
import glob, json, sys
r = json.load(open(glob.glob(sys.argv[1] + "/*/report.json")[0])); u, s, rss = open(sys.argv[2]).read().split()[-3:]
pr = r["per_request"]; ok = r["seed_suite"]["total_tests"]; errors = r["seed_suite"]["errors"]
mean = pr["total_ms"]["mean_ms"]
print("volley", sys.argv[3], sys.argv[4], sys.argv[5], ok, errors, sys.argv[6], float(u) + float(s), int(rss), mean, pr["ttfb_ms"]["p50_ms"], pr["ttfb_ms"]["p99_ms"], sep="\t")
PY
    done
  done
done

[ "$RUNS" -gt 0 ] && python3 - "$results" "$RUNS" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
by = {}
for tool, rnd, mode, shape, ok, err, secs, cpu, rss, mean, p50, p99 in rows:
    ok, err = int(ok), int(err)
    by.setdefault((mode, shape, tool), []).append(
        (ok / float(secs), float(cpu) * 1e6 / max(ok + err, 1), int(rss) / 1024, float(mean), err, p50, p99))
print(f"HTTP/2, nginx (1 worker) on one core, the client on the other; median of {sys.argv[2]} interleaved rounds")
print("C connections x M streams each: h2load -c C -m M; volley --vus C*M --connections C\n")
print("| mode | C x M | tool | req/s | CPU µs/req | peak RSS MB | mean req ms | TTFB p50/p99 ms | errors | per-round req/s | per-round CPU µs/req | CPU µs/req min–max |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
ratios = []
for (mode, shape, tool), v in sorted(by.items(), key=lambda kv: (kv[0][0], -int(kv[0][1].split("x")[0]), kv[0][2])):
    med = [statistics.median(c) for c in zip(*[r[:5] for r in v])]
    lat = f"{statistics.median(float(r[5]) for r in v):.2f} / {statistics.median(float(r[6]) for r in v):.2f}" if v[0][5] else "-"
    rounds = " / ".join(f"{r[0]:,.0f}" for r in v)
    cpus = [r[1] for r in v]
    spread = f"{min(cpus):.2f}–{max(cpus):.2f} (±{(max(cpus) - min(cpus)) / 2 / med[1] * 100:.0f} %)"
    print(f"| {mode} | {shape} | {tool} | {med[0]:,.0f} | {med[1]:.2f} | {med[2]:.1f} | {med[3]:.3f} | {lat} | {med[4]:.0f} | {rounds} | {' / '.join(f'{c:.2f}' for c in cpus)} | {spread} |")
    if tool == "volley" and (mode, shape, "h2load") in by:
        hv = by[(mode, shape, "h2load")]
        h = [statistics.median(c) for c in zip(*[r[:2] for r in hv])]
        per_round = " / ".join(f"{a[1] / b[1]:.2f}" for a, b in zip(v, hv))
        ratios.append(f"{mode} {shape}: volley/h2load {med[0] / h[0]:.2f}x req/s, {med[1] / h[1]:.2f}x CPU per request (per round: {per_round})")
print()
print("\n".join(ratios))
PY

if [ -n "${CALLGRIND:-}" ]; then
  command -v valgrind >/dev/null || { echo "h2.sh: CALLGRIND=1 needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  echo
  SYSCALLS=0
  perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 && SYSCALLS=1
  echo "| mode | C x M | h2load instructions/request | volley instructions/request | ratio | h2load / volley syscalls/request |"
  echo "|---|---|---|---|---|---|"
  CG_TOOLS=${CG_TOOLS:-"h2load volley"}
  [ -n "${CG_OUT:-}" ] && mkdir -p "$CG_OUT"
  # instructions TOOL MODE C M N: callgrind's instruction count for N requests.
  instructions() {
    local tool=$1 mode=$2 c=$3 m=$4 n=$5 url extra out=/dev/null
    case " $CG_TOOLS " in *" $tool "*) ;; *) echo 0; return ;; esac
    [ -n "${CG_OUT:-}" ] && out=$CG_OUT/$tool-$mode-${c}x$m-$n.out
    if [ "$mode" = tls ]; then url=https://localhost:$TLS_PORT/; extra=(--insecure); else url=http://127.0.0.1:$PORT/; extra=(--http2); fi
    rm -rf "$work/runs"/*
    if [ "$tool" = h2load ]; then
      ${CG_WRAP:-} valgrind --tool=callgrind --callgrind-out-file="$out" h2load -t1 -c"$c" -m"$m" -n"$n" "$url" >/dev/null 2>"$work/cg.err"
    else
      ${CG_WRAP:-} valgrind --tool=callgrind --callgrind-out-file="$out" "$VOLLEY" run --url "$url" "${extra[@]}" --vus $((c * m)) --connections "$c" \
        --iterations $((n / (c * m))) --threads 1 --progress none -o "$work/runs" --name cg >/dev/null 2>"$work/cg.err"
    fi
    if grep -q 'Process terminating' "$work/cg.err" || ! grep -q 'Collected : [0-9]' "$work/cg.err"; then
      { echo "h2.sh: $tool died under callgrind (see CG_WRAP above):"; grep -v '^==[0-9]*==    by' "$work/cg.err" | tail -12; } >&2
      return 1
    fi
    grep -o 'Collected : [0-9]*' "$work/cg.err" | tr -dc 0-9
  }
  # syscalls TOOL MODE C M N: the system calls (all threads) of a native run of N requests.
  syscalls() {
    local tool=$1 mode=$2 c=$3 m=$4 n=$5 url extra
    [ "$SYSCALLS" = 1 ] || { echo 0; return; }
    if [ "$mode" = tls ]; then url=https://localhost:$TLS_PORT/; extra=(--insecure); else url=http://127.0.0.1:$PORT/; extra=(--http2); fi
    rm -rf "$work/runs"/*
    if [ "$tool" = h2load ]; then
      perf stat -x, -e raw_syscalls:sys_enter -o "$work/perf.csv" -- taskset -c "$CLIENT_CPU" h2load -t1 -c"$c" -m"$m" -n"$n" "$url" >/dev/null 2>&1
    else
      perf stat -x, -e raw_syscalls:sys_enter -o "$work/perf.csv" -- taskset -c "$CLIENT_CPU" "$VOLLEY" run --url "$url" "${extra[@]}" --vus $((c * m)) \
        --connections "$c" --iterations $((n / (c * m))) --threads 1 --progress none -o "$work/runs" --name sc >/dev/null 2>&1
    fi
    grep raw_syscalls "$work/perf.csv" | cut -d, -f1
  }
  for mode in $MODES; do
    for shape in $SHAPES; do
      c=${shape%x*} m=${shape#*x}
      h2=$(instructions h2load "$mode" "$c" "$m" 25000); h1=$(instructions h2load "$mode" "$c" "$m" 5000)
      v2=$(instructions volley "$mode" "$c" "$m" 25000); v1=$(instructions volley "$mode" "$c" "$m" 5000)
      h=$(( (h2 - h1) / 20000 )) v=$(( (v2 - v1) / 20000 ))
      sc=$(awk -v a="$(syscalls h2load "$mode" "$c" "$m" 25000)" -v b="$(syscalls h2load "$mode" "$c" "$m" 5000)" \
        -v x="$(syscalls volley "$mode" "$c" "$m" 25000)" -v y="$(syscalls volley "$mode" "$c" "$m" 5000)" \
        'BEGIN { if (a > 0) printf "%.2f / %.2f", (a - b) / 20000, (x - y) / 20000; else printf "–" }')
      echo "| $mode | $shape | $h | $v | $(awk -v v="$v" -v h="$h" 'BEGIN { if (h > 0) printf "%.2f×", v / h; else printf "–" }') | $sc |"
    done
  done
fi
