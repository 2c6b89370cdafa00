//! A real Prometheus for tests (feature `testing`): Debian's `prometheus` binary started on
//! a free loopback port with a throwaway storage directory, the remote-write receiver on,
//! and optionally scraping one target every second; stopped when dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Prometheus.
pub struct Prometheus {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Prometheus {
    /// Starts `prometheus` (`$VOLLEY_PROMETHEUS` or the one on PATH; scripts/test.sh installs
    /// it), scraping `scrape` (`host:port`, path `/metrics`) every second when given.
    pub fn start(scrape: Option<SocketAddr>) -> Prometheus {
        let bin = std::env::var("VOLLEY_PROMETHEUS").unwrap_or_else(|_| "prometheus".into());
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut config =
            String::from("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n");
        if let Some(target) = scrape {
            config.push_str(&format!("scrape_configs:\n  - job_name: volley\n    scrape_interval: 1s\n    static_configs:\n      - targets: ['{target}']\n"));
        }
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(&bin)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{bin}` ({e}): install Debian's prometheus package (scripts/test.sh does)"));
        let _ = rustls::crypto::ring::default_provider().install_default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = reqwest::Client::new();
        let p = Prometheus {
            child,
            addr,
            dir,
            runtime,
            client,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while p.get("/-/ready").is_none_or(|(s, _)| s != 200) {
            assert!(
                Instant::now() < deadline,
                "prometheus did not get ready in 30 s:\n{}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// The remote-write URL.
    pub fn write_url(&self) -> String {
        format!("http://{}/api/v1/write", self.addr)
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("prometheus.log")
    }

    fn get(&self, path_and_query: &str) -> Option<(u16, String)> {
        let url = format!("http://{}{path_and_query}", self.addr);
        self.runtime.block_on(async {
            let r = self.client.get(&url).send().await.ok()?;
            Some((r.status().as_u16(), r.text().await.ok()?))
        })
    }

    fn api(&self, path: &str, params: &[(&str, String)]) -> serde_json::Value {
        let url = reqwest::Url::parse_with_params(&format!("http://{}{path}", self.addr), params)
            .unwrap();
        let (status, body) = self
            .get(&url[url::Position::BeforePath..])
            .expect("prometheus answers");
        let v: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert!(
            status == 200 && v["status"] == "success",
            "{path} {params:?}: HTTP {status} {body}"
        );
        v["data"]["result"].clone()
    }

    /// An instant query now: its result vector.
    pub fn query(&self, promql: &str) -> serde_json::Value {
        self.api("/api/v1/query", &[("query", promql.to_string())])
    }

    /// The single value an instant query returns (`None` when it returns no series).
    pub fn scalar(&self, promql: &str) -> Option<f64> {
        let r = self.query(promql);
        let series = r.as_array().unwrap();
        assert!(series.len() <= 1, "{promql}: more than one series: {r}");
        series
            .first()
            .map(|s| s["value"][1].as_str().unwrap().parse().unwrap())
    }

    /// A range query from `start` to `end` (Unix s) at `step` s: each series' labels and values.
    pub fn query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Vec<(serde_json::Value, Vec<f64>)> {
        let r = self.api(
            "/api/v1/query_range",
            &[
                ("query", promql.into()),
                ("start", start.to_string()),
                ("end", end.to_string()),
                ("step", step.to_string()),
            ],
        );
        r.as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["metric"].clone(),
                    s["values"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v[1].as_str().unwrap().parse().unwrap())
                        .collect(),
                )
            })
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
