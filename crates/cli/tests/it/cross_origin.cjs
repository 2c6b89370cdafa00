// A hostile page in Debian's Chromium against volley's live dashboard (run by
// crates/cli/tests/it/live.rs, with playwright-core). Two attacks a page of another site can make:
//  1. cross-site requests from http://evil.test/ (served by this script): a "simple" POST /stop
//     (text/plain, no-cors, as any page may send), a form POST, a JSON POST /target (which needs a
//     CORS preflight) and a read of /events;
//  2. DNS rebinding: http://rebind.test:PORT/ resolves to 127.0.0.1, so the page is same-origin
//     with itself and sends its own name as the Host.
// Chromium's own Private Network Access checks are turned off, so every request reaches volley
// and what is tested is volley's refusal. Prints one JSON line: each request volley answered, with
// its status, and what the page could read.
// argv: DASHBOARD_URL CHROMIUM
const { chromium } = require("playwright-core");

(async () => {
  const [dash, executablePath] = process.argv.slice(2);
  const port = new URL(dash).port;
  const browser = await chromium.launch({
    executablePath,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      `--host-resolver-rules=MAP rebind.test 127.0.0.1`,
      "--disable-features=PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests,LocalNetworkAccessChecks",
    ],
  });
  const out = { answered: [], failed: [] };
  try {
    const page = await browser.newPage();
    page.on("response", (r) => {
      if (r.url().includes(`:${port}/`)) out.answered.push({ method: r.request().method(), url: r.url(), status: r.status() });
    });
    page.on("requestfailed", (r) => out.failed.push({ method: r.method(), url: r.url(), error: r.failure() && r.failure().errorText }));
    // 1. A page of another site.
    await page.route("http://evil.test/", (route) => route.fulfill({
      contentType: "text/html",
      body: `<!doctype html><title>evil</title>
        <form id="f" method="POST" action="${dash}/stop" enctype="text/plain" target="sink"><input name="{}" value=""></form>
        <iframe name="sink"></iframe>`,
    }));
    await page.goto("http://evil.test/");
    out.cross_site = await page.evaluate(async (dash) => {
      const r = {};
      try { await fetch(dash + "/stop", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: "{}" }); r.simple = "sent"; } catch (e) { r.simple = String(e); }
      try { const x = await fetch(dash + "/target", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"vus": 1}' }); r.json = x.status; } catch (e) { r.json = "blocked: " + e; }
      try { const x = await fetch(dash + "/events"); r.events = x.status; } catch (e) { r.events = "blocked: " + e; }
      return r;
    }, dash);
    await page.evaluate(() => document.getElementById("f").submit());
    await page.waitForTimeout(1500);
    // 2. DNS rebinding: the attacker's own name, now pointing at the dashboard.
    const rebound = await page.goto(`http://rebind.test:${port}/`);
    out.rebind_page = rebound ? rebound.status() : null;
    out.rebind_events = await page.evaluate(async () => {
      try { const x = await fetch("/events"); return x.status; } catch (e) { return "failed: " + e; }
    });
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
