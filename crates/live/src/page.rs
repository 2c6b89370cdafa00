//! The dashboard's page: one HTML document with uPlot, the report's chart script
//! ([`volley_report::html::CHARTS_JS`]) and style inlined — nothing is fetched from any other
//! host. Its script follows `/events` (Server-Sent Events, one JSON snapshot each) and
//! draws the snapshot with the same chart code as report.html; once the run's report is
//! written it loads `/report`, so the page becomes the final report.

use volley_report::html::{CHARTS_JS, PAGE_CSS, UPLOT_CSS, UPLOT_JS};

const BODY: &str = r##"<h1 id="title">volley live</h1>
<p class="meta" id="status">connecting…</p>
<div class="controls">
<button id="stop" type="button">Stop the run</button>
<span id="retarget" hidden><label><span id="target-label">VUs</span> <input id="target" type="number" min="1" step="any" style="width:8em"></label>
<button id="set" type="button">Set</button></span>
<span id="control-note" class="note"></span>
</div>
<div class="cols">
<table id="now"></table>
<table id="totals"></table>
<table id="generator"></table>
</div>
<table id="thresholds"></table>
<table id="steps"></table>
<table id="errors"></table>
<div id="charts"></div>
<ul id="changes" class="note"></ul>
"##;

const SCRIPT: &str = r##"
(function () {
  var q = location.search.indexOf("token=") >= 0 ? location.search : "";
  var drawn = {}, root = document.getElementById("charts"), last = null;
  window.volleyLive = { updates: 0, snapshot: null };
  function $(id) { return document.getElementById(id); }
  function f(v, d) { return v == null || !isFinite(v) ? "-" : Number(v).toFixed(d == null ? 2 : d); }
  function table(el, head, rows, cls) {
    el.textContent = "";
    if (!rows.length) return;
    var tr = el.insertRow();
    head.forEach(function (h) { var th = document.createElement("th"); th.textContent = h; tr.appendChild(th); });
    rows.forEach(function (r, i) {
      var tr = el.insertRow();
      r.forEach(function (c) { tr.insertCell().textContent = c; });
      if (cls && cls[i]) tr.className = cls[i];
    });
  }
  function lat(l) { return l ? [f(l.p50_ms), f(l.p90_ms), f(l.p95_ms), f(l.p99_ms), f(l.max_ms)] : ["-", "-", "-", "-", "-"]; }
  function render(s) {
    last = s;
    document.title = "volley live: " + s.name;
    $("title").textContent = "volley live: " + s.name;
    var of = s.run_of ? " · run " + s.run_of[0] + " of " + s.run_of[1] : "";
    $("status").textContent = s.phase + of + " · " + f(s.elapsed_s, 0) + " s of " + f(s.planned_s, 0) + " s · interval " + s.interval_s + " s" +
      (s.warmup_s > 0 ? " · first " + s.warmup_s + " s (warm-up) left out of totals and thresholds" : "") + " · " + s.dir;
    var live = s.phase === "running";
    $("stop").disabled = !live;
    $("retarget").hidden = !(live && (s.control === "closed" || s.control === "open"));
    $("target-label").textContent = s.control === "open" ? "arrivals/s" : "VUs";
    if (s.control === "closed" && s.max_vus) $("target").max = s.max_vus;
    var n = s.now;
    table($("now"), ["last interval", ""], n ? [["t (s)", f(n.t_s, 1)], ["TPS", f(n.tps)], ["VUs (target)", f(n.vus, 0) + " (" + n.target_vus + ")"],
      ["MTTFB ms", f(n.mttfb_ms)], ["errors", String(n.errors)]] : []);
    var t = s.totals;
    table($("totals"), ["TTFB ms", "p50", "p90", "p95", "p99", "max"], [["last interval"].concat(lat(n && n.ttfb_ms)), ["whole run"].concat(lat(t.ttfb_ms)),
      ["total time, whole run"].concat(lat(t.total_ms))]);
    var g = s.generator;
    table($("generator"), ["generator", "now", "max / sum"], [["CPU %", f(g.cpu_pct, 1), f(g.cpu_max_pct, 1)], ["schedule lag ms", f(g.sched_lag_ms), f(g.sched_lag_max_ms)],
      ["late arrivals", "", String(g.late)], ["dropped arrivals", "", String(g.dropped)], ["requests / errors", String(t.tests), String(t.errors) + " (" + f(t.error_rate_pct) + " %)"]]);
    table($("thresholds"), ["threshold (live)", "actual", "state"], s.thresholds.map(function (x) { return [x.expr, f(x.actual), x.state]; }),
      s.thresholds.map(function (x) { return x.state === "pass" ? "better" : x.state === "fail" ? "worse" : ""; }));
    volleyCharts.draw(root, drawn, s.charts);
    table($("steps"), s.step_head, s.steps);
    table($("errors"), ["error kind", "count", "first messages"], s.errors.map(function (e) { return [e.kind, String(e.count), e.messages.join(" | ")]; }));
    var ch = $("changes"); ch.textContent = "";
    s.plan_changes.forEach(function (c) { var li = document.createElement("li"); li.textContent = "plan changed " + c; ch.appendChild(li); });
    window.volleyLive.updates += 1;
    window.volleyLive.snapshot = s;
    if (s.report) { events.close(); location.replace("/report" + q); }
  }
  function post(path, body) {
    return fetch(path + q, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body || {}) })
      .then(function (r) { return r.text().then(function (t) { $("control-note").textContent = t; }); });
  }
  $("stop").onclick = function () { $("stop").disabled = true; post("/stop"); };
  $("set").onclick = function () {
    var v = Number($("target").value);
    post("/target", last && last.control === "open" ? { rate: v } : { vus: Math.round(v) });
  };
  var events = new EventSource("/events" + q);
  events.onmessage = function (e) { render(JSON.parse(e.data)); };
  events.onerror = function () { if (!last || last.phase === "running") $("status").textContent = "connection to volley lost; retrying…"; };
})();
"##;

/// The live page.
pub(crate) fn live_page() -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>volley live</title><link rel=\"icon\" href=\"data:,\">\n<style>{UPLOT_CSS}\n{PAGE_CSS}\n.controls{{margin:8px 0}}.cols{{display:flex;gap:18px;flex-wrap:wrap}}button{{font:inherit}}tr.better td:last-child{{color:#1a7f37}}tr.worse td:last-child{{color:#cf222e;font-weight:bold}}\n</style></head><body>\n{BODY}<script>{UPLOT_JS}</script>\n<script>{CHARTS_JS}</script>\n<script>{SCRIPT}</script>\n</body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    /// What a reader acts on (the thresholds, the step table, the errors) comes before the
    /// raw charts.
    #[test]
    fn the_tables_come_before_the_charts() {
        let at = |id: &str| super::BODY.find(&format!("id=\"{id}\"")).unwrap();
        for table in ["thresholds", "steps", "errors"] {
            assert!(at(table) < at("charts"), "{table}");
        }
    }
}
