// Screenshots of a dashboard page with Debian's chromium (scripts/dashboard-screenshot).
//   node tests/browser/screenshot.mjs --url URL --modules DIR --out PREFIX [--theme dark|light]
// Writes PREFIX-board.png, PREFIX-graph.png and PREFIX-transcript.png.
import { createRequire } from "node:module";
import path from "node:path";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const puppeteer = createRequire(path.resolve(args.modules) + "/")("puppeteer-core");
const browser = await puppeteer.launch({
  executablePath: args.chromium || "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 900 });
  await page.evaluateOnNewDocument((t) => localStorage.setItem("mates-theme", t), args.theme || "dark");
  await page.goto(args.url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await page.screenshot({ path: args.out + "-board.png" });
  await page.click('.tab[data-tab="graph"]');
  await page.screenshot({ path: args.out + "-graph.png" });
  const agent = args.agent || (await page.$eval("#roster .member:nth-child(2)", (m) => m.dataset.name).catch(() => "lead"));
  await page.click(`#roster .member[data-name="${agent}"]`);
  await page.waitForFunction(() => document.querySelectorAll("#transcript .turn").length > 0, { timeout: 5000 });
  await page.screenshot({ path: args.out + "-transcript.png" });
} finally {
  await browser.close();
}
