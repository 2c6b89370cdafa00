#!/usr/bin/env bash
# What `volley k8s manifest` writes, checked by a real Kubernetes API server (kube-apiserver
# v1.37 + etcd on loopback, scripts/kube-apiserver/): server-side dry-run of every manifest,
# then the ConfigMap and Job created and the Job read back, then two broken Jobs that the
# server must refuse (an Indexed Job without completions, restartPolicy: Always) — the
# checks the OpenAPI schemas in the test suite cannot make.
#
# Not part of scripts/test.sh: the first build of kube-apiserver took 29 min on this
# project's 2 shared cores (go build of k8s.io/kubernetes), more than CI's budget.
# Usage: cargo build -p volley-cli && scripts/k8s-apiserver-check.sh   (exit 0: all held)
set -euo pipefail
cd "$(dirname "$0")/.."
volley=${VOLLEY:-${CARGO_TARGET_DIR:-target}/debug/volley}
export KUBE_WORK=${KUBE_WORK:-/tmp/volley-kube-apiserver}
export KUBE_PORT=${KUBE_PORT:-16543} KUBE_ETCD_PORT=${KUBE_ETCD_PORT:-23890}
eval "$(scripts/kube-apiserver/start.sh)"
out=$(mktemp -d)
trap 'scripts/kube-apiserver/stop.sh; rm -rf "$out"' EXIT
say() { echo "k8s-apiserver-check: $*"; }
kubectl version 2>/dev/null | sed 's/^/  /' || true

id=check-$(date +%s)
"$volley" k8s manifest examples/chat.yaml --segments 4 --image volley:check --bucket s3://load-results/volley \
  --run-id "$id" --region eu-west-1 -o "$out/a" -- --vus 40 --duration 1m
"$volley" k8s manifest --segments 2 --image volley:check --bucket s3://load-results --run-id "$id-b" \
  --service-account volley-results --spread soft --endpoint http://minio.minio.svc:9000 --allow-http --keep-finished \
  -o "$out/b" -- --url http://api.internal:8080/rooms --rate 500 --duration 5m --max-vus 100

for d in a b; do
  kubectl apply --dry-run=server -f "$out/$d/configmap.yaml" -f "$out/$d/job.yaml"
done
say "server-side dry-run accepted both plans"

kubectl apply -f "$out/a/configmap.yaml" -f "$out/a/job.yaml"
got=$(kubectl get job "volley-$id" -o json)
check() { # jq-path expected
  v=$(jq -c "$1" <<<"$got")
  [ "$v" = "$2" ] || { say "FAIL: $1 is $v, expected $2"; exit 1; }
  say "read back $1 = $v"
}
check .spec.completionMode '"Indexed"'
check .spec.completions 4
check .spec.parallelism 4
check .spec.backoffLimitPerIndex 0
check .spec.podReplacementPolicy '"Failed"'
check .spec.template.spec.restartPolicy '"Never"'
check '.spec.template.spec.containers[0].resources.requests == .spec.template.spec.containers[0].resources.limits' true
check '.spec.template.spec.topologySpreadConstraints[0].topologyKey' '"kubernetes.io/hostname"'
check '.spec.template.spec.containers[0].args | index("--segment") as $i | .[$i+1]' '"$(JOB_COMPLETION_INDEX)/4"'
kubectl get configmap "volley-$id-plan" -o json | jq -e '.data["users.csv"] | length > 0' >/dev/null
say "created the ConfigMap and the Job and read them back"

refused() { # file what
  if kubectl apply --dry-run=server -f "$1" >"$out/err" 2>&1; then say "FAIL: the server accepted $2"; exit 1; fi
  say "refused, as it must be: $2: $(grep -o 'Invalid value.*\|Required value.*' "$out/err" | head -1)"
}
grep -v '^  completions:' "$out/b/job.yaml" >"$out/no-completions.yaml"
refused "$out/no-completions.yaml" "an Indexed Job without completions"
sed 's/restartPolicy: Never/restartPolicy: Always/' "$out/b/job.yaml" >"$out/always.yaml"
refused "$out/always.yaml" "a Job with restartPolicy: Always"
say "all checks held"
