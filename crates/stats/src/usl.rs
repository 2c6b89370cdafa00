//! The Universal Scalability Law (N. Gunther): throughput at concurrency `N` is
//! `X(N) = λN / (1 + σ(N − 1) + κN(N − 1))` — λ the throughput of one, σ the share lost to
//! contention (queueing for a shared resource), κ the cost of coherency (every worker
//! agreeing with every other), which makes throughput fall past a peak at
//! `N* = √((1 − σ) / κ)`.
//!
//! The fit is a least-squares fit of `X` itself, as R's `usl` package (S. Moeding) does with
//! `nls(..., algorithm = "port")`, within the same bounds: λ ≥ 0, 0 ≤ σ ≤ 1, κ ≥ 0. It is a
//! projected Levenberg–Marquardt: a parameter on its bound whose gradient points out of the
//! box is held there and the others are stepped, so a fit whose best κ is 0 reaches the
//! minimum of the two-parameter law instead of stopping where κ first touched 0. It starts
//! from the linear fit of `N / X = (1 + σ(N − 1) + κN(N − 1)) / λ`, from that fit without κ
//! and from the origin of σ and κ, and keeps the best. The points are scaled first
//! (concurrency by its largest value when that is above 1, throughput by its largest), so
//! throughputs of 1e300 or 1e-300 fit as well as ones of 100. The `usl` crate on crates.io
//! fits the same model, but its repository (codahale/usl-rs) was archived in January 2023
//! (last release 0.3.0, December 2021); a three-parameter fit is short, so it is written here
//! and checked against R's `usl` 3.0.3 to 4 digits (the tests below).

use serde::{Deserialize, Serialize};

/// Points a fit needs: three parameters and at least one degree of freedom.
pub const MIN_POINTS: usize = 4;

/// A fit below this R² predicts nothing.
pub const MIN_R2: f64 = 0.90;

/// A measured concurrency within this share of the peak's concurrency (±25 %) measured the
/// top of the curve. The law is flat near its peak (with σ small, throughput at 0.75 N* or
/// 1.25 N* is within about 4 % of the peak's), so a point that near shows the peak's height;
/// farther from every point, the peak is the model's guess between or beyond the levels.
pub const PEAK_MEASURED_WITHIN: f64 = 0.25;

/// The fitted law.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Usl {
    /// Contention: the serial share (0 ≤ σ ≤ 1).
    pub sigma: f64,
    /// Coherency: the cost of crosstalk between workers (κ ≥ 0).
    pub kappa: f64,
    /// Throughput at concurrency 1, as the model has it.
    pub lambda: f64,
    /// Where throughput peaks, `√((1 − σ) / κ)`; `None` without coherency (κ = 0: it only
    /// levels off, at λ / σ), or when that lies beyond ten times the highest concurrency.
    pub peak_concurrency: Option<f64>,
    /// Throughput at the peak.
    pub peak_throughput: Option<f64>,
    /// With a peak: the highest measured concurrency at or below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_below_peak: Option<f64>,
    /// With a peak: the lowest measured concurrency above it (`None` when it lies beyond the
    /// highest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_above_peak: Option<f64>,
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

    /// Whether a level was measured within [`PEAK_MEASURED_WITHIN`] of the peak's
    /// concurrency; `None` without a peak.
    pub fn peak_measured(&self) -> Option<bool> {
        let peak = self.peak_concurrency?;
        let near =
            |m: Option<f64>| m.is_some_and(|m| (m - peak).abs() <= PEAK_MEASURED_WITHIN * peak);
        Some(near(self.measured_below_peak) || near(self.measured_above_peak))
    }

    /// What to say of a peak no level was measured near (`None` when one was, or without a
    /// peak): the peak is predicted, not measured, and where to measure.
    pub fn peak_note(&self) -> Option<String> {
        if self.peak_measured()? {
            return None;
        }
        let peak = self.peak_concurrency?;
        let around = match (self.measured_below_peak, self.measured_above_peak) {
            (Some(b), Some(a)) => format!(
                "it lies between the levels measured at {} and {}",
                short(b),
                short(a)
            ),
            (Some(b), None) => format!("it lies beyond the highest level measured, {}", short(b)),
            (None, Some(a)) => format!("it lies below the lowest level measured, {}", short(a)),
            (None, None) => "no level was measured".to_string(),
        };
        Some(format!(
            "The peak is predicted, not measured: {around}, none within ±{:.0} % of a concurrency of {}; measure near {} before relying on its throughput.",
            PEAK_MEASURED_WITHIN * 100.0,
            short(peak),
            short(peak)
        ))
    }
}

/// A concurrency as it reads in a sentence: to one decimal below 100, whole above.
fn short(n: f64) -> String {
    if n >= 100.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

fn model(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// The law on scaled points: concurrency `u = N / s`, throughput `y = X / t`, with
/// `θ = (λs/t, σs, κs²)`, so that `y = θ₀u / (1 + θ₁(u − 1/s) + θ₂u(u − 1/s))` is the law
/// exactly and every number in it is near 1 whatever the units.
struct Scaled {
    /// `(u, y)`.
    pts: Vec<(f64, f64)>,
    /// `1 / s`.
    inv: f64,
    /// Upper bounds of θ (σ ≤ 1 is θ₁ ≤ s).
    hi: [f64; 3],
}

impl Scaled {
    fn denominator(&self, th: &[f64; 3], u: f64) -> f64 {
        1.0 + th[1] * (u - self.inv) + th[2] * u * (u - self.inv)
    }

    fn at(&self, th: &[f64; 3], u: f64) -> f64 {
        th[0] * u / self.denominator(th, u)
    }

    /// The residual sum of squares; infinite where the law has no value (a denominator at
    /// or below 0, possible only below a concurrency of 1).
    fn sse(&self, th: &[f64; 3]) -> f64 {
        let mut e = 0.0;
        for &(u, y) in &self.pts {
            let d = self.denominator(th, u);
            if d.is_nan() || d <= 0.0 {
                return f64::INFINITY;
            }
            e += (y - th[0] * u / d).powi(2);
        }
        if e.is_nan() { f64::INFINITY } else { e }
    }

    fn clamp(&self, th: [f64; 3]) -> [f64; 3] {
        // `+ 0.0` makes a −0 (a seed's) the 0 it is, so it never prints as "-0.0000000".
        [0, 1, 2].map(|i| th[i].clamp(0.0, self.hi[i]) + 0.0)
    }

    /// Projected Levenberg–Marquardt from `th` within `0 ≤ θ ≤ hi`: each step holds the
    /// parameters on a bound whose gradient points out of the box and solves for the rest,
    /// then projects into the box. Returns the end and its residual sum of squares.
    fn descend(&self, th: [f64; 3]) -> ([f64; 3], f64) {
        let mut th = self.clamp(th);
        let mut err = self.sse(&th);
        if !err.is_finite() {
            return (th, err);
        }
        let mut mu = 1e-3;
        for _ in 0..1000 {
            // Normal equations JᵀJ δ = Jᵀr of the residuals r = y − f, J = ∂f/∂θ.
            let mut jtj = [[0.0; 3]; 3];
            let mut jtr = [0.0; 3];
            for &(u, y) in &self.pts {
                let d = self.denominator(&th, u);
                let f = th[0] * u / d;
                let j = [u / d, -f * (u - self.inv) / d, -f * u * (u - self.inv) / d];
                let r = y - f;
                for a in 0..3 {
                    jtr[a] += j[a] * r;
                    for b in 0..3 {
                        jtj[a][b] += j[a] * j[b];
                    }
                }
            }
            // −2Jᵀr is the gradient of the sum of squares: a parameter at its floor with
            // Jᵀr ≤ 0 (or its ceiling with Jᵀr ≥ 0) would leave the box to improve, so it stays.
            let free = [0, 1, 2].map(|i| {
                !((th[i] <= 0.0 && jtr[i] <= 0.0) || (th[i] >= self.hi[i] && jtr[i] >= 0.0))
            });
            let mut improved = false;
            for _ in 0..40 {
                let mut m = [[0.0; 3]; 3];
                let mut v = [0.0; 3];
                for a in 0..3 {
                    if !free[a] {
                        m[a][a] = 1.0;
                        continue;
                    }
                    v[a] = jtr[a];
                    for b in 0..3 {
                        if free[b] {
                            m[a][b] = jtj[a][b];
                        }
                    }
                    m[a][a] += mu * jtj[a][a].max(1e-300);
                }
                let Some(delta) = solve3(m, v) else {
                    mu *= 10.0;
                    continue;
                };
                let next = self.clamp([0, 1, 2].map(|i| th[i] + delta[i]));
                let e = self.sse(&next);
                if e < err {
                    let gain = (err - e) / err.max(f64::MIN_POSITIVE);
                    (th, err) = (next, e);
                    mu = (mu / 10.0).max(1e-12);
                    improved = gain > 1e-15;
                    break;
                }
                mu *= 10.0;
                if mu > 1e30 {
                    break;
                }
            }
            if !improved {
                break;
            }
        }
        (th, err)
    }

    /// θ from the linear least squares of `u/y = a + b(u − 1/s) + c·u(u − 1/s)` over the
    /// points with throughput above 0 (`θ = (1/a, b/a, c/a)`), with `c` or not.
    fn linear_seed(&self, with_kappa: bool) -> Option<[f64; 3]> {
        let k = if with_kappa { 3 } else { 2 };
        let mut ata = [[0.0; 3]; 3];
        let mut aty = [0.0; 3];
        for &(u, y) in self.pts.iter().filter(|p| p.1 > 0.0) {
            let row = [1.0, u - self.inv, u * (u - self.inv)];
            for a in 0..k {
                aty[a] += row[a] * u / y;
                for b in 0..k {
                    ata[a][b] += row[a] * row[b];
                }
            }
        }
        if !with_kappa {
            ata[2][2] = 1.0;
        }
        match solve3(ata, aty)? {
            [a, b, c] if a > 0.0 => Some([1.0 / a, b / a, c / a]),
            _ => None,
        }
    }
}

/// Fits the law to `(concurrency, throughput)` points. A point needs a finite concurrency
/// above 0 and a finite throughput of 0 or more; a measured 0 (a collapse) is fitted like any
/// other point.
pub fn fit(points: &[(f64, f64)]) -> Result<Usl, Error> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(n, x)| n.is_finite() && x.is_finite() && *n > 0.0 && *x >= 0.0)
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut distinct = pts.iter().map(|p| p.0).collect::<Vec<_>>();
    distinct.dedup();
    if distinct.len() < MIN_POINTS {
        return Err(Error(Repr::TooFewPoints(distinct.len())));
    }
    let top_n = distinct[distinct.len() - 1];
    let s = top_n.max(1.0);
    let t = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let t = if t > 0.0 { t } else { 1.0 };
    let scaled = Scaled {
        pts: pts.iter().map(|&(n, x)| (n / s, x / t)).collect(),
        inv: 1.0 / s,
        hi: [f64::INFINITY, s, f64::INFINITY],
    };
    // The highest throughput per unit of concurrency: the law's λ when σ and κ are 0.
    let slope = scaled.pts.iter().map(|p| p.1 / p.0).fold(0.0, f64::max);
    let starts = [
        scaled.linear_seed(true),
        scaled.linear_seed(false),
        Some([slope, 0.0, 0.0]),
    ];
    let (th, err) = starts
        .into_iter()
        .flatten()
        .filter(|th| th.iter().all(|v| v.is_finite()))
        .map(|th| scaled.descend(th))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(([slope, 0.0, 0.0], scaled.sse(&[slope, 0.0, 0.0])));
    let mean = scaled.pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let sst: f64 = scaled.pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    // Data that are all one throughput leave nothing for the law to explain.
    let r2 = if sst > 0.0 { 1.0 - err / sst } else { 0.0 };
    let (lambda, sigma, kappa) = (th[0] * (t / s), th[1] / s, th[2] / s / s);
    // The peak, from the scaled law (N* = s·√((1 − θ₁/s)/θ₂)). A peak far beyond the data is
    // the model's extrapolation, not something the points show (perfectly linear data leave
    // κ at its floor and put the "peak" at a billion).
    let peak_concurrency = (th[2] > 0.0)
        .then(|| s * ((1.0 - th[1] / s).max(0.0) / th[2]).sqrt())
        .filter(|p| p.is_finite() && *p > 0.0 && *p <= 10.0 * top_n);
    let peak_throughput = peak_concurrency.map(|n| t * scaled.at(&th, n / s));
    let below = peak_concurrency.and_then(|p| distinct.iter().rev().find(|&&n| n <= p).copied());
    let above = peak_concurrency.and_then(|p| distinct.iter().find(|&&n| n > p).copied());
    let usl = Usl {
        sigma,
        kappa,
        lambda,
        peak_concurrency,
        peak_throughput,
        measured_below_peak: below,
        measured_above_peak: above,
        r2,
        points: pts.len(),
    };
    // NaN or infinity (numbers the model cannot hold) is no fit either.
    let finite = [sigma, kappa, lambda, r2].iter().all(|v| v.is_finite())
        && peak_throughput.is_none_or(f64::is_finite);
    if !(finite && r2 >= MIN_R2) {
        return Err(Error(Repr::PoorFit(usl)));
    }
    Ok(usl)
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

// The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
// about (`is_too_few_points()`), and a message in the statistics' terms; the binary names the
// flags. It lives beside the fit, its only source, so the module graph stays one-way.
// (`ErrorKind` and `ErrorMessage` are not errors of this crate but the run's request errors,
// counted.)

/// Why no law is given.
#[derive(Debug, Clone, PartialEq)]
pub struct Error(pub(crate) Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fewer than [`MIN_POINTS`] distinct concurrencies: an input problem.
    TooFewPoints,
    /// The law explains too little of the data to predict from (R² below [`MIN_R2`]): a
    /// verdict that cannot be judged.
    PoorFit,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::TooFewPoints(_) => Kind::TooFewPoints,
            Repr::PoorFit(_) => Kind::PoorFit,
        }
    }

    /// Fewer than [`MIN_POINTS`] distinct concurrencies.
    pub fn is_too_few_points(&self) -> bool {
        self.kind() == Kind::TooFewPoints
    }

    /// The law fits the points poorly.
    pub fn is_poor_fit(&self) -> bool {
        self.kind() == Kind::PoorFit
    }

    /// The poor fit, when that is what went wrong.
    pub fn poor_fit(&self) -> Option<&Usl> {
        match &self.0 {
            Repr::PoorFit(u) => Some(u),
            Repr::TooFewPoints(_) => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Repr {
    /// Fewer than [`MIN_POINTS`] distinct concurrencies.
    TooFewPoints(usize),
    /// The law explains too little of the data to predict from (R² below [`MIN_R2`]).
    PoorFit(Usl),
}

impl std::fmt::Display for Repr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repr::TooFewPoints(n) => write!(
                f,
                "{n} usable point{} (concurrency > 0, throughput 0 or more, distinct concurrencies); the law has 3 parameters and needs at least {MIN_POINTS}: measure more levels (a step-up with more stages, or a capacity search over numbers of users)",
                if *n == 1 { "" } else { "s" }
            ),
            Repr::PoorFit(u) => write!(
                f,
                "the law fits these points poorly (R² {:.3} < {MIN_R2}), so it predicts nothing: the throughput is too noisy, or something other than concurrency changed between the points",
                u.r2
            ),
        }
    }
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
        let e = fit(&SCHWARTZ[..3]).unwrap_err();
        assert_eq!(e.kind(), Kind::TooFewPoints);
        assert!(e.is_too_few_points() && !e.is_poor_fit());
        assert!(e.to_string().starts_with("3 usable points"), "{e}");
        // The same concurrency twice is one level.
        let twice = [(1.0, 10.0), (1.0, 11.0), (2.0, 20.0), (3.0, 29.0)];
        assert!(
            fit(&twice)
                .unwrap_err()
                .to_string()
                .starts_with("3 usable points")
        );
        let noise = [
            (1.0, 100.0),
            (2.0, 20.0),
            (3.0, 300.0),
            (4.0, 15.0),
            (5.0, 250.0),
            (6.0, 30.0),
        ];
        let e = fit(&noise).unwrap_err();
        assert_eq!(e.kind(), Kind::PoorFit, "{e}");
        assert!(e.poor_fit().is_some_and(|u| u.r2 < MIN_R2), "{e:?}");
        let e = fit(&SCHWARTZ[..2]).unwrap_err().to_string();
        assert!(e.contains("at least 4"), "{e}");
    }

    #[test]
    fn linear_points_give_no_peak() {
        let linear: Vec<(f64, f64)> = (1..=5).map(|n| (n as f64, 100.0 * n as f64)).collect();
        let u = fit(&linear).unwrap();
        assert_eq!(u.peak_concurrency, None, "{u:?}");
        assert_eq!((u.sigma, u.kappa), (0.0, 0.0), "{u:?}");
        assert!(within(u.lambda, 100.0, 1e-9) && u.r2 > 0.999_999, "{u:?}");
        assert_eq!(u.peak_measured(), None);
    }

    /// The residual sum of squares of `u` over `pts`, in the points' units.
    fn rss(u: &Usl, pts: &[(f64, f64)]) -> f64 {
        pts.iter()
            .map(|(n, x)| (x - u.throughput(*n)).powi(2))
            .sum()
    }

    /// R's `usl` package 3.0.3 (S. Moeding, N. Gunther; `nls(..., algorithm = "port")` with
    /// σ, κ ≥ 0), its published coefficients for its own data sets, to 4 digits. R cannot
    /// be installed here, so the figures are the package's (issue 53 §3).
    #[test]
    fn matches_r_usl_to_four_digits() {
        let specsdm91 = [
            (1.0, 64.9),
            (18.0, 995.9),
            (36.0, 1652.4),
            (72.0, 1853.2),
            (108.0, 1828.9),
            (144.0, 1775.0),
            (216.0, 1702.2),
        ];
        let raytracer = [
            (1.0, 20.0),
            (4.0, 78.0),
            (8.0, 130.0),
            (12.0, 170.0),
            (16.0, 190.0),
            (20.0, 200.0),
            (24.0, 210.0),
            (28.0, 230.0),
            (32.0, 260.0),
            (48.0, 280.0),
            (64.0, 310.0),
        ];
        for (pts, sigma, kappa, lambda) in [
            (&specsdm91[..], 0.02772847, 0.0001043655, 89.99523),
            (&raytracer[..6], 0.02444404, 0.001626809, 20.85605),
            (&raytracer[..], 0.05777078, 0.0, 21.84884),
        ] {
            let u = fit(pts).unwrap();
            assert!(within(u.sigma, sigma, 5e-5), "σ {} ≠ {sigma}", u.sigma);
            assert!(within(u.lambda, lambda, 5e-5), "λ {} ≠ {lambda}", u.lambda);
            if kappa == 0.0 {
                assert_eq!(u.kappa, 0.0, "{u:?}");
            } else {
                assert!(within(u.kappa, kappa, 5e-5), "κ {} ≠ {kappa}", u.kappa);
            }
        }
    }

    /// All eleven raytracer points: κ's best value is its bound 0. A fit that stops where κ
    /// first touched 0 ended at σ 0.05882, λ 22.005, a residual sum of squares of 707.6; the
    /// minimum is 697.24, and there the sum grows whichever way a parameter moves within
    /// the bounds (the KKT conditions: κ's derivative is positive, σ's and λ's are 0).
    #[test]
    fn a_bound_kappa_reaches_the_minimum_not_the_first_touch() {
        let pts = [
            (1.0, 20.0),
            (4.0, 78.0),
            (8.0, 130.0),
            (12.0, 170.0),
            (16.0, 190.0),
            (20.0, 200.0),
            (24.0, 210.0),
            (28.0, 230.0),
            (32.0, 260.0),
            (48.0, 280.0),
            (64.0, 310.0),
        ];
        let u = fit(&pts).unwrap();
        let e = rss(&u, &pts);
        assert!((e - 697.24).abs() < 0.01, "RSS {e}");
        let moved = |ds: f64, dk: f64, dl: f64| {
            let v = Usl {
                sigma: u.sigma + ds,
                kappa: u.kappa + dk,
                lambda: u.lambda + dl,
                ..u
            };
            rss(&v, &pts)
        };
        for (ds, dk, dl) in [
            (1e-4, 0.0, 0.0),
            (-1e-4, 0.0, 0.0),
            (0.0, 1e-6, 0.0),
            (0.0, 0.0, 1e-3),
            (0.0, 0.0, -1e-3),
        ] {
            assert!(
                moved(ds, dk, dl) > e,
                "({ds}, {dk}, {dl}) improves on {u:?}"
            );
        }
    }

    /// Throughput growing faster than linearly wants σ below 0: it stays at 0, and the rest
    /// is fitted there.
    #[test]
    fn superlinear_points_hold_sigma_at_its_bound() {
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0]
            .iter()
            .map(|&n: &f64| (n, 10.0 * n.powf(1.1)))
            .collect();
        let u = fit(&pts).unwrap();
        assert_eq!((u.sigma, u.kappa), (0.0, 0.0), "{u:?}");
        let e = rss(&u, &pts);
        for dl in [1e-3, -1e-3] {
            let v = Usl {
                lambda: u.lambda + dl,
                ..u
            };
            assert!(
                rss(&v, &pts) > e,
                "λ {} is not the best with σ = κ = 0",
                u.lambda
            );
        }
    }

    /// A measured 0 is a point of the fit: a collapse after linear growth is no law, not a
    /// line through the points before it.
    #[test]
    fn a_measured_zero_stays_in_the_fit() {
        let pts = [
            (1.0, 100.0),
            (2.0, 200.0),
            (4.0, 400.0),
            (8.0, 800.0),
            (16.0, 0.0),
        ];
        match fit(&pts).as_ref().map_err(Error::poor_fit) {
            Err(Some(u)) => {
                assert_eq!(u.points, 5, "{u:?}");
                assert!(u.r2 < MIN_R2, "{u:?}");
            }
            other => panic!("a collapse to 0 is not linear growth: {other:?}"),
        }
        // Three levels and a zero are four levels.
        assert!(!fit(&pts[1..]).is_err_and(|e| e.is_too_few_points()));
    }

    /// Exact data fit exactly whatever their units: the points are scaled before the fit.
    #[test]
    fn exact_points_fit_at_any_scale() {
        let (l, s, k) = (120.0, 0.05, 0.0002);
        let ns = [1.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];
        for scale in [1e300, 1e-300] {
            let pts: Vec<(f64, f64)> = ns.iter().map(|&n| (n, model(l, s, k, n) * scale)).collect();
            let u = fit(&pts).unwrap_or_else(|e| panic!("×{scale}: {e}"));
            assert!(u.r2 > 0.999_999, "×{scale}: {u:?}");
            assert!(
                within(u.lambda, l * scale, 1e-6)
                    && within(u.sigma, s, 1e-6)
                    && within(u.kappa, k, 1e-6),
                "×{scale}: {u:?}"
            );
            assert!(within(
                u.peak_concurrency.unwrap(),
                ((1.0 - s) / k).sqrt(),
                1e-6
            ));
            let linear: Vec<(f64, f64)> = (1..=5).map(|n| (n as f64, scale * n as f64)).collect();
            let u = fit(&linear).unwrap_or_else(|e| panic!("×{scale}: {e}"));
            assert!(
                u.r2 > 0.999_999 && within(u.lambda, scale, 1e-9),
                "×{scale}: {u:?}"
            );
            // Concurrency in odd units too: 1e300 workers doing one request each.
            let wide: Vec<(f64, f64)> = (1..=5).map(|n| (scale * n as f64, n as f64)).collect();
            let u = fit(&wide).unwrap_or_else(|e| panic!("N ×{scale}: {e}"));
            assert!(u.r2 > 0.999_999, "N ×{scale}: {u:?}");
        }
        // Beyond what a float holds, no fit (λ of 1e300 at concurrency 1e-300 is 1e600).
        let over: Vec<(f64, f64)> = (1..=5)
            .map(|n| (1e-300 * n as f64, 1e300 * n as f64))
            .collect();
        assert!(fit(&over).is_err());
    }

    /// The peak is measured when a level lies within ±25 % of its concurrency; between two
    /// far levels it is the model's, and the note says where to measure.
    #[test]
    fn a_peak_between_far_levels_is_predicted_not_measured() {
        let u = fit(&SCHWARTZ).unwrap();
        assert_eq!(
            u.peak_measured(),
            Some(true),
            "108 is within 25 % of 96: {u:?}"
        );
        assert_eq!(u.peak_note(), None);
        // The law λ 40, σ 0.1, κ 0.04 peaks at N* = √(0.9 / 0.04) = 4.74, 3.56 to 5.93 ±25 %.
        let (l, s, k) = (40.0, 0.1, 0.04);
        let pts: Vec<(f64, f64)> = [1.0, 2.1, 7.1, 9.0, 12.0]
            .iter()
            .map(|&n| (n, model(l, s, k, n)))
            .collect();
        let u = fit(&pts).unwrap();
        assert!(within(u.peak_concurrency.unwrap(), 4.743, 1e-3), "{u:?}");
        assert_eq!(
            (u.measured_below_peak, u.measured_above_peak),
            (Some(2.1), Some(7.1))
        );
        assert_eq!(u.peak_measured(), Some(false));
        let note = u.peak_note().unwrap();
        assert!(
            note.contains("predicted, not measured")
                && note.contains("between the levels measured at 2.1 and 7.1")
                && note.contains("4.7"),
            "{note}"
        );
        // A level at 5.5 (16 % above) measures it.
        let mut near = pts.clone();
        near.push((5.5, model(l, s, k, 5.5)));
        assert_eq!(fit(&near).unwrap().peak_measured(), Some(true));
        // Beyond the highest level (up to ten times it) it is predicted too.
        let low: Vec<(f64, f64)> = [1.0, 1.5, 2.1, 2.8]
            .iter()
            .map(|&n| (n, model(l, s, k, n)))
            .collect();
        let u = fit(&low).unwrap();
        assert_eq!(u.measured_above_peak, None, "{u:?}");
        assert!(
            u.peak_note()
                .unwrap()
                .contains("beyond the highest level measured, 2.8"),
            "{u:?}"
        );
    }
}
