//! The one rule for tests that need a part outside Rust (a browser, a JDK, Prometheus,
//! PostgreSQL, a Python tool ...): [`need`] says whether the part is here. When it is not,
//! the test is skipped with a printed reason, unless `VOLLEY_TEST_ALL=1` (or `CI`) is set:
//! then the test fails, naming the part and how to install it. scripts/test.sh installs every
//! part and sets `VOLLEY_TEST_ALL=1`, so what CI runs skips nothing.
//!
//! A module of `crates/cli/tests/it`, included with `#[path]` by the other crates' tests that
//! need a part (crates/demo, crates/store, crates/export), so every test crate has this rule.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variable that turns every skipped test on (scripts/test.sh sets it).
const ALL: &str = "VOLLEY_TEST_ALL";

/// Whether the test can have `part`. `false` means: return now, the test is skipped (said on
/// stderr, past the test harness' capture, so `cargo test` shows it). Panics when the part is
/// missing and `VOLLEY_TEST_ALL=1` (or `CI`) asks for every part, and on a part this file does
/// not know.
///
/// Parts: `chromium`, `node`, `playwright`, `prometheus`, `postgresql`, `xmllint`, `java`,
/// `spring-app`, `hdrhistogram-java`, `hdrh`, `pandas`, `moto`, `kubernetes-validate`,
/// `k8s-expand`, `netns`.
pub fn need(part: &str) -> bool {
    let (missing, install) = check(part);
    let Some(missing) = missing else {
        return true;
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    if let Some(by) = required() {
        panic!(
            "{test} needs {part}, which is missing ({missing}); {by} asks for every part of the \
             suite: {install}"
        );
    }
    // Straight to the process' stderr: libtest captures eprintln! of a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test}: needs {part} ({install}): {missing}; set {ALL}=1 to require it"
    );
    false
}

/// `Some(what)` when a missing part fails the test: `VOLLEY_TEST_ALL` or `CI` set to anything
/// but empty, `0` or `false`.
fn required() -> Option<String> {
    [ALL, "CI"].into_iter().find_map(|var| {
        let v = std::env::var(var).ok()?;
        let v = v.trim();
        (!v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
            .then(|| format!("{var}={v}"))
    })
}

/// The workspace's root (every crate is `crates/<name>`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What is missing of `part` (`None` when it is all here), and how to install it.
fn check(part: &str) -> (Option<String>, &'static str) {
    let tools = root().join("target/tools");
    let venv_python = tools.join("venv/bin/python3");
    match part {
        "chromium" => (
            on_path_any(&["chromium", "chromium-browser", "google-chrome"]),
            "apt-get install chromium",
        ),
        "node" => (on_path("node"), "apt-get install nodejs"),
        "playwright" => {
            let dir = std::env::var_os("VOLLEY_PLAYWRIGHT")
                .map(PathBuf::from)
                .unwrap_or_else(|| tools.join("playwright"))
                .join("node_modules/playwright-core");
            (
                is_dir(&dir),
                "scripts/test.sh installs it: npm install --prefix target/tools/playwright \
                 playwright-core@1.65.1",
            )
        }
        "prometheus" => (on_path("prometheus"), "apt-get install prometheus"),
        "postgresql" => (
            on_path("initdb").and_then(|why| {
                let found = std::fs::read_dir("/usr/lib/postgresql")
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.path().join("bin/initdb").is_file());
                (!found).then(|| format!("{why}, nor in /usr/lib/postgresql/*/bin"))
            }),
            "apt-get install postgresql",
        ),
        "xmllint" => (on_path("xmllint"), "apt-get install libxml2-utils"),
        "java" => (on_path("java"), "apt-get install default-jdk-headless"),
        "spring-app" => (
            on_path("java")
                .or_else(|| is_file(&root().join("bench/spring/app/target/rooms-app.jar"))),
            "scripts/test.sh builds it: apt-get install default-jdk-headless maven, then \
             mvn -q -B -f bench/spring/app/pom.xml package -DskipTests",
        ),
        "hdrhistogram-java" => (
            on_path("java").or_else(|| is_file(&tools.join("hdrhistogram/HdrHistogram-2.2.2.jar"))),
            "scripts/test.sh fetches org.hdrhistogram:HdrHistogram:2.2.2 from Maven Central \
             into target/tools/hdrhistogram",
        ),
        "hdrh" => (
            python_imports(&venv_python, "hdrh"),
            "scripts/test.sh installs hdrhistogram (PyPI) into target/tools/venv",
        ),
        "pandas" => (
            python_imports(&venv_python, "numpy, pandas"),
            "scripts/test.sh installs numpy and pandas (PyPI) into target/tools/venv",
        ),
        "moto" => (
            on_path("moto_server"),
            "scripts/test.sh installs moto[s3] and flask (PyPI) into target/tools/venv and puts \
             it on PATH",
        ),
        "kubernetes-validate" => (
            on_path("kubernetes-validate"),
            "scripts/test.sh installs kubernetes-validate (PyPI) into target/tools/venv and puts \
             it on PATH",
        ),
        "k8s-expand" => (
            is_file(&tools.join("k8s-expand")),
            "scripts/test.sh builds it with Go 1.21+: go build ./scripts/k8s-expand",
        ),
        "netns" => (
            netns_refused(),
            "iproute2, run as root (or with CAP_SYS_ADMIN and CAP_NET_ADMIN)",
        ),
        _ => panic!("need({part:?}): no such part; parts.rs lists the parts it knows"),
    }
}

/// `None` when `program` is on PATH, else why not.
fn on_path(program: &str) -> Option<String> {
    on_path_any(&[program])
}

fn on_path_any(programs: &[&str]) -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| {
        programs.iter().any(|p| {
            std::fs::metadata(dir.join(p)).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
    });
    (!found).then(|| format!("no {} on PATH", programs.join(" or ")))
}

fn is_file(p: &Path) -> Option<String> {
    (!p.is_file()).then(|| format!("{} does not exist", p.display()))
}

fn is_dir(p: &Path) -> Option<String> {
    (!p.is_dir()).then(|| format!("{} does not exist", p.display()))
}

/// `None` when `python` imports `modules`, else why not.
fn python_imports(python: &Path, modules: &str) -> Option<String> {
    if let Some(why) = is_file(python) {
        return Some(why);
    }
    match Command::new(python)
        .args(["-c", &format!("import {modules}")])
        .stdout(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "{} cannot import {modules}: {}",
            python.display(),
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Some(format!("{}: {e}", python.display())),
    }
}

/// `None` when this process may make a network namespace, else what `ip` said.
fn netns_refused() -> Option<String> {
    let name = format!("volley-probe-{}", std::process::id());
    match Command::new("ip").args(["netns", "add", &name]).output() {
        Err(e) => Some(format!("cannot run `ip` ({e})")),
        Ok(o) if !o.status.success() => Some(format!(
            "`ip netns add` was refused: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => {
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
            None
        }
    }
}
