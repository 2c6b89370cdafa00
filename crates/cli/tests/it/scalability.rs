//! `volley scalability`: the law fitted from a CSV and from a sweep directory, a bound κ, a
//! measured zero, odd units, a peak no level was measured near, and `--charts` given a file.

use std::path::Path;

use crate::support::*;

/// `volley scalability CSV --format json`: its exit code and the JSON it printed.
fn fit_csv(dir: &Path, rows: &str) -> (Option<i32>, serde_json::Value) {
    let csv = dir.join("points.csv");
    std::fs::write(&csv, rows).unwrap();
    let o = volley(&["scalability", csv.to_str().unwrap(), "--format", "json"]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    (o.status.code(), v)
}

/// R's `usl` 3.0.3 on all eleven raytracer points: κ at its bound 0, σ 0.05777078, λ
/// 21.84884 (a fit that stopped where κ first touched 0 said σ 0.05882, λ 22.005).
#[test]
fn scalability_fits_a_bound_kappa_as_r_does() {
    let dir = out_dir();
    let (code, v) = fit_csv(
        dir.path(),
        "processors,throughput\n1,20\n4,78\n8,130\n12,170\n16,190\n20,200\n24,210\n28,230\n32,260\n48,280\n64,310\n",
    );
    assert_eq!(code, Some(0), "{v}");
    let u = &v["usl"];
    let near = |k: &str, want: f64| ((u[k].as_f64().unwrap() - want) / want).abs() < 5e-5;
    assert!(near("sigma", 0.05777078) && near("lambda", 21.84884), "{u}");
    assert_eq!(u["kappa"].as_f64(), Some(0.0), "{u}");
}

/// A collapse to zero throughput is a point: five points, and a law that fits them poorly
/// (exit 1), not a line through the four before it with R² 1.
#[test]
fn scalability_keeps_a_measured_zero() {
    let dir = out_dir();
    let (code, v) = fit_csv(dir.path(), "1,100\n2,200\n4,400\n8,800\n16,0\n");
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["points"].as_array().unwrap().len(), 5, "{v}");
    assert!(
        v["usl"].is_null() && v["error"].as_str().unwrap().contains("poorly"),
        "{v}"
    );
}

/// Exact data fit with R² 1 whatever the units (the points are scaled before the fit).
#[test]
fn scalability_fits_exact_data_at_any_scale() {
    let dir = out_dir();
    for scale in ["e300", "e-300"] {
        let rows: String = (1..=5).map(|n| format!("{n},{n}{scale}\n")).collect();
        let (code, v) = fit_csv(dir.path(), &rows);
        assert_eq!(code, Some(0), "{scale}: {v}");
        assert!(v["usl"]["r2"].as_f64().unwrap() > 0.999_999, "{scale}: {v}");
    }
}

/// Points at 1, 2.1, 7.1, 9 and 12 of a law peaking at 4.74: no level within ±25 % of the
/// peak, so the table says it is predicted, not measured, and where to measure.
#[test]
fn scalability_says_a_peak_between_far_levels_was_not_measured() {
    let dir = out_dir();
    let law = |n: f64| 40.0 * n / (1.0 + 0.1 * (n - 1.0) + 0.04 * n * (n - 1.0));
    let rows: String = [1.0, 2.1, 7.1, 9.0, 12.0]
        .iter()
        .map(|&n| format!("{n},{}\n", law(n)))
        .collect();
    let csv = dir.path().join("far.csv");
    std::fs::write(&csv, &rows).unwrap();
    let o = volley(&["scalability", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("The peak is predicted, not measured")
            && out.contains("between the levels measured at 2.1 and 7.1"),
        "{out}"
    );
    let (_, v) = fit_csv(dir.path(), &rows);
    assert_eq!(v["peak_measured"], false, "{v}");
    // With a level at 5.5 (16 % above the peak) it was measured.
    let (_, v) = fit_csv(dir.path(), &format!("{rows}5.5,{}\n", law(5.5)));
    assert_eq!(v["peak_measured"], true, "{v}");
    assert!(v["peak_note"].is_null(), "{v}");
}

/// `--charts` names a directory: a file there is refused before anything is read or fitted
/// (the input here does not even exist).
#[test]
fn scalability_charts_must_be_a_directory() {
    let dir = out_dir();
    let file = dir.path().join("charts.svg");
    std::fs::write(&file, "").unwrap();
    let missing = dir.path().join("missing.csv");
    let o = volley(&[
        "scalability",
        missing.to_str().unwrap(),
        "--charts",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("--charts") && t.contains("takes a directory") && !t.contains("missing.csv"),
        "{t}"
    );
}

/// A sweep of the VUs (1, 2, 4, 8 at 10 iterations/s each): `volley scalability` reads the
/// sweep directory, one point per value (mean VUs, TPS). A sweep.json value without its run,
/// and a sweep whose runs all held the same VUs, are refused with what to give instead.
#[test]
fn scalability_reads_a_sweep_directory() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let o = volley(&[
        "sweep",
        "--vary",
        "vus=1,2,4,8",
        "-o",
        out.path().to_str().unwrap(),
        "--",
        "--url",
        &url,
        "--vus",
        "{vus}",
        "--duration",
        "1s",
        "--pacing",
        "100ms",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = volley(&[
        "scalability",
        out.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let points: Vec<(f64, f64)> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect();
    assert_eq!(points.len(), 4, "{v}");
    for ((n, x), vus) in points.iter().zip([1.0, 2.0, 4.0, 8.0]) {
        assert!((n - vus).abs() < 0.01, "mean VUs {n} for vus={vus}: {v}");
        assert!(
            (x - 10.0 * vus).abs() <= 0.2 * 10.0 * vus,
            "{vus} VUs at 10/s each: {x} TPS: {v}"
        );
    }
    assert!(v["usl"]["r2"].as_f64().unwrap() > 0.9, "{v}");

    // sweep.json names a value whose run is not there.
    let other = out_dir();
    let summary = std::fs::read_to_string(out.path().join("sweep.json")).unwrap();
    std::fs::write(other.path().join("sweep.json"), &summary).unwrap();
    let o = volley(&["scalability", other.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("lists `vus=1`, but no run or group of that name"),
        "{}",
        text(&o)
    );
    // Two values that both ran 1 VU: one level, said as such.
    let one = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().ends_with("_vus-1"))
        .unwrap();
    copy_dir(&one, &other.path().join(one.file_name().unwrap()));
    std::fs::write(
        other.path().join("sweep.json"),
        r#"{"rows": [{"label": "vus=1"}, {"label": "vus=1"}]}"#,
    )
    .unwrap();
    let o = volley(&["scalability", other.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("every run of this sweep held 1.0 VUs"),
        "{}",
        text(&o)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}
