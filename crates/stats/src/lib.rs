//! Pure numbers for volley: the per-interval series, the raw per-interval samples the
//! engine records, and the metric suite computed from them.
//!
//! Nothing here touches the disk or the network, so every figure a report shows can be
//! recomputed from a series that any tool wrote (see `docs/metrics.md` in the design notes).

pub mod compare;
pub mod knee;
pub mod latencies;
pub mod latency;
pub mod metric;
pub mod percentile;
pub mod rank;
pub mod sample;
pub mod search;
pub mod series;
pub mod suite;
pub mod usl;

pub use latencies::Latencies;
pub use latency::{CompactHistogram, LatencySummary, new_histogram};
pub use metric::{Direction, Figure, METRICS, Metric};
pub use sample::{Counts, ErrorKind, ErrorMessage, IntervalSample, KINDS, MESSAGES_PER_STEP};
pub use series::{Interval, Series};
pub use suite::{SeedSuite, SuiteOptions, TpsTail};
pub use usl::{Error, Kind};
