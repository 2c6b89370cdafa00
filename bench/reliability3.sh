#!/usr/bin/env bash
# Reliability III figures (issue 37): the overdriven open model, one Ctrl-C, a jump to 100,000 VUs
# from the dashboard, hanging --out receivers, a self-referring OpenAPI document and HAR scaling.
# Usage: V=target/release/volley bash bench/reliability3.sh   (loopback only; about a minute)
set -u
V=${V:?give V=path/to/volley}
W=$(mktemp -d); cd "$W"
$V target serve --listen 127.0.0.1:18996 >/dev/null 2>&1 & TS=$!
sleep 2
t() { /usr/bin/time -f "%e s, %M KB max RSS, exit %x" "$@"; }
echo "== --rate 1e9 (refused)"; t $V run --url http://127.0.0.1:18996/health --rate 1e9 --duration 2s --max-vus 2 2>&1 | tail -2
echo "== --rate 10000000 --duration 2s --max-vus 2"; t $V run --url http://127.0.0.1:18996/health --rate 10000000 --duration 2s --max-vus 2 --timeout 1s -o r1 --progress none 2>&1 | grep -E "Total Tests|dropped|s, .* KB" | tail -3
echo "== one SIGINT into --rate 5000000 --duration 60s --max-vus 2"
$V run --url http://127.0.0.1:18996/health --rate 5000000 --duration 60s --max-vus 2 -o r2 --progress none >/dev/null 2>&1 & P=$!
sleep 3; s=$(date +%s.%N); kill -INT $P; wait $P; echo "exit $? after $(echo "$(date +%s.%N) - $s" | bc) s; status $(python3 -c "import json,glob;print(json.load(open(glob.glob('r2/*/run.json')[0]))['status'])")"
echo "== dashboard VUs 2 -> 100000 on a 3 s run"
s=$(date +%s.%N)
$V run --url http://127.0.0.1:18996/rooms --vus 2 --duration 3s --dashboard=127.0.0.1:18995 -o r3 --progress none >/dev/null 2>&1 & P=$!
sleep 1.5; curl -s -X POST -H 'Content-Type: application/json' -d '{"vus": 100000}' 127.0.0.1:18995/target; echo
wait $P; echo "exit $? after $(echo "$(date +%s.%N) - $s" | bc) s"
echo "== three hanging --out receivers, 2 s run"
for p in 18991 18992 18993; do python3 -c "
import socket,time;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',$p));s.listen(50);c=[]
t=time.time()
while time.time()-t<60:
  s.settimeout(1)
  try: c.append(s.accept())
  except Exception: pass" & done
sleep 1
t $V run --url http://127.0.0.1:18996/health --vus 1 --duration 2s -o r4 --progress none --out prometheus=http://127.0.0.1:18991/w --out prometheus=http://127.0.0.1:18992/w --out prometheus=http://127.0.0.1:18993/w 2>&1 | tail -1
echo "== OpenAPI: 12 self-referring properties and allOf of 30 self-references"
python3 - <<'P'
import json
props={f"p{i}":{"$ref":"#/components/schemas/Node"} for i in range(12)}
doc={"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"http://127.0.0.1:8080"}],
 "paths":{"/nodes":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Node"}}}},"responses":{"200":{"description":"ok"}}}},
          "/all":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/All"}}}},"responses":{"200":{"description":"ok"}}}}},
 "components":{"schemas":{"Node":{"type":"object","properties":props},"All":{"allOf":[{"$ref":"#/components/schemas/All"}]*30}}}}
json.dump(doc,open("self.json","w"))
P
t $V convert openapi self.json -o self.yaml 2>&1 | tail -1
echo "== HAR conversion, entries that each send back an earlier id"
for n in 5000 10000 15000 20000; do python3 - $n <<'P'
import json,sys
n=int(sys.argv[1])
e=[{"startedDateTime":"2026-01-01T00:00:00.000Z","time":1,"request":{"method":"GET","url":f"http://h.test/rooms/r{i}x{max(i,1)-1}","httpVersion":"HTTP/1.1","headers":[],"queryString":[],"cookies":[]},"response":{"status":200,"headers":[],"content":{"mimeType":"application/json","text":json.dumps({"id":f"r{i}x{i}"})}}} for i in range(n)]
json.dump({"log":{"version":"1.2","entries":e}},open(f"h{n}.har","w"))
P
echo -n "$n entries: "; t $V convert har h$n.har -o h$n.yaml 2>&1 | tail -1; done
kill $TS 2>/dev/null; wait 2>/dev/null
