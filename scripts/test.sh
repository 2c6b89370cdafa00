#!/usr/bin/env bash
# The test suite, on a fresh Debian machine too: installs what the tests need when it is
# missing, checks the formatting (`cargo fmt --all --check`) and the lints (`cargo clippy
# --workspace --all-targets -- -D warnings`), then runs `cargo test --workspace --locked`
# with any extra arguments given here
# (e.g. `scripts/test.sh -p volley-formats`, `scripts/test.sh -- --nocapture`).
# It exports VOLLEY_TEST_ALL=1, so a test whose part is missing fails rather than skips, and
# says the wall time of each phase (install, fmt, clippy, build, test) and of the whole.
#
# What the tests need besides Rust 1.89+:
#   chromium    the HTML report is opened in headless Chromium (crates/cli/tests/it/html.rs)
#   postgresql  the demo target's PostgreSQL tests start a throwaway server with initdb
#               (crates/demo/tests/postgres.rs)
#   gcc         a C compiler and linker: Rust links with `cc`, ring and SQLite are built from C
#   procps      `kill`, used to send Ctrl-C to a run (crates/cli/tests/it/run.rs)
#   iproute2    `ip netns`: split runs with each segment in its own network namespace
#               (crates/cli/tests/it/netns.rs; skipped, saying why, where namespaces are refused)
#   libxml2-utils  `xmllint`, which validates the --junit files against the JUnit schemas in
#               fixtures/junit/ (crates/cli/tests/it/ci.rs)
#   default-jdk-headless, maven  build and run bench/spring/app, Spring Boot 2.7 + HikariCP +
#               Tomcat on H2 from Maven Central, the seeds' own stack (crates/cli/tests/it/spring.rs);
#               and run HdrHistogram 2.2.2's HistogramLogProcessor (Maven Central, into
#               target/tools/hdrhistogram), which reads a run's latency.hlog
#               (crates/cli/tests/it/hlog_readers.rs)
#   nodejs, npm  playwright-core (pinned, from npm) under target/tools/playwright drives that
#               Chromium through the live dashboard (crates/cli/tests/it/live.rs)
#   prometheus  a real Prometheus (2.42 on bookworm) that the tests start on a free loopback port
#               with its remote-write receiver, for --out prometheus= and /metrics
#               (crates/cli/tests/it/prometheus.rs, crates/export/tests/live.rs)
#   go          builds target/tools/k8s-expand, Kubernetes' own expansion of a pod's args
#               (scripts/k8s-expand, crates/cli/tests/it/k8s.rs); not installed here: Go 1.21+
#   python3-venv a Python venv under target/tools/venv (pinned versions, from PyPI) for:
#     moto (S3 only, with flask for moto_server) a real S3-compatible server on loopback (crates/store/tests,
#                          crates/cli/tests/it/k8s.rs: upload, collect, bytes compared)
#     kubernetes-validate  the official Kubernetes OpenAPI schemas 1.29-1.37, offline
#                          (crates/cli/tests/it/k8s.rs validates every generated manifest)
#     hdrhistogram         Python's hdrh, a second reader of latency.hlog
#                          (crates/cli/tests/it/hlog_readers.rs)
#     numpy, pandas        the seeds' own metric script, bench/import/seed_suite.py, run on a
#                          run's series.csv (crates/cli/tests/it/run.rs)
# Packages are installed with apt-get, as root or through sudo; .ci/run calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "test.sh: $*" >&2; }

# Every part the tests need is installed below, so a test that finds one missing fails here
# instead of skipping with a reason as on a bare `cargo test` (crates/cli/tests/it/parts.rs).
export VOLLEY_TEST_ALL=1

# The wall time of each phase (install, fmt, clippy, build, test), said as it ends, and all of
# them at the end, whether the script succeeds or not.
phases=()
phase_start=$SECONDS
phase() {
  local took=$((SECONDS - phase_start))
  say "phase $1 took $took s"
  phases+=("$1 $took s")
  phase_start=$SECONDS
}
summary() {
  local list="" p
  for p in "${phases[@]}"; do list+="${list:+, }$p"; done
  say "wall time by phase: ${list:-none}; total $SECONDS s"
}
trap summary EXIT

# --- Rust --------------------------------------------------------------------------------
need_rust=1.89
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH" # rustup's place, when the shell has not picked it up yet
fi
if ! command -v cargo >/dev/null 2>&1 || ! command -v rustc >/dev/null 2>&1; then
  say "cargo is not on PATH. volley needs Rust $need_rust or newer; install it with rustup:"
  say "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y && . \"\$HOME/.cargo/env\""
  say "(Debian's own rustc/cargo packages are older than $need_rust.)"
  exit 1
fi
rust_version=$(rustc --version | awk '{print $2}')
if ! printf '%s\n%s\n' "$need_rust" "${rust_version%%-*}" | sort -V -C; then
  say "rustc $rust_version is too old: volley needs Rust $need_rust or newer (\`rustup update stable\`)."
  exit 1
fi
cargo --version

# --- Debian packages ---------------------------------------------------------------------
have_chromium() { command -v chromium || command -v chromium-browser || command -v google-chrome; } >/dev/null 2>&1
have_initdb() { command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }

missing=()
have_chromium || missing+=(chromium)
have_initdb || missing+=(postgresql)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
type -P kill >/dev/null 2>&1 || missing+=(procps)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v xmllint >/dev/null 2>&1 || missing+=(libxml2-utils)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3 python3-venv)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v java >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    as_root=(none)
  fi
  if ! command -v apt-get >/dev/null 2>&1 || [ "${as_root[*]}" = none ]; then
    say "the tests need these packages, which are missing: ${missing[*]}"
    if command -v apt-get >/dev/null 2>&1; then
      say "install them as root: apt-get update && apt-get install ${missing[*]}"
    else
      say "this is not a Debian-like system: install Chromium (chromium, chromium-browser or google-chrome on PATH),"
      say "PostgreSQL (initdb), a C compiler (cc), kill, xmllint (libxml2) and Prometheus with your package manager"
    fi
    exit 1
  fi
  say "installing ${missing[*]} (apt-get${as_root[*]:+, via sudo})"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  hash -r
  have_chromium || { say "chromium is still not on PATH after installing it"; exit 1; }
  have_initdb || { say "initdb is still not found after installing postgresql"; exit 1; }
  command -v xmllint >/dev/null 2>&1 || { say "xmllint is still not on PATH after installing libxml2-utils"; exit 1; }
  command -v prometheus >/dev/null 2>&1 || { say "prometheus is still not on PATH after installing it"; exit 1; }
  command -v mvn >/dev/null 2>&1 || { say "mvn is still not on PATH after installing maven"; exit 1; }
fi

# --- The seeds' stack (Maven Central): Spring Boot 2.7 + HikariCP + Tomcat on H2 ------------
# bench/spring/app, for crates/cli/tests/it/spring.rs; rebuilt when its sources change.
spring="bench/spring/app"
if [ ! -f "$spring/target/rooms-app.jar" ] || \
   [ -n "$(find "$spring/pom.xml" "$spring/src" -newer "$spring/target/rooms-app.jar" -print -quit)" ]; then
  say "building $spring (mvn package: Spring Boot 2.7.18 from Maven Central)"
  mvn -q -B -f "$spring/pom.xml" package -DskipTests
fi

# --- HdrHistogram 2.2.2 (Maven Central): its HistogramLogProcessor reads latency.hlog --------
hdr_jar="target/tools/hdrhistogram/HdrHistogram-2.2.2.jar"
if [ ! -f "$hdr_jar" ]; then
  say "fetching org.hdrhistogram:HdrHistogram:2.2.2 into ${hdr_jar%/*} (mvn dependency:copy)"
  mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:2.8:copy \
    -Dartifact=org.hdrhistogram:HdrHistogram:2.2.2 -DoutputDirectory="${hdr_jar%/*}"
fi

# --- Python tools (PyPI), in a venv of their own; skipped when the pinned set is there ----
py_tools=("moto[s3]==5.2.5" "flask==3.1.3" "flask-cors==6.0.5" "kubernetes-validate==1.37.0"
          "hdrhistogram==0.10.8"
          "numpy==2.4.6" "pandas==3.1.1")
venv="$PWD/target/tools/venv"
if [ "$(cat "$venv/.volley-tools" 2>/dev/null)" != "${py_tools[*]}" ]; then
  say "installing ${py_tools[*]} into $venv (pip)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${py_tools[@]}"
  echo "${py_tools[*]}" > "$venv/.volley-tools"
fi
export PATH="$venv/bin:$PATH"

# --- Kubernetes' own expansion of args and env (Go module proxy), pinned by its go.mod ------
# target/tools/k8s-expand: the kubelet's $(VAR)/$$ expansion (k8s.io/kubernetes v1.37.2), which
# crates/cli/tests/it/k8s.rs runs over a manifest's container; rebuilt when its sources change.
expand="$PWD/target/tools/k8s-expand"
if command -v go >/dev/null 2>&1; then
  if [ ! -x "$expand" ] || [ -n "$(find scripts/k8s-expand -newer "$expand" -print -quit)" ]; then
    say "building $expand (go build: k8s.io/kubernetes v1.37.2 from the Go module proxy)"
    (cd scripts/k8s-expand && GOFLAGS="-modcacherw -buildvcs=false" GOMODCACHE="$PWD/../../target/tools/go/mod" \
       GOCACHE="$PWD/../../target/tools/go/build" go build -o "$expand" .)
  fi
else
  say "go is missing, so $expand is not built: install Go 1.21 or newer (https://go.dev/dl/);"
  say "crates/cli/tests/it/k8s.rs needs it: it fails without it here (VOLLEY_TEST_ALL=1), skips in a bare cargo test"
fi

# --- playwright-core (npm), pinned; it drives Debian's Chromium and downloads no browser ---
playwright="playwright-core@1.65.1"
pw_dir="$PWD/target/tools/playwright"
if [ "$(cat "$pw_dir/.volley-tools" 2>/dev/null)" != "$playwright" ]; then
  say "installing $playwright into $pw_dir (npm)"
  rm -rf "$pw_dir"
  mkdir -p "$pw_dir"
  npm install --prefix "$pw_dir" --no-audit --no-fund --silent "$playwright"
  echo "$playwright" > "$pw_dir/.volley-tools"
fi

# --- Formatting and lints, as the tests: rustfmt.toml's style, clippy with warnings denied ---
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null 2>&1; then
    say "installing rustfmt and clippy (rustup component add)"
    rustup component add rustfmt clippy
  else
    say "cargo fmt and cargo clippy are missing: install the rustfmt and clippy components of Rust $need_rust or newer"
    exit 1
  fi
fi
phase install
say "cargo fmt --all --check"
cargo fmt --all --check || { say "the tree differs from rustfmt: run \`cargo fmt --all\` and commit the result"; exit 1; }
phase fmt
# TLS is rustls with ring only (kube, object_store, reqwest included): aws-lc must never enter.
say "cargo tree --locked -e features -i aws-lc-sys --target all (must match nothing)"
if cargo tree --locked -e features -i aws-lc-sys --target all >/dev/null 2>&1; then
  say "aws-lc-sys is in the dependency tree: find the feature that brings it (cargo tree -e features -i aws-lc-sys) and turn it off"
  exit 1
fi
say "cargo clippy --workspace --all-targets --locked -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
phase clippy

# --- The tests ---------------------------------------------------------------------------
say "cargo test --workspace --locked --no-run $*"
cargo test --workspace --locked --no-run "$@"
phase build
say "cargo test --workspace --locked $* (VOLLEY_TEST_ALL=1: a missing part fails its test)"
status=0
cargo test --workspace --locked "$@" || status=$?
phase test
exit "$status"
