//! Raw command-line flags, as clap parses them.

use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand, ValueEnum};
use volley_engine::SourceAddrs;
use volley_export::OutputSpec;
use volley_scenario::{RequestSpec, Segment, StatusSet, Threshold, Warmup, duration};

/// Load testing and performance analysis for backend developers.
#[derive(Debug, Parser)]
#[command(name = "volley", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a load test against a URL, or a scenario file, and record every request.
    Run(Box<RunArgs>),
    /// Validate a scenario file, then run one iteration with one VU and show each request.
    Check(CheckArgs),
    /// Report the metric suite of a run directory or a result file.
    Report(ReportArgs),
    /// Compare runs or run groups phase by phase: before/after tables with noise taken into
    /// account (between runs when a side is a group from `volley run --repeat N`).
    Compare(CompareArgs),
    /// Load the embedded demo target, tune it, and compare the phases (start here).
    Demo(DemoArgs),
    /// Run the same test once per value of a setting and name the best.
    Sweep(SweepArgs),
    /// The highest load that meets the SLO: probes stepped up until one breaks it, then
    /// bisected; what limits it (from --server-metrics) and whether it meets --target.
    Capacity(Box<CapacityArgs>),
    /// Fits the Universal Scalability Law to throughput against concurrency: a capacity
    /// result, a run with stages, a run group or sweep, or a CSV of concurrency,throughput.
    Scalability(ScalabilityArgs),
    /// Merge the run directories of a split run's segments (`run --segment i/N`) into one.
    Merge(MergeArgs),
    /// The run history: one line per run (and run group) with its figures; --trend draws one.
    Runs(crate::runs_cmd::RunsArgs),
    /// Run a plan as an Indexed Job on Kubernetes: write the manifests, collect the results.
    K8s {
        #[command(subcommand)]
        command: K8sCommand,
    },
    /// Write a scenario file from a HAR recording, an OpenAPI document, a curl command or an
    /// access log (its mix and peak rate).
    #[command(subcommand_value_name = "har|openapi|curl|access-log")]
    Convert {
        #[command(subcommand)]
        command: ConvertCommand,
    },
    /// Write the example scenarios (chat, pair-room, mixed populations, gRPC with its .proto)
    /// into a directory, to run against `volley target serve`.
    Examples {
        /// The directory to write them to (created if missing; existing files are not
        /// overwritten).
        dir: PathBuf,
    },
    /// The demo target on its own.
    Target {
        #[command(subcommand)]
        command: TargetCommand,
    },
}

/// `volley sweep`.
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    /// The setting and its values, e.g. db-pool=5,10,20. `{NAME}` in the run flags and in
    /// --setup is replaced by each value.
    #[arg(long, value_name = "NAME=V1,V2,...")]
    pub(crate) vary: String,
    /// A shell command run before each value (reconfigure or restart the target), with
    /// `{NAME}` replaced by the value.
    #[arg(long)]
    pub(crate) setup: Option<String>,
    /// After each --setup, when the run flags watch a Deployment (--kube deployment/NAME):
    /// the longest wait for it to roll out before the run (1s to 1h); exit 2 past it.
    #[arg(long = "rollout-timeout", value_name = "DURATION", default_value = "5m",
        value_parser = Typed(crate::values::probe))]
    pub(crate) rollout_timeout: Duration,
    /// Sweep the embedded demo target: NAME is one of its knobs (those of `volley target
    /// serve`: db-pool, max-threads, db-rtt, cache, ...); `{target}` in the run flags is its
    /// base URL.
    #[arg(long)]
    pub(crate) demo: bool,
    /// Further fixed demo-target knobs, NAME=VALUE (repeatable), e.g. db-rtt=5ms.
    #[arg(long = "demo-knob")]
    pub(crate) demo_knobs: Vec<String>,
    /// What "best" means.
    #[arg(long, value_enum, default_value_t = Objective::Tps)]
    pub(crate) objective: Objective,
    /// Run each value N times as a run group (overrides --repeat in the run flags), so the
    /// best value is judged against run-to-run variation.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) repeat: Option<u64>,
    /// Where the runs and the comparison go.
    #[arg(long, short = 'o', default_value = "runs/sweep")]
    pub(crate) output: PathBuf,
    /// The `volley run` flags, after `--`.
    #[arg(last = true, required = true)]
    pub(crate) run: Vec<String>,
    /// Print the whole report on the terminal (by default: the answer and the leading tables,
    /// about one screen; the files hold everything).
    #[arg(long)]
    pub(crate) verbose: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CapacityArgs {
    /// The service level to meet, in the threshold syntax (repeatable): "ttfb p99 < 200ms",
    /// "error_rate < 1%" [default: the scenario file's `slo:`].
    #[arg(long = "slo", value_name = "THRESHOLD", value_parser = Typed(volley_scenario::parse_threshold))]
    pub(crate) slo: Vec<Threshold>,
    /// Open model: the arrival rates to search, START..MAX (e.g. 50..5000).
    #[arg(long, value_name = "START..MAX", conflicts_with = "users",
        value_parser = Typed(crate::values::rate_range))]
    pub(crate) rates: Option<(f64, f64)>,
    /// Closed model: the virtual users to search, START..MAX (also written --users START..MAX).
    #[arg(long, value_name = "START..MAX", value_parser = Typed(crate::values::users_range))]
    pub(crate) users: Option<(f64, f64)>,
    /// Measurement per probe, after its warm-up (--warmup, default 5s).
    #[arg(long, default_value = "30s", value_parser = Typed(crate::values::probe))]
    pub(crate) probe: Duration,
    /// Step-up factor until the first failure.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) factor: f64,
    /// Bisect until the last pass and the first failure are within this percentage (5%).
    #[arg(long, default_value = "5%", value_parser = Typed(crate::values::precision))]
    pub(crate) precision: f64,
    /// Probes near the SLO's limit (within their noise) are confirmed this many times, each
    /// run long enough to read the figure that was near (up to 4 × --probe); the
    /// confirmations decide, and if they disagree the load is uncertain, never a pass.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=5))]
    pub(crate) confirm: u64,
    /// The most loads probed (confirmations not counted).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub(crate) max_probes: u64,
    /// After a probe that broke the SLO, wait at most this long for the target to recover
    /// (checked by short runs at the starting load) before the next probe.
    #[arg(long, default_value = "60s", value_parser = Typed(crate::values::recovery))]
    pub(crate) recovery: Duration,
    /// The run flags: a URL or a scenario file, headers, --server-metrics, --arrivals ...
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ScalabilityArgs {
    /// A capacity directory, a run directory (its stages), a group or sweep directory, or a
    /// CSV of concurrency,throughput rows.
    pub(crate) input: PathBuf,
    /// table or json.
    #[arg(long, value_enum, default_value_t = ScalabilityFormat::Table)]
    pub(crate) format: ScalabilityFormat,
    /// Also draw measured against modelled throughput into this directory (SVG and PNG).
    #[arg(long, value_name = "DIR")]
    pub(crate) charts: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ScalabilityFormat {
    Table,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Objective {
    /// Highest TPS average.
    Tps,
    /// Lowest per-request TTFB p99 (per-interval MTTFB p99 where the source has no histograms).
    TtfbP99,
    /// Lowest error rate.
    ErrorRate,
}

/// `volley merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The segments' run directories, or directories holding them.
    #[arg(required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// The merged run directory to write (it must not hold a run yet).
    #[arg(long, short = 'o')]
    pub(crate) output: PathBuf,
    /// Refuse segments whose starts lie further apart than this.
    #[arg(long, default_value = "1s", value_parser = Typed(crate::values::start_tolerance))]
    pub(crate) start_tolerance: std::time::Duration,
}

/// `volley demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// A 20-second version (three short phases).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Where run directories and the comparison are written.
    #[arg(long, short = 'o', default_value = "runs/demo")]
    pub(crate) output: PathBuf,
    /// Also search the capacity of Phase 1 (DB pool of 2) and of Phase 3 (cache) under one SLO
    /// (ttfb p99 < 250ms, error_rate < 1%) and compare the two (a few minutes more).
    #[arg(long)]
    pub(crate) capacity: bool,
    /// Print the whole report on the terminal (by default: the answer and the leading tables,
    /// about one screen; the files hold everything).
    #[arg(long)]
    pub(crate) verbose: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TargetCommand {
    /// Serve the demo target until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
}

/// `volley target serve`: where, and the demo target's knobs.
#[derive(Debug, Args, Clone)]
pub(crate) struct ServeArgs {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: std::net::SocketAddr,
    /// On SIGTERM or Ctrl-C: stop accepting, then let in-flight requests finish for at most
    /// this long (up to 10m) before exiting; the default fits Kubernetes' 30 s grace period.
    #[arg(long, default_value = "20s", value_parser = Typed(crate::values::drain))]
    pub(crate) drain: Duration,
    /// Also serve the same routes over HTTP/3 on this UDP address (e.g. 127.0.0.1:8443; port
    /// 0 picks a free one), with a self-signed certificate (docs/http3.md).
    #[arg(long, value_name = "ADDR")]
    pub(crate) http3: Option<std::net::SocketAddr>,
    /// Where the HTTP/3 certificate is written, as PEM, for clients' --cacert [default:
    /// volley-demo-h3-PID.pem in the system's temporary directory].
    #[arg(long, value_name = "FILE", requires = "http3")]
    pub(crate) http3_cert: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) knobs: crate::knob_flags::KnobFlags,
}

/// `volley compare`.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// Run directories, run groups (`volley run --repeat N`) or result files, in order
    /// (Original, Phase 1, ...): two or more, or with --baseline one or more. A group is judged
    /// between its runs (pooled t on the logarithms); two single runs only within each run,
    /// which cannot see run-to-run variation.
    #[arg(required = true, num_args = 1..)]
    pub(crate) paths: Vec<PathBuf>,
    /// Comma-separated labels, one per run (the baseline first).
    #[arg(long)]
    pub(crate) labels: Option<String>,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    #[command(flatten)]
    pub(crate) gate: GateFlags,
}

/// What `report` and `compare` share: how to compute and where to write.
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub(crate) format: ReportFormat,
    /// Exclude this much from the start (60s), or the plan's first N stages (stage:N);
    /// default: each run's own warm-up.
    #[arg(long, value_parser = Typed(Warmup::parse))]
    pub(crate) warmup: Option<Warmup>,
    /// Which tail "TPS p99" means: low (reached in 99% of intervals) or high.
    #[arg(long, value_enum, default_value_t = Tail::Low)]
    pub(crate) tps_tail: Tail,
    /// Serve the HTML page in a browser instead (until Ctrl-C): on 127.0.0.1 and a free
    /// port, or --serve=ADDR (an address other than loopback gets a random access token).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(crate) serve: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
    /// Also write a self-contained HTML page with interactive charts to this file (a
    /// comparison also writes its bar charts as PNG and SVG beside it).
    #[arg(long)]
    pub(crate) html: Option<PathBuf>,
    /// Print the whole report on the terminal (by default: the answer and the leading tables,
    /// about one screen; the files hold everything).
    #[arg(long)]
    pub(crate) verbose: bool,
}

/// `volley check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The scenario file.
    pub(crate) scenario: PathBuf,
    /// Validate only: do not send the one iteration.
    #[arg(long)]
    pub(crate) no_request: bool,
    /// Run against this base URL instead of the file's `target`.
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// Trust any TLS certificate.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Also trust the CA certificates in this PEM file.
    #[arg(long)]
    pub(crate) cacert: Option<PathBuf>,
    /// Write the validation and each request as JUnit XML test cases to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
}

/// `volley run`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    /// A scenario file (YAML): a multi-step flow with its load; the flags below override
    /// its settings.
    #[arg(value_name = "SCENARIO")]
    pub(crate) scenario: Option<PathBuf>,
    /// The URL every virtual user requests (with a scenario: the base URL, instead of its
    /// `target`).
    #[arg(long, required_unless_present = "scenario")]
    pub(crate) url: Option<String>,
    /// HTTP method.
    #[arg(long, short = 'X', default_value = "GET")]
    pub(crate) method: String,
    /// A request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_parser = Typed(RequestSpec::parse_header))]
    pub(crate) headers: Vec<(String, String)>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub(crate) body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub(crate) body_file: Option<PathBuf>,
    /// The load: --vus, --duration, --ramp-up, --stages, --rate, --rate-stages,
    /// --iterations, --max-vus, --pacing, --think-time (one table, shared with scenario files).
    #[command(flatten)]
    pub(crate) load: crate::load_flags::LoadFlags,
    /// A request not complete after this fails as a timeout [default: 60s].
    #[arg(long, value_parser = Typed(duration::parse_timeout))]
    pub(crate) timeout: Option<Duration>,
    /// Sampling interval of the series.
    #[arg(long, default_value = "1s", value_parser = Typed(duration::parse_interval))]
    pub(crate) interval: Duration,
    /// Exclude this much from the start of every reported figure (60s), or the plan's first N
    /// stages (stage:N).
    #[arg(long, value_parser = Typed(Warmup::parse))]
    pub(crate) warmup: Option<Warmup>,
    /// Statuses that count as success, e.g. "200-299,404" (default: below 400).
    #[arg(long, value_parser = Typed(StatusSet::parse))]
    pub(crate) expect_status: Option<StatusSet>,
    /// Name of the run (used in the directory name and reports); default: the scenario's
    /// `name:` or file stem, else the URL path's last segment (`/api/rooms` → rooms), else
    /// the host.
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Where run directories are written.
    #[arg(long, short = 'o', default_value = "runs")]
    pub(crate) output: PathBuf,
    /// Trust any TLS certificate.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Also trust the CA certificates in this PEM file.
    #[arg(long)]
    pub(crate) cacert: Option<PathBuf>,
    /// Speak HTTP/2 (prior knowledge on http://; on https:// ALPN picks it when offered).
    #[arg(long)]
    pub(crate) http2: bool,
    /// Speak HTTP/3 (QUIC on UDP, https:// URLs only; docs/http3.md): a connection per VU,
    /// reused; 0-RTT off.
    #[arg(long, conflicts_with = "http2")]
    pub(crate) http3: bool,
    /// Do not stop when more than half of all requests fail for 10 s.
    #[arg(long)]
    pub(crate) no_error_stop: bool,
    /// A pass/fail criterion (repeatable), e.g. "error_rate < 1%", "ttfb p99 < 500ms",
    /// "tps avg >= 220"; a failed one makes the exit code 1 and shows in every report.
    #[arg(long = "threshold", value_parser = Typed(volley_scenario::parse_threshold))]
    pub(crate) thresholds: Vec<Threshold>,
    /// The load real traffic asks for, as a rate: 220.69/s, or 19080000/day with
    /// --peak-factor, or read from Prometheus: 'http://prometheus:9090 QUERY' (an instant
    /// query of one sample, per second, e.g. max_over_time(sum(rate(
    /// http_server_requests_seconds_count[1m]))[1d:1m])); the run's TPS (a capacity search's
    /// capacity) is judged against it, and falling short makes the exit code 1.
    #[arg(long, value_name = "RATE")]
    pub(crate) target: Option<String>,
    /// Multiplies --target: the peak hour over the day's average (e.g. 3).
    #[arg(long, value_name = "F", requires = "target")]
    pub(crate) peak_factor: Option<f64>,
    /// Write the thresholds (and whether the run ran its course) as JUnit XML test cases to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Scrape this Prometheus / OpenMetrics endpoint every interval into server.csv
    /// (repeatable; e.g. Spring Boot's /actuator/prometheus). Failures are counted, never fatal.
    #[arg(long = "server-metrics")]
    pub(crate) server_metrics: Vec<String>,
    /// Watch the target's Kubernetes workload during the run (repeatable): deployment/NAME,
    /// NS/deployment/NAME, or the pods of a label selector, pods/app=chat or
    /// NS/pods/app=chat,tier=web. Pods' readiness and restarts, warning Events, the Services'
    /// ready endpoints, the HPA and the rollout go to kube.jsonl and kube.csv
    /// (docs/kubernetes.md, with the Role it needs). Uses KUBECONFIG or the pod's service account.
    #[arg(long = "kube", value_name = "SPEC", value_parser = Typed(volley_kube::Spec::parse))]
    pub(crate) kube: Vec<volley_kube::Spec>,
    /// The kubeconfig context --kube uses (default: the current context).
    #[arg(long = "kube-context", value_name = "NAME")]
    pub(crate) kube_context: Option<String>,
    /// Send the run's metrics live to KIND=URL (repeatable): prometheus=URL (remote write,
    /// e.g. http://127.0.0.1:9090/api/v1/write), otlp=URL (OTLP/HTTP, e.g.
    /// http://127.0.0.1:4318). Never blocks the run; how sending went is in run.json.
    #[arg(long = "out", value_name = "KIND=URL", value_parser = Typed(OutputSpec::parse))]
    pub(crate) outs: Vec<OutputSpec>,
    /// Worker threads (event loops); default: one per core.
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Local addresses to connect from, in turn (e.g. 127.0.0.1-127.0.0.4, or a list
    /// 10.0.0.5,10.0.0.6): each has its own ~28,000 ephemeral ports, and Linux finds a free
    /// one cheaply only while fewer than half are taken: give one address per ~10,000
    /// connections to one server.
    #[arg(long, value_name = "ADDRS", value_parser = Typed(SourceAddrs::parse))]
    pub(crate) source_addrs: Option<SourceAddrs>,
    /// How long in-flight requests may finish once the run stops.
    #[arg(long, default_value = "5s", value_parser = Typed(duration::parse_duration))]
    pub(crate) grace: Duration,
    /// Progress output: auto (a live line on a terminal), plain (a line per interval), none.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub(crate) progress: ProgressMode,
    /// Print the whole report on the terminal (by default: the answer and the leading tables,
    /// about one screen; the files hold everything).
    #[arg(long)]
    pub(crate) verbose: bool,
    /// Serve a live dashboard while the run goes (its URL is printed): charts, tables, stop
    /// and VU / rate controls. On 127.0.0.1 and a free port unless --dashboard=ADDR is given
    /// (e.g. =0.0.0.0:8089; an address other than loopback gets a random access token in the URL).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(crate) dashboard: Option<String>,
    /// Run only segment i of N of the plan (0-based: 0/4 … 3/4): its exact share of the VUs,
    /// arrivals and shared CSV rows; `volley merge` puts the segments' run directories together.
    #[arg(long, env = "VOLLEY_SEGMENT", value_name = "i/N", value_parser = Typed(str::parse::<Segment>))]
    pub(crate) segment: Option<Segment>,
    /// The number of segments N, the index i coming from $JOB_COMPLETION_INDEX (Kubernetes
    /// Indexed Jobs) when --segment is not given.
    #[arg(long, env = "VOLLEY_SEGMENTS", value_name = "N")]
    pub(crate) segments: Option<u64>,
    /// Wait, then start at this instant (RFC 3339, like 2026-05-01T12:00:00Z, or Unix
    /// seconds), so that every segment starts together; intervals count from it.
    #[arg(long, env = "VOLLEY_START_AT", value_name = "TIME")]
    pub(crate) start_at: Option<String>,
    /// The id every segment of one run records (default: made from --start-at and the
    /// plan's hash).
    #[arg(long, env = "VOLLEY_RUN_ID")]
    pub(crate) run_id: Option<String>,
    /// When the run ends, upload its run directory under this S3 prefix (credentials and
    /// endpoint from the AWS_* environment: docs/kubernetes.md).
    #[arg(long, value_name = "s3://BUCKET/PREFIX", value_parser = parse_location)]
    pub(crate) upload: Option<volley_store::Location>,
}

pub(crate) fn parse_location(s: &str) -> Result<volley_store::Location, String> {
    s.parse().map_err(|e: volley_store::Error| e.to_string())
}

/// A flag's value typed when clap parses it, by `parse`: for a value a scenario file also
/// holds, the scenario crate's parser of that key, so the flag and the key read alike and
/// nothing later parses the text again. A mistake is one line, `--flag VALUE: what is wrong
/// and what to write` (the form of the load flags' mistakes), exit code 2; a message that
/// names the flag already (`--precision 0: give a percentage ...`) is shown as it is.
#[derive(Clone)]
pub(crate) struct Typed<F>(pub(crate) F);

impl<F, T, E> clap::builder::TypedValueParser for Typed<F>
where
    F: Fn(&str) -> Result<T, E> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    E: std::fmt::Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        (self.0)(&text).map_err(|e| {
            let flag = arg
                .and_then(|a| a.get_long())
                .map_or_else(String::new, |l| format!("--{l}"));
            let why = e.to_string();
            let said = if why.starts_with(&format!("{flag} ")) {
                why
            } else {
                format!("{flag} {text}: {why}")
            };
            clap::Error::raw(ErrorKind::ValueValidation, format!("{said}\n")).with_cmd(cmd)
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProgressMode {
    Auto,
    Plain,
    None,
}

/// `volley report`.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Run directories, run groups or result files (a group: each run, then the group's
    /// figures across its runs).
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Read the inputs as this format instead of detecting it: volley, ngrinder, k6-csv,
    /// k6-json, k6-summary, jtl, locust-history, locust-stats, gatling, gatling-binary.
    #[arg(long, value_parser = parse_format)]
    pub(crate) from: Option<volley_formats::Format>,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Table,
    Md,
    Json,
    Csv,
}

fn parse_format(s: &str) -> Result<volley_formats::Format, String> {
    volley_formats::Format::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = volley_formats::Format::ALL
            .iter()
            .map(|(_, n)| *n)
            .collect();
        format!("unknown format `{s}`; volley reads: {}", names.join(", "))
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Tail {
    Low,
    High,
}

impl From<Tail> for volley_stats::TpsTail {
    fn from(t: Tail) -> Self {
        match t {
            Tail::Low => volley_stats::TpsTail::Low,
            Tail::High => volley_stats::TpsTail::High,
        }
    }
}

/// `volley run`'s flags on their own, as a command line of their own (what `volley sweep`
/// and `volley k8s manifest` take after `--`).
#[derive(Debug, Parser)]
pub(crate) struct RunLine {
    #[command(flatten)]
    pub(crate) args: RunArgs,
}

impl RunLine {
    /// `flags` (everything after `volley run`) parsed as `volley run` parses them; a mistake
    /// is clap's message once, without its own `error: ` (volley's error line says it).
    pub(crate) fn parse(flags: impl IntoIterator<Item = String>) -> anyhow::Result<RunArgs> {
        Self::parse_given(flags).map(|(args, _)| args)
    }

    /// [`RunLine::parse`], and the ids of the flags given in `flags` themselves (not taken
    /// from the environment or a default): `["segment", "output"]`.
    pub(crate) fn parse_given(
        flags: impl IntoIterator<Item = String>,
    ) -> anyhow::Result<(RunArgs, Vec<String>)> {
        use clap::{CommandFactory, FromArgMatches};
        RunLine::command()
            .try_get_matches_from(std::iter::once("volley run".to_string()).chain(flags))
            .and_then(|m| {
                let given = m
                    .ids()
                    .filter(|id| {
                        m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
                    })
                    .map(|id| id.to_string())
                    .collect();
                Ok((RunLine::from_arg_matches(&m)?.args, given))
            })
            .map_err(|e| {
                let text = e.render().to_string();
                let text = text.trim_end();
                let text = text.strip_prefix("error: ").unwrap_or(text);
                anyhow::anyhow!(
                    "{}",
                    text.replace("try '--help'", "try 'volley run --help'")
                )
            })
    }
}

/// The gate flags of `volley compare`.
#[derive(Debug, Args)]
pub(crate) struct GateFlags {
    /// Compare each of the given runs against this run (directory or result file): one table
    /// per candidate, every one gated.
    #[arg(long, value_name = "RUN")]
    pub(crate) baseline: Option<PathBuf>,
    /// Exit 1 when a gated figure is worse beyond the noise (🔴); the output says which.
    /// Without --baseline the last table is gated (first run against the last).
    #[arg(long, value_enum, value_name = "WHEN")]
    pub(crate) fail_on: Option<FailOn>,
    /// Comma-separated figures the gate judges, by their JSON keys (`all` for every one)
    /// [default: error_rate_pct,tps_avg,mttfb_avg_ms,ttfb_p50_ms,ttfb_p95_ms,ttfb_p99_ms].
    #[arg(long, value_name = "KEYS")]
    pub(crate) gate_metrics: Option<String>,
    /// A figure worse beyond the noise fails only when it is also worse by more than this,
    /// e.g. 5%.
    #[arg(long, value_name = "PCT", value_parser = Typed(crate::values::tolerance))]
    pub(crate) tolerance: Option<f64>,
    /// Also gate each scenario step (or test id) found in both runs.
    #[arg(long)]
    pub(crate) gate_steps: bool,
    /// Write the gated figures as JUnit XML test cases to this file (one suite per table).
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FailOn {
    /// A gated figure worse beyond the noise (and the tolerance).
    Regression,
}

/// `volley k8s`.
#[derive(Debug, Subcommand)]
pub(crate) enum K8sCommand {
    /// Write a ConfigMap (the scenario and its data files) and an Indexed Job of N segments.
    Manifest(Box<ManifestArgs>),
    /// Download every segment's run directory of a run from object storage.
    Collect(CollectArgs),
}

/// `volley k8s manifest`.
#[derive(Debug, Args)]
pub(crate) struct ManifestArgs {
    /// The scenario file; it and the CSV files it reads go into the ConfigMap.
    #[arg(value_name = "SCENARIO")]
    pub(crate) scenario: Option<PathBuf>,
    /// Pods, each running segment i/N of the plan.
    #[arg(long, value_name = "N")]
    pub(crate) segments: u32,
    /// The volley image the pods run (see Dockerfile).
    #[arg(long)]
    pub(crate) image: String,
    /// Where the segments upload their run directories: <this>/<run id>/segment-<i>/.
    #[arg(long, value_name = "s3://BUCKET/PREFIX", value_parser = parse_location)]
    pub(crate) bucket: volley_store::Location,
    /// The run's id (names the Job and the results' folder); default: <plan name>-<UTC time>.
    #[arg(long)]
    pub(crate) run_id: Option<String>,
    /// The namespace; default: kubectl's current one.
    #[arg(long, short = 'n')]
    pub(crate) namespace: Option<String>,
    /// How far in the future every segment starts, so that slow-starting pods do not skew it.
    #[arg(long, default_value = "2m", value_parser = Typed(crate::values::start_in))]
    pub(crate) start_in: Duration,
    /// CPU per pod, requested and limited alike.
    #[arg(long, default_value = "1")]
    pub(crate) cpu: String,
    /// Memory per pod, requested and limited alike.
    #[arg(long, default_value = "1Gi")]
    pub(crate) memory: String,
    /// A Secret with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and optionally AWS_SESSION_TOKEN).
    #[arg(long, default_value = "volley-s3", conflicts_with = "service_account")]
    pub(crate) secret: String,
    /// Instead of a Secret: a service account the cluster maps to an IAM role (IRSA, Pod Identity).
    #[arg(long)]
    pub(crate) service_account: Option<String>,
    /// A Secret whose keys become environment variables (the scenario's env.NAME values).
    #[arg(long)]
    pub(crate) env_secret: Option<String>,
    /// The bucket's region (AWS_REGION in the pods).
    #[arg(long)]
    pub(crate) region: Option<String>,
    /// An S3-compatible endpoint (AWS_ENDPOINT_URL in the pods), e.g. http://minio.minio:9000.
    #[arg(long)]
    pub(crate) endpoint: Option<String>,
    /// Let the pods use a plain-http endpoint that is not loopback (AWS_ALLOW_HTTP=true).
    #[arg(long)]
    pub(crate) allow_http: bool,
    /// hard: pods wait rather than share a node beyond an even spread; soft: spread if possible.
    #[arg(long, value_enum, default_value_t = SpreadArg::Hard)]
    pub(crate) spread: SpreadArg,
    /// Delete the finished Job (and its pods) this long after it ends.
    #[arg(long, default_value = "24h", conflicts_with = "keep_finished",
        value_parser = Typed(duration::parse_duration))]
    pub(crate) ttl: Duration,
    /// Keep the finished Job until you delete it.
    #[arg(long)]
    pub(crate) keep_finished: bool,
    /// The pods' imagePullPolicy: Always, IfNotPresent or Never.
    #[arg(long)]
    pub(crate) image_pull_policy: Option<String>,
    /// Run the pods in the node's network namespace (hostNetwork: true), e.g. to reach a target
    /// on the node's loopback; such pods do not meet the baseline Pod Security Standard.
    #[arg(long)]
    pub(crate) host_network: bool,
    /// A directory for configmap.yaml and job.yaml, or - for one YAML stream on stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub(crate) output: String,
    /// `volley run` flags (the load, the URL, thresholds ...), after `--`; checked here as
    /// `volley run` checks them, and passed to every pod as they are. Kept as the user's words
    /// (not re-written from the parsed flags): the Job copies them verbatim into its pods' args.
    #[arg(last = true)]
    pub(crate) run: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SpreadArg {
    Hard,
    Soft,
}

/// `volley k8s collect`.
#[derive(Debug, Args)]
pub(crate) struct CollectArgs {
    /// The run's folder: the manifest's --bucket with the run id, s3://BUCKET/PREFIX/RUN_ID.
    #[arg(value_name = "s3://BUCKET/PREFIX/RUN_ID", value_parser = parse_location)]
    pub(crate) run: volley_store::Location,
    /// Where to put them: DIR/segments/segment-<i>/ (DIR/segments must not exist yet).
    #[arg(long, short = 'o')]
    pub(crate) output: PathBuf,
}

/// `volley convert`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConvertCommand {
    /// A browser recording (HAR): one step per request, ids carried from responses to requests.
    Har(ConvertHarArgs),
    /// An OpenAPI 3.0 or 3.1 document (JSON or YAML): one step per operation.
    Openapi(ConvertOpenApiArgs),
    /// A curl command line: one step.
    Curl(ConvertCurlArgs),
    /// nginx / Apache access logs (combined or common format): the peak rate per second and
    /// per minute, and a scenario of the endpoints weighted by their share.
    AccessLog(ConvertAccessLogArgs),
}

/// `volley convert har`.
#[derive(Debug, Args)]
pub(crate) struct ConvertHarArgs {
    /// The HAR file (browser developer tools: Network → Save all as HAR; Playwright's recordHar).
    pub(crate) file: PathBuf,
    /// The host to load, `host` or `host:port` [default: the one that served the most pages].
    #[arg(long)]
    pub(crate) host: Option<String>,
    /// Keep static assets (stylesheets, scripts, images, fonts, media).
    #[arg(long)]
    pub(crate) keep_static: bool,
    /// Pause after each step as long as the recording paused before the next request.
    #[arg(long)]
    pub(crate) think_times: bool,
    /// Keep this header although it is browser noise (user-agent, referer, accept-language,
    /// sec-*, ...); repeatable.
    #[arg(long = "keep-header", value_name = "NAME")]
    pub(crate) keep_headers: Vec<String>,
    /// Keep the browser's User-Agent header.
    #[arg(long)]
    pub(crate) keep_user_agent: bool,
    /// Write the scenario here instead of standard output.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
}

/// `volley convert openapi`.
#[derive(Debug, Args)]
pub(crate) struct ConvertOpenApiArgs {
    /// The OpenAPI document (JSON or YAML, 3.0 or 3.1).
    pub(crate) spec: PathBuf,
    /// Only operations with this tag (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// Only the operation with this operationId (repeatable).
    #[arg(long = "operation", value_name = "OPERATION_ID")]
    pub(crate) operations: Vec<String>,
    /// The base URL [default: the document's first absolute server, else http://127.0.0.1:8080].
    #[arg(long)]
    pub(crate) target: Option<String>,
    /// Write the scenario here instead of standard output.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
}

/// `volley convert curl`.
#[derive(Debug, Args)]
pub(crate) struct ConvertCurlArgs {
    /// The curl command line as one argument ('curl -X POST http://... -d ...'), or its
    /// words after `--`.
    #[arg(required = true, num_args = 1..)]
    pub(crate) command: Vec<String>,
    /// Write the scenario here instead of standard output.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
}

/// The command line's definition: [`Cli`]'s, with the load options `volley capacity` sets
/// itself, probe by probe, left out of its help (it refuses them, saying why). Which those are
/// comes from the option table's roles ([`volley_capacity::plan::search_owns`]).
///
/// `--vus` is `volley run`'s count of VUs, which capacity takes in the same words for the
/// range it searches (`--vus 5..200`, also `--users`), so there it names the range, and the
/// run's own VU count, which the search sets probe by probe, is left under another name.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommand("capacity", |c| {
        volley_scenario::load::OPTIONS
            .iter()
            .filter(|o| volley_capacity::plan::search_owns(o.key))
            .fold(c, |c, o| c.mut_arg(o.key, |a| a.hide(true)))
            .mut_arg("vus", |a| a.long("run-vus"))
            .mut_arg("users", |a| a.long("vus").visible_alias("users"))
    })
}

/// The command line `argv` (the program's name first) parsed by [`command`].
pub(crate) fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    command()
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m))
}

/// `volley convert access-log`.
#[derive(Debug, Args)]
pub(crate) struct ConvertAccessLogArgs {
    /// The access logs (`-` reads standard input: zcat access.log.2.gz | volley convert
    /// access-log -); several are read as one stretch of traffic.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    /// The base URL of the server the log is from [default: http://127.0.0.1:8080].
    #[arg(long)]
    pub(crate) target: Option<String>,
    /// Write at most this many endpoints (the busiest; 1 to 1000).
    #[arg(long, value_name = "N", default_value_t = volley_convert::access_log::DEFAULT_BRANCHES)]
    pub(crate) max_endpoints: usize,
    /// Write the scenario here instead of standard output.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cli, String> {
        parse_from(line.split(' ')).map_err(|e| e.render().to_string())
    }

    /// Flags are typed as clap parses them, by the scenario crate's parsers; a mistake is
    /// `--flag VALUE: why`, a usage error (exit code 2).
    #[test]
    fn flags_are_typed_when_parsed() {
        let Command::Run(r) = parse(
            "volley run --url http://x/ --timeout 2s --interval 250ms --warmup stage:1 --segment 1/2",
        )
        .unwrap()
        .command
        else {
            panic!("run");
        };
        assert_eq!(r.timeout, Some(Duration::from_secs(2)));
        assert_eq!(r.interval, Duration::from_millis(250));
        assert_eq!(r.grace, Duration::from_secs(5), "the default, parsed alike");
        assert_eq!(r.warmup, Some(Warmup::Stages(1)));
        assert_eq!(r.segment, Some(Segment::new(1, 2).unwrap()));
        for (line, says) in [
            (
                "volley run --url http://x/ --grace soon",
                "error: --grace soon: `soon` is not a duration",
            ),
            (
                "volley run --url http://x/ --warmup 5",
                "error: --warmup 5: `5` has no unit: write 5s, 5ms or 5m; or stage:N",
            ),
            (
                "volley run --url http://x/ --interval 10ms",
                "error: --interval 10ms: give between 100ms and 1h",
            ),
            // A message that names its flag already is not prefixed again.
            (
                "volley capacity --url http://x/ --rates 1..2 --precision 0",
                "error: --precision 0: give a percentage from 0.5% to 100%",
            ),
        ] {
            let e = parse(line).err().unwrap_or_else(|| panic!("{line}"));
            assert!(e.starts_with(says), "{line}: {e}");
        }
    }

    /// `volley capacity --vus START..MAX` is the range of VUs it searches (also `--users`),
    /// read by clap as such: no rewritten command line.
    #[test]
    fn capacity_takes_vus_as_its_range() {
        for flag in ["--vus", "--users"] {
            let Command::Capacity(c) =
                parse(&format!("volley capacity --url http://x/ {flag} 5..200"))
                    .unwrap()
                    .command
            else {
                panic!("capacity");
            };
            assert_eq!(c.users, Some((5.0, 200.0)), "{flag}");
            assert!(c.run.load.0.vus.is_none(), "{flag}");
        }
        let e = parse("volley capacity --url http://x/ --vus 5")
            .err()
            .unwrap();
        assert!(
            e.starts_with("error: --vus 5: write START..MAX, like 5..200"),
            "{e}"
        );
        // `volley run --vus` is still a count.
        let Command::Run(r) = parse("volley run --url http://x/ --vus 5").unwrap().command else {
            panic!("run");
        };
        assert_eq!(r.load.0.vus, Some(5));
    }
}
