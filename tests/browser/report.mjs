// The post-mortem page (DESIGN §31) in Debian's chromium, headless: the
// demo run in a fresh workspace, `mates report --archived --html` of its
// team, the file opened with every network request refused and recorded.
//
//   node tests/browser/report.mjs --mates BIN --modules DIR [--chromium PATH] [--shots PREFIX]
//
// Proves: the page asks for nothing outside itself (no request but the
// file, none blocked by its policy); the timeline draws a bar per task
// held, as the JSON report has them, and the failures as the JSON has
// them, each in its class; no script error; dark and light, and 420 px
// wide without a sideways scroll. Screenshots at PREFIX-{dark,light,narrow}.png.
// Exit 0 passed, 1 failed, 77 skipped (no chromium or puppeteer-core).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { Checks, browserParts, launchBrowser, options } from "./common.mjs";

const args = options();
const { chromium, puppeteer } = browserParts(args);
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-report-"));
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);
const shots = args.shots || path.join(ws, "report");
const mates = (...a) => spawnSync(args.mates, a, { encoding: "utf8", timeout: 60000 });

let browser = null;
try {
  const demo = mates("demo", "--workspace", path.join(ws, "demo"));
  check(demo.status === 0, "the demo ran: " + (demo.status === 0 ? "" : demo.stdout + demo.stderr));
  const at = ["--workspace", path.join(ws, "demo"), "report", "--team", "rest-to-graphql", "--archived"];
  const page = path.join(ws, "report.html");
  const made = mates(...at, "--html", page);
  check(made.status === 0 && fs.existsSync(page), "mates report --html wrote the page: " + made.stdout.trim() + made.stderr);
  const json = JSON.parse(mates(...at, "--json").stdout);

  browser = await launchBrowser(puppeteer, chromium);
  const tab = await browser.newPage();
  const requests = [], errors = [], refused = [];
  await tab.setRequestInterception(true);
  tab.on("request", (q) => {
    requests.push(q.url());
    if (q.url().startsWith("file://")) q.continue(); else q.abort();
  });
  tab.on("pageerror", (e) => errors.push(e.message));
  tab.on("console", (m) => { if (/Content.Security.Policy|Refused/i.test(m.text())) refused.push(m.text()); });
  for (const theme of ["dark", "light"]) {
    await tab.emulateMediaFeatures([{ name: "prefers-color-scheme", value: theme }]);
    await tab.setViewport({ width: 1280, height: 900 });
    await tab.goto("file://" + page, { waitUntil: "load" });
    await tab.screenshot({ path: `${shots}-${theme}.png`, fullPage: true });
  }
  check(requests.every((u) => u.startsWith("file://")), "the page asked for nothing outside itself: " + requests.join(" "));
  check(refused.length === 0, "its policy blocked nothing it uses: " + refused.join(" | "));
  check(errors.length === 0, "no script error: " + errors.join(" | "));

  const bars = await tab.$$eval("svg g.bar", (gs) => gs.map((g) => Number(g.dataset.task)));
  check(bars.length === json.timeline.length && bars.length >= 4,
        `a bar per task held (${bars.length} drawn, ${json.timeline.length} in the record)`);
  check(json.timeline.every((b) => bars.includes(b.task)), "each task held is on the timeline");
  const rows = await tab.$$eval("tr.failure-row", (rs) => rs.map((r) => r.dataset.class));
  check(rows.length === json.failures.length && rows.length > 0,
        `a row per failure (${rows.length} shown, ${json.failures.length} in the record)`);
  check(rows.every((c, i) => c === json.failures[i].class), "each failure in its class: " + rows.join(", "));
  check(json.failures.some((f) => f.class === "specification" && /plan was rejected/.test(f.what)),
        "the demo's rejected plan is a specification failure");
  const text = await tab.$eval("body", (b) => b.innerText);
  for (const part of ["Timeline", "Failures", "Tokens and cost", "Messages", "Merges", "Decisions"]) {
    check(text.includes(part), "the page has its part " + part);
  }
  await tab.setViewport({ width: 420, height: 900 });
  await tab.goto("file://" + page, { waitUntil: "load" });
  const wide = await tab.evaluate(() => document.documentElement.scrollWidth);
  await tab.screenshot({ path: `${shots}-narrow.png`, fullPage: true });
  check(wide <= 420, `420 px wide without a sideways scroll (the page is ${wide} px)`);
} catch (e) {
  checks.fail(e);
}
if (browser) await browser.close();
if (checks.failures === 0 && !args.shots) fs.rmSync(ws, { recursive: true, force: true });
else console.log("kept " + ws);
console.log(checks.failures ? checks.failures + " failed" : "all passed");
process.exit(checks.failures ? 1 : 0);
