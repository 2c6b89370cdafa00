# Big result files of each format the import bench reads, for N requests at 5,000/s
# (0.5 % errors, seeded: the same bytes every time).
#   gen.py FORMAT N OUT      FORMAT: jtl | k6csv | k6json | ngrinder
# jtl is gen_jtl.py's file; k6 files hold k6's nine samples per request (k6 v1 columns and
# NDJSON shape, as fixtures/peers/k6_out.*); ngrinder holds N one-second rows (nGrinder per-interval output.csv, 13 columns).
import sys, random, datetime
fmt, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = open(path, 'w', buffering=1 << 20)
rnd = random.Random(1)
rate = 5000
t0_ms = 1776337822386
buf = []
def flush(force=False):
    if force or len(buf) >= 20000:
        out.write(''.join(buf)); buf.clear()
if fmt == 'jtl':
    out.close()
    import subprocess
    subprocess.run([sys.executable, __file__.replace('gen.py', 'gen_jtl.py'), str(n), path], check=True)
    sys.exit(0)
METRICS = ['http_reqs', 'http_req_duration', 'http_req_blocked', 'http_req_connecting', 'http_req_tls_handshaking',
           'http_req_sending', 'http_req_waiting', 'http_req_receiving', 'http_req_failed']
def request(i):
    el = 5 + rnd.expovariate(1 / 20)
    ok = (i % 200) != 0
    end_ms = t0_ms + i * 1000 / rate + el
    vals = [1, el, 0.01, 0.0, 0.0, 0.02, el * 0.9, el * 0.1 - 0.02, 0 if ok else 1]
    return end_ms, ok, vals
if fmt == 'k6csv':
    out.write("metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata\n")
    for i in range(n):
        end_ms, ok, vals = request(i)
        ts = int(end_ms * 1000)  # k6 --out csv=...,timeFormat=unix_micro
        st = 200 if ok else 500
        for m, v in zip(METRICS, vals):
            buf.append(f"{m},{ts},{v:.6f},,,,{'true' if ok else 'false'},,GET,/rooms,HTTP/1.1,default,,{st},,,http://127.0.0.1:8080/rooms,,\n")
        flush()
elif fmt == 'k6json':
    for m in METRICS:
        out.write('{"type":"Metric","data":{"name":"%s","type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":"%s"}\n' % (m, m))
    for i in range(n):
        end_ms, ok, vals = request(i)
        t = datetime.datetime.fromtimestamp(end_ms / 1000, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f') + '034Z'
        st = 200 if ok else 500
        tags = '{"expected_response":"%s","group":"","method":"GET","name":"/rooms","proto":"HTTP/1.1","scenario":"default","status":"%d","url":"http://127.0.0.1:8080/rooms"}' % ('true' if ok else 'false', st)
        for m, v in zip(METRICS, vals):
            buf.append('{"metric":"%s","type":"Point","data":{"time":"%s","value":%s,"tags":%s}}\n' % (m, t, repr(round(v, 6)), tags))
        flush()
elif fmt == 'ngrinder':
    out.write("DateTime,vuser,Tests,Errors,Mean_Test_Time_(ms),Test_Time_Standard_Deviation_(ms),TPS,Mean_response_length,Response_bytes_per_second,Response_errors,Mean_time_to_resolve_host,Mean_time_to_establish_connection,Mean_time_to_first_byte\n")
    start = datetime.datetime(2026, 4, 13, 21, 14, 9)
    for s in range(n):
        t = (start + datetime.timedelta(seconds=s)).strftime('%Y-%m-%d %H:%M:%S')
        tests = 4950 + rnd.randrange(50)  # 1 to 50 errors of 5,000 a second
        buf.append(f"{t},50,{tests},{5000 - tests},{20 + rnd.random():.3f},{19 + rnd.random():.3f},{tests},1234,{tests * 1234},{5000 - tests},0,0.012,{18 + rnd.random():.3f}\n")
        flush()
else:
    sys.exit(f"unknown format {fmt}: jtl | k6csv | k6json | ngrinder")
flush(True)
out.close()
