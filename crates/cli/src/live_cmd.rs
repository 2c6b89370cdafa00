//! The dashboard's side of the command line: starting it for `volley run --dashboard`, and
//! serving a finished page for `volley report --serve` / `volley compare --serve`. The
//! routes mounted beside the dashboard's own are made in one place, [`extra_routes`].

use anyhow::Result;
use volley_export::MetricsEndpoint;
use volley_live::{Access, Dashboard, Router};

/// Routes served on the dashboard's port besides its own, behind the same access rule:
/// during a run, `/metrics` (OpenMetrics text of the running run, for a Prometheus that pulls).
fn extra_routes(metrics: Option<&MetricsEndpoint>) -> Router {
    metrics.map_or_else(Router::new, |m| m.router())
}

/// The address and access rule `--dashboard[=ADDR]` / `--serve[=ADDR]` ask for.
fn address(text: &str) -> Result<(std::net::SocketAddr, Access)> {
    let addr = volley_live::parse_addr(Some(text)).map_err(|e| anyhow::anyhow!("--serve {e}"))?;
    Ok((addr, Access::for_addr(addr)))
}

/// Starts the live dashboard on `addr` (`--dashboard`, resolved) and prints its URL.
pub(crate) fn start(addr: std::net::SocketAddr, metrics: &MetricsEndpoint) -> Result<Dashboard> {
    let dashboard = Dashboard::start(addr, Access::for_addr(addr), extra_routes(Some(metrics)))
        .map_err(|e| anyhow::anyhow!("--dashboard {e}"))?;
    eprintln!("volley: dashboard {}", dashboard.url());
    Ok(dashboard)
}

/// Serves `html` until Ctrl-C, printing its URL.
pub(crate) fn serve(text: &str, html: String) -> Result<()> {
    let (addr, access) = address(text)?;
    let dashboard = Dashboard::serve_page(addr, access, html, extra_routes(None))
        .map_err(|e| anyhow::anyhow!("--serve {e}"))?;
    eprintln!("volley: serving {} (Ctrl-C ends)", dashboard.url());
    dashboard.serve_until_interrupted();
    Ok(())
}
