#!/usr/bin/env bash
# Container images built on this machine with no registry and no Docker daemon: a root filesystem
# put together here, made an OCI image by umoci, written as a docker-archive by skopeo for
# `ctr -n k8s.io images import`. Prints the image's size on stderr.
#
#   image.sh pause  OUT.tar           volley.local/pause:3.10, Kubernetes' own pause.c, static
#   image.sh volley OUT.tar [BINARY]  volley.local/volley:dev, FROM scratch: the binary (stripped), the
#                                     libraries ldd names, CA certificates, user 65532
#   image.sh debian OUT.tar [BINARY]  volley.local/volley:debian-minbase, the same binary on a
#                                     debootstrap --variant=minbase bookworm root with what the
#                                     debian:bookworm-slim image also leaves out (docs, man pages,
#                                     locales), for comparing sizes
#   image.sh nginx  OUT.tar           volley.local/nginx:dev, FROM scratch: this machine's nginx (Debian's
#                                     nginx-light), the libraries ldd names, user 65532; its config
#                                     is mounted at /etc/nginx (a ConfigMap): a proxy pod for issue 54
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
kind=${1:?usage: image.sh pause|volley|debian|nginx OUT.tar [BINARY]}
out=${2:?usage: image.sh pause|volley|debian|nginx OUT.tar [BINARY]}
bin=${3:-$ROOT/target/release/volley}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
umoci init --layout "$T/oci" >/dev/null
umoci new --image "$T/oci:img" >/dev/null
umoci unpack --image "$T/oci:img" "$T/b" >/dev/null
R="$T/b/rootfs"
volley_files() { # the binary and what it needs at run time, into $R
  [ -x "$bin" ] || { echo "image.sh: $bin missing: cargo build --release -p volley-cli" >&2; exit 2; }
  install -D -m 755 "$bin" "$R/usr/local/bin/volley"
  strip "$R/usr/local/bin/volley"   # as the Dockerfile does: symbols are most of the file
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do install -D -m 755 "$lib" "$R$lib"; done
  install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$R/etc" "$R/tmp" "$R/runs"; chmod 1777 "$R/tmp"
  grep -q nonroot "$R/etc/passwd" 2>/dev/null || echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >> "$R/etc/passwd"
  grep -q nonroot "$R/etc/group" 2>/dev/null || echo 'nonroot:x:65532:' >> "$R/etc/group"
  chown 65532:65532 "$R/runs"
}
case "$kind" in
  pause)
    name=volley.local/pause:3.10
    src=$(ls "$ROOT"/target/k8s-node/gomod/k8s.io/kubernetes@v1.37.2/build/pause/linux/pause.c)
    gcc -Os -static -DVERSION=v3.10-volley -o "$R/pause" "$src"
    strip "$R/pause"
    config=(--config.entrypoint /pause --config.user 65535:65535)
    ;;
  volley)
    name=volley.local/volley:dev
    volley_files
    config=(--config.entrypoint /usr/local/bin/volley --config.cmd --help --config.user 65532:65532 --config.workingdir /runs)
    ;;
  debian)
    name=volley.local/volley:debian-minbase
    deb="$ROOT/target/k8s-node/debootstrap-bookworm"
    if [ ! -f "$deb/.done" ]; then
      rm -rf "$deb"; mkdir -p "$deb"
      debootstrap --variant=minbase bookworm "$deb" http://deb.debian.org/debian >&2
      touch "$deb/.done"
    fi
    tar -C "$deb" --exclude=./.done --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* -cf - . | tar -C "$R" -xf -
    rm -rf "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/info/* "$R"/usr/share/locale/* \
           "$R"/var/cache/apt/* "$R"/var/lib/apt/lists/* "$R"/var/log/*
    volley_files
    config=(--config.entrypoint /usr/local/bin/volley --config.cmd --help --config.user 65532:65532 --config.workingdir /runs)
    ;;
  nginx)
    name=volley.local/nginx:dev
    ngx=$(command -v nginx || echo /usr/sbin/nginx)
    [ -x "$ngx" ] || { echo "image.sh: no nginx here: apt-get install nginx-light" >&2; exit 2; }
    install -D -m 755 "$ngx" "$R/usr/sbin/nginx"
    for lib in $(ldd "$ngx" | grep -o '/[^ ]*'); do install -D -m 755 "$lib" "$R$lib"; done
    mkdir -p "$R/etc/nginx" "$R/tmp"; chmod 1777 "$R/tmp"
    echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$R/etc/passwd"
    echo 'nonroot:x:65532:' > "$R/etc/group"
    config=(--config.entrypoint /usr/sbin/nginx --config.cmd=-c --config.cmd=/etc/nginx/nginx.conf
            --config.user 65532:65532)
    ;;
  *) echo "image.sh: $kind: write pause, volley, debian or nginx" >&2; exit 2 ;;
esac
umoci repack --image "$T/oci:img" "$T/b" >/dev/null
umoci config --image "$T/oci:img" "${config[@]}" >/dev/null
rm -f "$out"
skopeo copy --quiet "oci:$T/oci:img" "docker-archive:$out:$name" >/dev/null
files=$(du -sb "$R" | cut -f1)
layers=$(python3 - "$T/oci" <<'PY'
import json, sys
d = sys.argv[1]
blob = lambda digest: json.load(open(f"{d}/blobs/{digest.replace(':', '/')}"))
m = json.load(open(f"{d}/index.json"))["manifests"][0]
print(sum(l["size"] for l in blob(m["digest"])["layers"]))
PY
)
echo "image.sh: $name: root filesystem $((files / 1024)) KiB, compressed layers (what a registry stores) $((layers / 1024)) KiB -> $out" >&2
