// Drives Debian's Chromium through volley's live dashboard with playwright-core (run by
// crates/cli/tests/it/live.rs): loads the page, waits for live updates, takes a screenshot,
// presses Stop and waits for the page to become the final report. Prints one JSON line.
// argv: URL CHROMIUM SCREENSHOT
const { chromium } = require("playwright-core");

(async () => {
  const [url, executablePath, screenshot] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
  const out = { requests: [], console_errors: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on("request", (r) => out.requests.push(r.url()));
    page.on("console", (m) => { if (m.type() === "error") out.console_errors.push(m.text()); });
    page.on("pageerror", (e) => out.console_errors.push(String(e)));
    await page.goto(url);
    // Three live updates of the charts, each from a new interval.
    await page.waitForFunction(() => {
      const tps = document.querySelector('#charts [data-chart="tps"]');
      return tps && Number(tps.getAttribute("data-updates") || 0) >= 3;
    }, null, { timeout: 30000 });
    out.chart_updates = await page.evaluate(() => Number(document.querySelector('#charts [data-chart="tps"]').getAttribute("data-updates")));
    out.snapshots = await page.evaluate(() => window.volleyLive.updates);
    out.canvases = await page.evaluate(() => document.querySelectorAll("#charts canvas").length);
    out.charts = await page.evaluate(() => Array.from(document.querySelectorAll("#charts [data-chart]")).map((e) => e.getAttribute("data-chart")));
    out.points = await page.evaluate(() => window.volleyLive.snapshot.charts[0].x.length);
    await page.screenshot({ path: screenshot, fullPage: true });
    await page.click("#stop");
    await page.waitForURL(/\/report/, { timeout: 30000 });
    await page.waitForLoadState("load");
    out.final_url = page.url();
    out.final_title = await page.title();
    out.final_canvases = await page.evaluate(() => document.querySelectorAll("#charts canvas").length);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
