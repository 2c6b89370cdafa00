//! Executes a plan: virtual users on one event loop per thread, each with its own
//! keep-alive connection, timing every request's phases, and a recorder that hands the
//! caller one merged [`volley_stats::IntervalSample`] per sampling interval.
//!
//! The hot path is kept as small as wrk's: a VU loop, a connection, and per-thread
//! accumulators that no other thread touches until the interval is over.

mod alarm;
mod arrivals;
mod check;
mod client;
mod connection;
mod context;
mod dial;
mod error;
mod failure;
mod flow;
mod grpc;
mod h1;
mod http2;
mod http3;
mod pool;
mod preflight;
mod recorder;
mod run;
pub mod scrape;
mod sse;
mod steps;
mod target;
mod tls;
mod vars;
mod vu;
mod worker;
mod ws;

pub use check::check_once;
pub use error::{Error, Kind, Result};
pub use flow::Trace;
pub use preflight::preflight;
pub use run::{
    EngineConfig, Event, LiveModel, MAX_LIVE_VUS, PlanChange, Retarget, Run, RunControl, RunEnd,
    StopReason, start,
};
pub use target::{SourceAddrs, Target};
pub use tls::TlsOptions;

/// The Prometheus text format the scraper reads, a crate of its own ([`volley_prom`]).
pub use volley_prom as prom;
