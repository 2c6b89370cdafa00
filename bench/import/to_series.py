# What a pandas user does with each file: load it, bucket requests by second (successes,
# errors, mean time to first byte), write the series.   to_series.py FORMAT FILE OUT
import sys, pandas as pd
fmt, path, out = sys.argv[1:4]
if fmt == 'jtl':
    df = pd.read_csv(path)
    df["sec"] = df["timeStamp"] // 1000
    ok, ttfb = df["success"], df["Latency"]
elif fmt == 'k6csv':
    df = pd.read_csv(path, usecols=["metric_name", "timestamp", "metric_value", "expected_response"])
    reqs = df[df["metric_name"] == "http_reqs"].reset_index(drop=True)
    wait = df[df["metric_name"] == "http_req_waiting"].reset_index(drop=True)
    df = pd.DataFrame({"sec": reqs["timestamp"] // 1_000_000, "ok": reqs["expected_response"], "ttfb": wait["metric_value"]})
    ok, ttfb = df["ok"], df["ttfb"]
elif fmt == 'k6json':
    df = pd.read_json(path, lines=True)
    df = df[df["type"] == "Point"]
    data = pd.json_normalize(df["data"].tolist())
    data["metric"] = df["metric"].values
    reqs = data[data["metric"] == "http_reqs"].reset_index(drop=True)
    wait = data[data["metric"] == "http_req_waiting"].reset_index(drop=True)
    df = pd.DataFrame({"sec": pd.to_datetime(reqs["time"]).astype("int64") // 10**9, "ok": reqs["tags.expected_response"] == "true", "ttfb": wait["value"]})
    ok, ttfb = df["ok"], df["ttfb"]
elif fmt == 'ngrinder':
    df = pd.read_csv(path)  # already one row per interval: nothing to bucket
    df.to_csv(out, index=False)
    print(len(df), "rows")
    sys.exit(0)
else:
    sys.exit(f"unknown format {fmt}")
g_ok = df[ok].groupby("sec")
s = pd.DataFrame({"Tests": g_ok.size(), "Errors": df[~ok].groupby("sec").size(), "Mean_time_to_first_byte": ttfb[ok].groupby(df["sec"][ok]).mean()}).fillna(0)
s["TPS"] = s["Tests"]
s.to_csv(out, index=False)
print(len(df), "requests,", len(s), "intervals")
