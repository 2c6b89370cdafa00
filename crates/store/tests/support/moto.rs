//! A real S3-compatible server for tests: moto (PyPI `moto[s3]` with flask, installed by
//! scripts/test.sh into target/tools/venv) on a free loopback port, stopped when dropped.
//! Shared by crates/store/tests and crates/cli/tests (included with `#[path]`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    child: Child,
    pub port: u16,
}

impl Moto {
    pub fn start() -> Moto {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("moto_server is needed for this test ({e}): run scripts/test.sh, which installs moto into target/tools/venv and puts it on PATH"));
        let moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while moto.request("GET", "/").is_none() {
            assert!(
                Instant::now() < deadline,
                "moto_server did not answer on 127.0.0.1:{port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The AWS environment a client of this server needs (moto accepts any key).
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint().as_str()),
            ("AWS_ACCESS_KEY_ID", "volley-test"),
            ("AWS_SECRET_ACCESS_KEY", "volley-test-secret"),
            ("AWS_REGION", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    pub fn create_bucket(&self, bucket: &str) {
        let status = self
            .request("PUT", &format!("/{bucket}"))
            .expect("moto answers");
        assert!(
            status.starts_with("HTTP/1.1 200") || status.starts_with("HTTP/1.0 200"),
            "creating bucket {bucket}: {status}"
        );
    }

    /// Stores `body` under the raw key `path` (no client-side normalisation); the status line.
    pub fn put_raw(&self, path: &str, body: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "PUT {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", self.port, body.len()).unwrap();
        s.write_all(body).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.lines().next().unwrap_or_default().to_string()
    }

    fn request(&self, method: &str, path: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        write!(s, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", self.port).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        out.lines()
            .next()
            .map(str::to_string)
            .filter(|l| l.starts_with("HTTP/"))
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
