#!/usr/bin/env bash
# Two or more volley binaries reading one file, interleaved round by round (so drift on a noisy
# machine falls on every binary alike): the median, min and max of user + sys CPU seconds per GB,
# the median wall time and the peak RSS of each, with VOLLEY_IMPORT_THREADS (default 2).
#   bench/import/ab.sh FILE ROUNDS BINARY...
# e.g. bench/import/ab.sh /tmp/volley-import-bench/big-3000000.ngrinder.csv 7 ./volley.old target/release/volley
set -euo pipefail
file=$1 rounds=$2; shift 2
size=$(stat -c %s "$file")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$rounds"); do
  for i in $(seq $#); do
    bin=${!i}
    VOLLEY_IMPORT_THREADS=${VOLLEY_IMPORT_THREADS:-2} /usr/bin/time -f "%U %S %e %M" -o "$tmp/t" "$bin" report --format json "$file" >/dev/null
    awk -v s="$size" '{printf "%.4f %.3f %d\n", ($1 + $2) / (s / 1e9), $3, $4 / 1024}' "$tmp/t" >>"$tmp/$i"
  done
done
for i in $(seq $#); do
  wall=$(sort -n -k2 "$tmp/$i" | awk -v n="$rounds" 'NR == int((n + 1) / 2) { print $2 }')
  sort -n "$tmp/$i" | awk -v f="$(basename "$file")" -v b="${!i}" -v n="$rounds" -v s="$size" -v w="$wall" '
    { c[NR] = $1; if ($3 > m) m = $3 }
    END { printf "%-26s %-28s CPU s/GB median %.2f (min %.2f max %.2f)  wall %.2f s  %.0f MB/s  peak %d MB\n",
          f, b, c[int((n + 1) / 2)], c[1], c[n], w, s / 1e6 / w, m }'
done
