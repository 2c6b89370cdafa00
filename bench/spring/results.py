"""The table of bench/spring/run.sh: for each case, what volley said (its findings, levels, sweep
verdict and per-level comparison, read from the files it wrote) beside the answer known by
construction. Usage: python3 bench/spring/results.py WORK > results.md"""
import glob
import json
import os
import sys

work = sys.argv[1]


def report(name):
    dirs = sorted(glob.glob(os.path.join(work, name, "*", "report.json")))
    if not dirs:
        return None
    with open(dirs[0]) as f:
        return json.load(f)


def said(r, *prefixes):
    if r is None:
        return "(no run)"
    out = [f for f in r.get("findings", []) if not prefixes or f.startswith(prefixes)]
    return "<br>".join(out) if out else "(no such finding)"


def levels(r):
    if r is None:
        return ""
    return ", ".join(f"{l['vusers']:.0f}: {l['tps_avg']:.0f}" for l in r.get("levels", []))


def scrapes(r):
    notes = [n for n in (r or {}).get("notes", []) if "scrapes of" in n]
    return notes[0].split(" failed")[0] + " failed" if notes else "0 failed"


rows = []
r = report("pool10")
rows.append(("pool 10", said(r, "DB pool", "TPS stopped"),
             "pending from 20 users, peak at 40, saturates at 10 users / ~480 TPS",
             levels(r)))
r = report("pool5")
rows.append(("pool 5", said(r, "DB pool"), "from 10 users: 5 users on 5 connections cannot queue", levels(r)))
r = report("paced-pool2")
rows.append(("paced (250 ms), pool 2", said(r, "DB pool"),
             "persistent from 30 users (120/s > 99/s); 58 pending needs 60 users", levels(r)))
r = report("maxconn10")
rows.append(("max-connections 10, accept-count 5", said(r, "Tomcat", "Server process CPU") + f"<br>scrapes: {scrapes(r)}",
             "connections at 10 of 10; requests never finished; CPU not the limit", levels(r)))
r = report("threads5")
rows.append(("threads.max 5 (pool 10)", said(r, "Tomcat", "DB pool", "TPS stopped"),
             "all 5 threads busy; ceiling 5 / 20 ms = 248/s", levels(r)))

try:
    with open(os.path.join(work, "sweep", "sweep.json")) as f:
        sw = json.load(f)
    per = "<br>".join(
        f"{l['level']}: best {l['best']} {l['margin_pct']:+.0f} % over {l['runner_up']} (noise ±{l['noise_pct']:.1f} %{', beyond' if l['beyond_noise'] else ', within'})"
        for l in sw.get("levels", []))
    verdict = (f"best at {sw.get('deciding_level')}: {sw['best']} {sw['margin_pct']:+.0f} % over "
               f"{sw['runner_up']} (noise ±{sw['noise_pct']:.1f} %, "
               f"{'beyond the noise' if sw['beyond_noise'] else 'not distinguishable'})")
    rows.append(("sweep pool 2/5/10/20", verdict + "<br>" + per,
                 "pool 20 gives twice pool 10's TPS at 20 and 40 users", ""))
except (OSError, ValueError, KeyError) as e:
    rows.append(("sweep pool 2/5/10/20", f"(no sweep: {e})", "", ""))

try:
    with open(os.path.join(work, "compare.json")) as f:
        cmp = json.load(f)
    step = cmp["steps"][0]
    keys = {"tps_avg": "TPS", "mttfb_avg_ms": "MTTFB", "ttfb_p50_ms": "TTFB p50"}
    mark = {"better": "🟢", "worse": "🔴", "noise": "⚪"}
    whole = ", ".join(f"{keys[r['key']]} {r['change_pct']:+.0f} % {mark[r['verdict']]}"
                      for r in step["rows"] if r["key"] in keys)
    per = "<br>".join(
        l["name"] + ": " + ", ".join(f"{keys[r['key']]} {r['change_pct']:+.0f} % {mark[r['verdict']]} (±{r['noise_pct']:.1f} %)"
                                     for r in l["rows"] if r["key"] in keys)
        for l in step.get("per_level", []))
    rows.append(("compare pool 10 → threads 5", f"whole run: {whole}<br>{per}",
                 "every row is a real change at the levels threads limit (10 users and up)", ""))
except (OSError, ValueError, KeyError, IndexError) as e:
    rows.append(("compare pool 10 → threads 5", f"(no comparison: {e})", "", ""))

print("| setting | what volley says | true by construction | TPS per level (VUs: TPS) |")
print("|---|---|---|---|")
for s, v, t, l in rows:
    print(f"| {s} | {v} | {t} | {l} |")
