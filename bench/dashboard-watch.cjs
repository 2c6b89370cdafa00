// Watches a volley dashboard in headless Chromium until the page becomes the report (used by
// bench/dashboard.sh). argv: URL CHROMIUM. Prints how many snapshots the live page drew
// (read every 200 ms while it is live: the count goes with the page when it becomes the report).
const { chromium } = require("playwright-core");
(async () => {
  const [url, executablePath] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(url);
  let updates = 0;
  const deadline = Date.now() + 600000;
  while (!/\/report/.test(page.url()) && Date.now() < deadline) {
    try {
      updates = Math.max(updates, await page.evaluate(() => (window.volleyLive ? window.volleyLive.updates : 0)));
    } catch (e) {
      // the page is navigating to the report
    }
    await page.waitForTimeout(200);
  }
  await page.waitForURL(/\/report/, { timeout: Math.max(1000, deadline - Date.now()) });
  console.log("snapshots drawn:", updates);
  await browser.close();
})().catch((e) => { console.error(String(e)); process.exit(1); });
