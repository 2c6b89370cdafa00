//! The demo target on PostgreSQL: a throwaway server started on 127.0.0.1 for the test
//! (Debian's postgresql package; `.ci/run` installs it), the same endpoints, and every
//! acknowledged message found in the database afterwards.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use volley_demo::{IdType, Knobs};

mod common;
use common::http;

#[path = "../../cli/tests/it/parts.rs"]
mod parts;
use parts::need;

/// A PostgreSQL server in a temporary directory, stopped when dropped.
struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

fn pg_bin() -> PathBuf {
    let from_path = Command::new("sh")
        .args(["-c", "command -v initdb"])
        .output()
        .ok()
        .filter(|o| o.status.success());
    if let Some(o) = from_path {
        return PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
            .parent()
            .unwrap()
            .to_path_buf();
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .expect("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")
}

/// Runs a PostgreSQL tool, as the `postgres` user when we are root (the server refuses root).
fn as_postgres(bin: &std::path::Path, tool: &str, args: &[&str]) -> std::process::Output {
    let exe = bin.join(tool);
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    cmd.args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", exe.display()))
}

impl Postgres {
    fn start() -> Postgres {
        let bin = pg_bin();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("volley-pg-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _ = Command::new("chown")
            .args(["postgres:postgres", dir.to_str().unwrap()])
            .status();
        let data = dir.join("data");
        let o = as_postgres(
            &bin,
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "--auth=trust",
                "-U",
                "postgres",
            ],
        );
        assert!(
            o.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            dir.display()
        );
        let log = dir.join("log");
        let o = as_postgres(
            &bin,
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                log.to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        assert!(
            o.status.success(),
            "pg_ctl start: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Postgres { dir, bin, port }
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        as_postgres(
            &self.bin,
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_service_on_postgresql() {
    if !need("postgresql") {
        return;
    }
    let pg = Postgres::start();
    for id_type in [IdType::Sequential, IdType::Random] {
        let knobs = Knobs {
            database: Some(pg.url()),
            db_rtt: Duration::ZERO,
            db_pool: 4,
            id_type,
            ..Knobs::default()
        };
        let t = volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs)
            .await
            .unwrap();
        assert!(t.db.is_postgres());
        let addr = t.addr;
        let (s, b) = http(addr, "GET", "/rooms", None).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&b)
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            20
        );
        // The pair-room flow.
        let (s, b) = http(
            addr,
            "POST",
            "/api/pair-room",
            Some(json!({"driver": "a", "navigator": "b"})),
        )
        .await;
        assert_eq!(s, 201, "{b}");
        let code = serde_json::from_str::<serde_json::Value>(&b).unwrap()["accessCode"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            http(
                addr,
                "POST",
                &format!("/api/pair-room/{code}/todos"),
                Some(json!({"content": "x"}))
            )
            .await
            .0,
            201
        );
        assert_eq!(
            http(
                addr,
                "POST",
                &format!("/api/pair-room/{code}/reference-link"),
                Some(json!({"url": "u"}))
            )
            .await
            .0,
            201
        );
        assert_eq!(
            http(
                addr,
                "PATCH",
                &format!("/api/pair-room/{code}/timer/start"),
                None
            )
            .await
            .0,
            204
        );
        assert_eq!(
            http(
                addr,
                "PATCH",
                &format!("/api/pair-room/{code}/timer/stop"),
                None
            )
            .await
            .0,
            204
        );
        let (_, b) = http(addr, "GET", &format!("/api/pair-room/{code}/timer"), None).await;
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&b).unwrap()["running"],
            false,
            "{b}"
        );
        assert_eq!(
            http(addr, "PATCH", &format!("/api/pair-room/{code}/swap"), None)
                .await
                .0,
            204
        );
        let (_, b) = http(addr, "GET", &format!("/api/pair-room/{code}"), None).await;
        assert!(b.contains("\"driver\":\"b\""), "{b}");
        // Concurrent chat messages: every acknowledged one is stored.
        let before = t.db.count_messages().await.unwrap();
        let tasks: Vec<_> = (0..6)
            .map(|u| {
                tokio::spawn(async move {
                    let mut ok = 0;
                    for i in 0..20 {
                        let body = json!({"roomId": 1 + i % 20, "userId": u + 1, "content": format!("m{u}-{i}")});
                        ok += i64::from(http(addr, "POST", "/api-chat/chat", Some(body)).await.0 == 201);
                    }
                    ok
                })
            })
            .collect();
        let mut acknowledged = 0;
        for task in tasks {
            acknowledged += task.await.unwrap();
        }
        let (_, page) = http(addr, "GET", "/rooms/1/messages?size=5", None).await;
        assert!(page.contains("\"messages\""), "{page}");
        let db = t.db.clone();
        t.stop().await.unwrap();
        assert_eq!(acknowledged, 120);
        assert_eq!(
            db.count_messages().await.unwrap() - before,
            acknowledged,
            "{id_type:?}"
        );
    }
}
