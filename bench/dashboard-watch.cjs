// Watches a volley dashboard in headless Chromium until the page becomes the report (used by
// bench/dashboard.sh). argv: URL CHROMIUM. Prints how many snapshots the page drew.
const { chromium } = require("playwright-core");
(async () => {
  const [url, executablePath] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(url);
  await page.waitForURL(/\/report/, { timeout: 600000 });
  console.log("snapshots drawn:", await page.evaluate(() => (window.volleyLive || { updates: "n/a (report loaded)" }).updates));
  await browser.close();
})().catch((e) => { console.error(String(e)); process.exit(1); });
