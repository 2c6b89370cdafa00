import sys, random
n = int(sys.argv[1]); out = open(sys.argv[2], 'w', buffering=1 << 20)
out.write("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n")
t0 = 1776337822386; rate = 5000  # requests/s -> 2000 s for 10M
rnd = random.Random(1)
lines = []
for i in range(n):
    ts = t0 + i * 1000 // rate
    el = 5 + int(rnd.expovariate(1/20))
    ok = (i % 200) != 0
    lines.append(f"{ts},{el},GET /rooms,{200 if ok else 500},{'OK' if ok else 'Internal Server Error'},Thread Group 1-{i%50+1},text,{'true' if ok else 'false'},,1234,120,50,50,http://127.0.0.1:8080/rooms,{el-2 if el>2 else el},0,0\n")
    if len(lines) >= 100000:
        out.write(''.join(lines)); lines.clear()
out.write(''.join(lines))
