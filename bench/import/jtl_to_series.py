# What a pandas user does with a JTL: load it, bucket by second, then run the seed script's formulas.
import sys, pandas as pd
df = pd.read_csv(sys.argv[1])
df["sec"] = df["timeStamp"] // 1000
ok = df[df["success"]]
g = df.groupby("sec")
s = pd.DataFrame({"Tests": ok.groupby("sec").size(), "Errors": df[~df["success"]].groupby("sec").size(),
                  "Mean_time_to_first_byte": ok.groupby("sec")["Latency"].mean()}).fillna(0)
s["TPS"] = s["Tests"]
s.to_csv(sys.argv[2], index=False)
print(len(df), "rows,", len(s), "intervals")
