//! Charts and the HTML report, looked at the way a person would: the page opened in
//! headless Chromium (Debian's `chromium`; `.ci/run` installs it), the images decoded.

use std::path::Path;
use std::process::Command;

use crate::support::*;

/// Chromium's executable path.
pub(crate) fn chromium_path() -> String {
    let name = chromium();
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn chromium() -> String {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c.to_string();
        }
    }
    panic!(
        "headless Chromium is needed for this test: apt-get install chromium (.ci/run installs it)"
    );
}

/// Opens `page` in headless Chromium: (DOM after the scripts ran, Chromium's log).
pub(crate) fn open_page(page: &Path, screenshot: &Path) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,2600",
        "--virtual-time-budget=4000",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let url = format!("file://{}", page.display());
    let dom = Command::new(chromium())
        .args(common)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    let shot = Command::new(chromium())
        .args(common)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    (
        String::from_utf8_lossy(&dom.stdout).into_owned(),
        String::from_utf8_lossy(&dom.stderr).into_owned(),
    )
}

pub(crate) fn assert_no_console_errors(log: &str) {
    for line in log.lines().filter(|l| l.contains("CONSOLE")) {
        assert!(
            !line.contains("Uncaught") && !line.contains("Error"),
            "console error: {line}"
        );
    }
}

/// Non-zero `width="N"` on every canvas uPlot drew; returns how many.
pub(crate) fn drawn_canvases(dom: &str) -> usize {
    let mut n = 0;
    for part in dom.split("<canvas").skip(1) {
        let width: u32 = part
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        assert!(
            width > 0,
            "a canvas with no width: <canvas{}",
            &part[..part.len().min(120)]
        );
        n += 1;
    }
    n
}

/// The text of every `<text>` element of an SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            t.split_once('>').map(|(_, rest)| {
                rest.split("</text>")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
        })
        .collect()
}

fn png_size(path: &Path) -> (u32, u32) {
    let img = image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (img.width(), img.height())
}

#[test]
fn run_report_page_and_charts() {
    if !need("chromium") {
        return;
    }
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=2");
    let name = "<script>alert(1)</script>";
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--stages",
        "1s:4,2s:4",
        "--name",
        name,
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    // The images: decodable, of the expected size, with their series and axes named.
    for chart in ["tps", "ttfb", "errors", "percentiles"] {
        assert_eq!(
            png_size(&dir.join(format!("charts/{chart}.png"))),
            (960, 480),
            "{chart}"
        );
        let svg = std::fs::read_to_string(dir.join(format!("charts/{chart}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") || svg.contains("<svg"), "{chart}");
        assert!(
            !svg.contains("<script>"),
            "{chart}.svg must escape the run name"
        );
        assert!(
            svg.contains("&lt;script&gt;"),
            "{chart}.svg shows the name as text"
        );
    }
    let tps = svg_texts(&std::fs::read_to_string(dir.join("charts/tps.svg")).unwrap());
    for text in ["TPS", "VUs", "elapsed (s)"] {
        assert!(
            tps.iter().any(|t| t == text),
            "tps.svg lacks {text}: {tps:?}"
        );
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("![tps](charts/tps.png)"), "{md}");
    // The page.
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<script>alert(1)"),
        "the run name must be escaped in HTML"
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "the page must not load anything"
    );
    let shot = dir.join("report-screenshot.png");
    let (dom, log) = open_page(&page, &shot);
    assert_no_console_errors(&log);
    assert_eq!(drawn_canvases(&dom), 4, "four interactive charts");
    for legend in [
        "TPS",
        "VUs",
        "MTTFB (interval mean)",
        "TTFB p99 (per request)",
        "Total time",
    ] {
        assert!(
            dom.contains(&format!(">{legend}<")),
            "legend {legend} missing"
        );
    }
    assert!(
        dom.contains("Total Tests") && dom.contains("TTFB"),
        "tables are on the page"
    );
    let (w, h) = png_size(&shot);
    assert!(w >= 1200 && h >= 2000, "screenshot {w}x{h}");
}

#[test]
fn comparison_page_and_bar_charts() {
    if !need("chromium") {
        return;
    }
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    for ms in ["2", "6"] {
        let url = server.url(&format!("/delay?ms={ms}"));
        let o = volley(&[
            "run",
            "--url",
            &url,
            "--vus",
            "3",
            "--duration",
            "2s",
            "--interval",
            "250ms",
            "-o",
            out.path().to_str().unwrap(),
            "--progress",
            "none",
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let mut runs: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let cmp_dir = out_dir();
    let page = cmp_dir.path().join("cmp.html");
    let o = volley(&[
        "compare",
        runs[0].to_str().unwrap(),
        runs[1].to_str().unwrap(),
        "--labels",
        "Original,Phase 1",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let charts = cmp_dir.path().join("cmp_charts");
    for chart in ["tps", "mttfb", "percentiles"] {
        assert_eq!(
            png_size(&charts.join(format!("{chart}.png"))),
            (960, 480),
            "{chart}"
        );
    }
    let bars = svg_texts(&std::fs::read_to_string(charts.join("mttfb.svg")).unwrap());
    for text in ["Original", "Phase 1", "p99.9", "ms"] {
        assert!(
            bars.iter().any(|t| t == text),
            "mttfb.svg lacks {text}: {bars:?}"
        );
    }
    let (dom, log) = open_page(&page, &cmp_dir.path().join("shot.png"));
    assert_no_console_errors(&log);
    assert_eq!(drawn_canvases(&dom), 3, "TPS, MTTFB and percentile charts");
    assert!(
        dom.contains("| Original →") || dom.contains("Original → Phase 1"),
        "the step table is on the page"
    );
    // Changes are marked with drawn circles, not emoji: without an emoji font (Debian's
    // headless Chromium) 🟢 / 🔴 / ⚪ show as empty boxes.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains(['🟢', '🔴', '⚪']),
        "the page must not depend on an emoji font"
    );
    assert!(
        dom.contains("<svg class=\"mark\""),
        "the change marks are drawn"
    );
    assert!(
        ["better", "worse", "within the noise"]
            .iter()
            .any(|m| dom.contains(&format!("aria-label=\"{m}\""))),
        "each mark is labelled"
    );
}

#[test]
fn capacity_page_and_comparison_are_drawn_like_the_run_page() {
    if !need("chromium") {
        return;
    }
    let out = out_dir();
    // The search: 200 req/s failed on its errors (3.7 %) with p99 only 66 ms.
    let probes = [
        (50.0, 20.0, 0.0, true),
        (200.0, 66.0, 3.7, false),
        (100.0, 30.0, 0.0, true),
        (150.0, 40.0, 0.0, true),
        (175.0, 90.0, 1.5, false),
    ];
    let slo = ["ttfb p99 < 100ms", "error_rate < 1%"];
    let a = out.path().join("a");
    crate::capacity::hand_capacity(&a, "rate", &slo, &probes);
    let b = out.path().join("b");
    crate::capacity::hand_capacity(
        &b,
        "rate",
        &slo,
        &[
            (100.0, 20.0, 0.0, true),
            (300.0, 40.0, 0.0, true),
            (400.0, 300.0, 9.0, false),
        ],
    );
    let page = out.path().join("capacity.html");
    let o = volley(&[
        "report",
        a.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (dom, log) = open_page(&page, &out.path().join("capacity.png"));
    assert_no_console_errors(&log);
    assert_eq!(
        drawn_canvases(&dom),
        3,
        "latency, error rate and throughput"
    );
    for want in [
        "<p class=\"verdict pass\"><b>PASS</b>",
        "Error rate against offered load (%)",
        "bracket [150, 175)",
        "SLO: error_rate &lt; 1%",
        "failed the SLO (TTFB p99)",
    ] {
        assert!(dom.contains(want), "the page lacks {want}");
    }
    let cmp = out.path().join("cmp.html");
    let o = volley(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--labels",
        "before,after",
        "--html",
        cmp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (dom, log) = open_page(&cmp, &out.path().join("cmp.png"));
    assert_no_console_errors(&log);
    assert_eq!(drawn_canvases(&dom), 3, "the two searches on each chart");
    for want in [
        "before: bracket [150, 175)",
        "after: bracket [300, 400)",
        "after: errors",
    ] {
        assert!(dom.contains(want), "the comparison lacks {want}");
    }
    assert!(dom.contains("<svg class=\"mark\""), "the change is marked");
}
