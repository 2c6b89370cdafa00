//! The Universal Scalability Law (N. Gunther): throughput at concurrency `N` is
//! `X(N) = λN / (1 + σ(N − 1) + κN(N − 1))` — λ the throughput of one, σ the share lost to
//! contention (queueing for a shared resource), κ the cost of coherency (every worker
//! agreeing with every other), which makes throughput fall past a peak at
//! `N* = √((1 − σ) / κ)`.
//!
//! The fit is a least-squares fit of `X` itself (Levenberg–Marquardt), as R's `nls` does in
//! B. Schwartz's *Practical Scalability Analysis with the Universal Scalability Law*, seeded
//! from the linear fit of `N / X = (1 + σ(N − 1) + κN(N − 1)) / λ`. The `usl` crate on
//! crates.io fits the same model, but its repository (codahale/usl-rs) was archived in
//! January 2023 (last release 0.3.0, December 2021); a three-parameter fit is short, so it is
//! written here and checked against the published example to 0.1 %.

use serde::{Deserialize, Serialize};

/// Points a fit needs: three parameters and at least one degree of freedom.
pub const MIN_POINTS: usize = 4;

/// A fit below this R² predicts nothing.
pub const MIN_R2: f64 = 0.90;

/// The fitted law.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Usl {
    /// Contention: the serial share (0 ≤ σ < 1).
    pub sigma: f64,
    /// Coherency: the cost of crosstalk between workers (κ ≥ 0).
    pub kappa: f64,
    /// Throughput at concurrency 1, as the model has it.
    pub lambda: f64,
    /// Where throughput peaks, `√((1 − σ) / κ)`; `None` without coherency (κ = 0: it only
    /// levels off, at λ / σ).
    pub peak_concurrency: Option<f64>,
    /// Throughput at the peak.
    pub peak_throughput: Option<f64>,
    /// Share of the throughput's variance the law explains.
    pub r2: f64,
    /// Points fitted.
    pub points: usize,
}

impl Usl {
    /// Modelled throughput at concurrency `n`.
    pub fn throughput(&self, n: f64) -> f64 {
        model(self.lambda, self.sigma, self.kappa, n)
    }
}

/// Why no law is given.
#[derive(Debug, Clone, PartialEq)]
pub enum FitError {
    /// Fewer than [`MIN_POINTS`] distinct concurrencies with throughput above zero.
    TooFewPoints(usize),
    /// The law explains too little of the data to predict from (R² below [`MIN_R2`]).
    PoorFit(Usl),
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::TooFewPoints(n) => write!(
                f,
                "{n} usable point{} (concurrency > 0, throughput > 0, distinct concurrencies); the law has 3 parameters and needs at least {MIN_POINTS}: measure more levels (a step-up with more stages, or a capacity search with --vus)",
                if *n == 1 { "" } else { "s" }
            ),
            FitError::PoorFit(u) => write!(
                f,
                "the law fits these points poorly (R² {:.3} < {MIN_R2}), so it predicts nothing: the throughput is too noisy, or something other than concurrency changed between the points",
                u.r2
            ),
        }
    }
}

fn model(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the law to `(concurrency, throughput)` points.
pub fn fit(points: &[(f64, f64)]) -> Result<Usl, FitError> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(n, x)| n.is_finite() && x.is_finite() && *n > 0.0 && *x > 0.0)
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut distinct = pts.iter().map(|p| p.0).collect::<Vec<_>>();
    distinct.dedup();
    if distinct.len() < MIN_POINTS {
        return Err(FitError::TooFewPoints(distinct.len()));
    }
    let (mut lambda, mut sigma, mut kappa) = linear_seed(&pts);
    let sse = |l: f64, s: f64, k: f64| -> f64 {
        pts.iter()
            .map(|(n, x)| (x - model(l, s, k, *n)).powi(2))
            .sum()
    };
    let mut err = sse(lambda, sigma, kappa);
    let mut mu = 1e-3;
    for _ in 0..500 {
        // Normal equations JᵀJ δ = Jᵀr of the residuals r = X − f, with J = ∂f/∂(λ, σ, κ).
        let mut jtj = [[0.0; 3]; 3];
        let mut jtr = [0.0; 3];
        for (n, x) in &pts {
            let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
            let f = lambda * n / d;
            let j = [
                n / d,
                -lambda * n * (n - 1.0) / (d * d),
                -lambda * n * n * (n - 1.0) / (d * d),
            ];
            let r = x - f;
            for a in 0..3 {
                jtr[a] += j[a] * r;
                for b in 0..3 {
                    jtj[a][b] += j[a] * j[b];
                }
            }
        }
        let mut improved = false;
        for _ in 0..30 {
            let mut m = jtj;
            for (a, row) in m.iter_mut().enumerate() {
                row[a] += mu * jtj[a][a].max(1e-300);
            }
            let Some(delta) = solve3(m, jtr) else {
                mu *= 10.0;
                continue;
            };
            let (l, s, k) = (
                lambda + delta[0],
                (sigma + delta[1]).clamp(0.0, 0.999_999),
                (kappa + delta[2]).max(0.0),
            );
            let e = sse(l, s, k);
            if e.is_finite() && e < err {
                let gain = (err - e) / err.max(1e-300);
                (lambda, sigma, kappa, err) = (l, s, k, e);
                mu = (mu / 10.0).max(1e-12);
                improved = gain > 1e-15;
                break;
            }
            mu *= 10.0;
        }
        if !improved {
            break;
        }
    }
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let sst: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let r2 = if sst > 0.0 { 1.0 - err / sst } else { 0.0 };
    // A peak far beyond the data is the model's extrapolation, not something the points
    // show (perfectly linear data leave κ at its floor and put the "peak" at a billion).
    let reach = 10.0 * pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let peak_concurrency = (kappa > 0.0)
        .then(|| ((1.0 - sigma) / kappa).sqrt())
        .filter(|p| p.is_finite() && *p <= reach);
    let usl = Usl {
        sigma,
        kappa,
        lambda,
        peak_concurrency,
        peak_throughput: peak_concurrency.map(|n| model(lambda, sigma, kappa, n)),
        r2,
        points: pts.len(),
    };
    // NaN (numbers the model cannot hold) is no fit either.
    let finite = [sigma, kappa, lambda, r2].iter().all(|v| v.is_finite());
    if !(finite && r2 >= MIN_R2) {
        return Err(FitError::PoorFit(usl));
    }
    Ok(usl)
}

/// λ, σ, κ from the linear least squares of `N/X = a + b(N − 1) + cN(N − 1)` (a = 1/λ,
/// b = σ/λ, c = κ/λ), clamped into the law's range: the fit's starting point.
fn linear_seed(pts: &[(f64, f64)]) -> (f64, f64, f64) {
    let mut ata = [[0.0; 3]; 3];
    let mut aty = [0.0; 3];
    for (n, x) in pts {
        let row = [1.0, n - 1.0, n * (n - 1.0)];
        let y = n / x;
        for a in 0..3 {
            aty[a] += row[a] * y;
            for b in 0..3 {
                ata[a][b] += row[a] * row[b];
            }
        }
    }
    let first = pts[0];
    let fallback = (first.1 / first.0, 0.01, 0.0001);
    match solve3(ata, aty) {
        Some([a, b, c]) if a > 0.0 => {
            let lambda = 1.0 / a;
            (
                lambda,
                (b * lambda).clamp(0.0, 0.99),
                (c * lambda).max(1e-9),
            )
        }
        _ => fallback,
    }
}

/// Solves the 3 × 3 system `m · x = v` (Gaussian elimination with partial pivoting).
fn solve3(mut m: [[f64; 3]; 3], mut v: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, pivot);
        v.swap(col, pivot);
        for row in col + 1..3 {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (cell, p) in m[row].iter_mut().zip(pivot_row).skip(col) {
                *cell -= f * p;
            }
            v[row] -= f * v[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let s: f64 = (row + 1..3).map(|k| m[row][k] * x[k]).sum();
        x[row] = (v[row] - s) / m[row][row];
    }
    x.iter().all(|x| x.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// B. Schwartz, *Practical Scalability Analysis with the Universal Scalability Law*
    /// (VividCortex, 2015), the worked example: σ 0.02773, κ 0.0001043, λ 89.99, a peak of
    /// about 1,884 at N ≈ 96.
    const SCHWARTZ: [(f64, f64); 7] = [
        (1.0, 65.0),
        (18.0, 996.0),
        (36.0, 1652.0),
        (72.0, 1853.0),
        (108.0, 1829.0),
        (144.0, 1775.0),
        (216.0, 1702.0),
    ];

    fn within(got: f64, want: f64, rel: f64) -> bool {
        ((got - want) / want).abs() <= rel
    }

    #[test]
    fn matches_the_published_example() {
        let u = fit(&SCHWARTZ).unwrap();
        assert!(within(u.sigma, 0.02773, 0.001), "σ {}", u.sigma);
        assert!(within(u.kappa, 0.0001043, 0.001), "κ {}", u.kappa);
        assert!(within(u.lambda, 89.99, 0.001), "λ {}", u.lambda);
        let n = u.peak_concurrency.unwrap();
        assert!((n - 96.0).abs() < 1.0, "N* {n}");
        assert!(within(u.peak_throughput.unwrap(), 1884.0, 0.001), "{u:?}");
        assert!(u.r2 > 0.98, "{}", u.r2);
    }

    #[test]
    fn recovers_a_law_from_its_own_points() {
        let (l, s, k) = (120.0, 0.05, 0.0002);
        let pts: Vec<(f64, f64)> = [1.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
            .iter()
            .map(|&n| (n, model(l, s, k, n)))
            .collect();
        let u = fit(&pts).unwrap();
        assert!(
            within(u.lambda, l, 1e-6) && within(u.sigma, s, 1e-6) && within(u.kappa, k, 1e-6),
            "{u:?}"
        );
    }

    #[test]
    fn refuses_to_predict_from_too_little_or_from_noise() {
        assert_eq!(fit(&SCHWARTZ[..3]).unwrap_err(), FitError::TooFewPoints(3));
        // The same concurrency twice is one level.
        let twice = [(1.0, 10.0), (1.0, 11.0), (2.0, 20.0), (3.0, 29.0)];
        assert_eq!(fit(&twice).unwrap_err(), FitError::TooFewPoints(3));
        let noise = [
            (1.0, 100.0),
            (2.0, 20.0),
            (3.0, 300.0),
            (4.0, 15.0),
            (5.0, 250.0),
            (6.0, 30.0),
        ];
        match fit(&noise) {
            Err(FitError::PoorFit(u)) => assert!(u.r2 < MIN_R2),
            other => panic!("{other:?}"),
        }
        let e = FitError::TooFewPoints(2).to_string();
        assert!(e.contains("at least 4"), "{e}");
    }

    #[test]
    fn linear_or_overflowing_points_give_no_peak_and_no_fit() {
        let linear: Vec<(f64, f64)> = (1..=5).map(|n| (n as f64, 100.0 * n as f64)).collect();
        match fit(&linear) {
            Ok(u) | Err(FitError::PoorFit(u)) => assert_eq!(u.peak_concurrency, None, "{u:?}"),
            Err(e) => panic!("{e}"),
        }
        let huge: Vec<(f64, f64)> = (1..=5).map(|n| (n as f64, 1e300 * n as f64)).collect();
        assert!(
            fit(&huge).is_err(),
            "numbers the model cannot hold are no fit"
        );
    }
}
