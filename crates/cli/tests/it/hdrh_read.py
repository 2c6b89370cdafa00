"""Reads one tag of a latency.hlog with Python's hdrh (PyPI `hdrhistogram`) and prints, as JSON,
the count, the max and, for each percentile given, the value hdrh reads and the count (rank) it
reads it at: hdrh rounds p*N/100 to the nearest count where Java HdrHistogram takes its ceiling,
so the two agree only where both ranks are the same.

Usage: python3 hdrh_read.py LOG TAG P [P ...]   (values in the log's unit, µs for volley)
"""

import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def main():
    path, tag, ps = sys.argv[1], sys.argv[2], [float(p) for p in sys.argv[3:]]
    # volley's precision: 3 significant digits, 1 µs to one hour.
    total = HdrHistogram(1, 3_600_000_000, 3)
    reader = HistogramLogReader(path, total)
    intervals = 0
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        if h.get_tag() == tag:
            total.add(h)
            intervals += 1
    reader.close()
    print(
        json.dumps(
            {
                "intervals": intervals,
                "count": total.get_total_count(),
                "max": total.get_max_value(),
                "percentiles": [
                    {
                        "p": p,
                        "value": total.get_value_at_percentile(p),
                        "rank": total.get_target_count_at_percentile(p),
                    }
                    for p in ps
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
