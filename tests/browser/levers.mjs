// The levers on a running team, on the page (DESIGN §27): Debian's
// chromium, headless, driven by puppeteer-core, against a team `mates up`
// hosts with the scripted provider.
//
//   node tests/browser/levers.mjs --mates BIN --scenario FILE --modules DIR
//        [--chromium PATH] [--shots PREFIX]
//
// Proves: a working teammate's card offers interrupt and stop, and
// `interrupt` (confirmed) ends its long tool call — the card goes idle,
// saying it was interrupted; `stop` (confirmed) stops it and its card then
// offers `restart`, which brings it back idle; a declined confirm does
// nothing; the lead offers no stop or restart; a teammate a circuit
// breaker paused is restarted from the attention banner's button; dark, light and 420 px
// wide, nothing cut off; no script error on the way. With --shots, the
// screenshots, else into the workspace.
// Exit 0 passed, 1 failed, 77 skipped (no chromium or puppeteer-core).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { Checks, browserParts, clickLive, launchBrowser, matesIn, options, until, upDashboard } from "./common.mjs";

const args = options();
const { chromium, puppeteer } = browserParts(args);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-levers-"));
const team = "levers";
const mates = matesIn(args.mates, ws, process.env);
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);
const shots = args.shots || path.join(ws, "levers");

// Whether the scenario's sleeper runs in this workspace.
function sleeperRuns() {
  const r = spawnSync("pgrep", ["-f", "^mates_levers_sleeper"], { encoding: "utf8" });
  return (r.stdout || "").split(/\s+/).filter(Boolean).some((pid) => {
    try { return fs.readlinkSync("/proc/" + pid + "/cwd") === fs.realpathSync(ws); } catch { return false; }
  });
}
// Presses a card's button as a person would after hovering the card: the
// roster is redrawn on every change, so the button is looked up and
// pressed in one step (a mouse click aims at where it was).
async function press(page, selector) {
  await page.waitForSelector(selector, { timeout: 10000 });
  await clickLive(page, selector);
}

// Hovers a card (its buttons show on hover); a card redrawn between the
// look-up and the move is looked up again.
async function hover(page, selector) {
  for (let i = 0; ; i++) {
    try { return await page.hover(selector); }
    catch (e) { if (i >= 20 || !/detached|not clickable/.test(e.message)) throw e; }
    await new Promise((r) => setTimeout(r, 50));
  }
}

let browser = null;
const pageErrors = [];
try {
  const up = mates("up", "--team", team, "--provider", "scripted", "--scenario", args.scenario, "Start a worker");
  const url = upDashboard(up);
  browser = await launchBrowser(puppeteer, chromium);
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 800 });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.evaluate(() => localStorage.setItem("mates-theme", "dark"));
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const card = '#roster .member[data-name="worker"]';
  const stateOf = (name) => page.$eval('#roster .member[data-name="' + name + '"]', (e) => e.dataset.state).catch(() => "");
  await page.waitForFunction((c) => (document.querySelector(c) || {}).dataset?.state === "idle", { timeout: 20000 }, card);
  const ops = async (name) => page.$$eval('#roster .member[data-name="' + name + '"] .lever', (bs) => bs.map((b) => b.dataset.op));
  check(JSON.stringify(await ops("worker")) === '["stop"]', "an idle teammate offers stop: " + await ops("worker"));
  check((await ops("lead")).length === 0, "the idle lead offers nothing");

  // A long tool call: interrupt and stop on its card.
  mates("tasks", "--team", team, "create", "slow job");
  await until("the sleeper", () => sleeperRuns(), 20000);
  await page.waitForFunction((c) => document.querySelector(c)?.dataset.status === "active", { timeout: 10000 }, card);
  check(JSON.stringify(await ops("worker")) === '["interrupt","stop"]', "a working teammate offers interrupt and stop: " + await ops("worker"));
  await hover(page, card);
  await page.screenshot({ path: shots + "-working.png" });

  // Declined: nothing happens.
  page.once("dialog", (d) => d.dismiss());
  await press(page, card + " .lever.interrupt");
  await new Promise((r) => setTimeout(r, 300));
  check(sleeperRuns(), "a declined interrupt leaves the tool running");

  page.once("dialog", (d) => { check(/Interrupt worker's turn now\?/.test(d.message()), "interrupt asks first: " + d.message()); d.accept(); });
  const t0 = Date.now();
  await press(page, card + " .lever.interrupt");
  await until("the sleeper's end", () => !sleeperRuns(), 5000);
  check(Date.now() - t0 < 1500, "the tool is killed at once (" + (Date.now() - t0) + " ms)");
  const said = await page.waitForFunction((c) => document.querySelector(c)?.dataset.state === "idle" &&
    /interrupted: waits for a message/.test(document.querySelector(c + " .doing").textContent), { timeout: 10000 }, card)
    .then(() => true, () => false);
  const doing = await page.$eval(card + " .doing", (e) => e.textContent);
  check(said, "the card goes idle, saying it was interrupted: " + doing);
  await hover(page, card);
  await page.screenshot({ path: shots + "-interrupted.png" });

  page.once("dialog", (d) => d.accept());
  await press(page, card + " .lever.stop");
  await page.waitForFunction((c) => document.querySelector(c)?.dataset.status === "shutdown", { timeout: 20000 }, card);
  check(JSON.stringify(await ops("worker")) === '["restart"]', "a stopped teammate offers restart: " + await ops("worker"));
  await hover(page, card);
  await page.screenshot({ path: shots + "-stopped.png" });
  page.once("dialog", (d) => { check(/Restart worker/.test(d.message()), "restart asks first"); d.accept(); });
  await press(page, card + " .lever.restart");
  await page.waitForFunction((c) => ["idle", "active"].includes(document.querySelector(c)?.dataset.status), { timeout: 20000 }, card);
  check(["idle", "active"].includes(await stateOf("worker")), "restart brings it back");
  check(!(await ops("lead")).includes("stop") && !(await ops("lead")).includes("restart"), "the lead never offers stop or restart");

  // A circuit breaker pauses it (the same failing command, five times):
  // the banner says so, and its fix is a button that restarts it.
  // (Restarted, it went back to its slow job: that ends first.)
  await until("the sleeper again", () => sleeperRuns(), 20000);
  mates("tasks", "--team", team, "update", "1", "--status", "completed");
  mates("interrupt", "--team", team, "worker");
  mates("tasks", "--team", team, "create", "fail forever");
  mates("send", "--team", team, "--to", "worker", "Carry on.");
  // Paused, the teammate stops a moment later: until then its item offers
  // "Go on." (a message lets a running one go on), then restart.
  const fix = '#attention li[data-kind="paused"] .fix-do[data-op="restart"]';
  const settled = await page.waitForSelector(fix, { timeout: 20000 }).then(() => true, () => false);
  const fixText = settled ? await page.$eval(fix, (b) => b.textContent)
                          : await page.$eval('#attention li[data-kind="paused"] .fix-do', (b) => b.textContent).catch(() => "none");
  check(fixText === "Restart worker", "the paused item's fix is a button: " + fixText);
  await clickLive(page, "#attention .attention-head .btn");  // details
  await page.screenshot({ path: shots + "-paused.png" });
  page.once("dialog", (d) => { check(/Restart worker/.test(d.message()), "the banner's restart asks first"); d.accept(); });
  await clickLive(page, fix);
  const cleared = await page.waitForFunction(() => !document.querySelector('#attention li[data-kind="paused"]'), { timeout: 20000 })
    .then(() => true, () => false);
  check(cleared, "restarted from the banner, the item goes");

  // Light, and 420 px wide: the buttons fit.
  await page.evaluate(() => { localStorage.setItem("mates-theme", "light"); });
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await hover(page, card);
  await page.screenshot({ path: shots + "-light.png" });
  await page.setViewport({ width: 420, height: 900 });
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await hover(page, card);
  const layout = await page.evaluate((c) => {
    const r = document.querySelector(c).getBoundingClientRect();
    const levers = [...document.querySelectorAll(c + " .lever")].map((b) => b.getBoundingClientRect());
    return { right: r.right, levers: levers.map((b) => b.right), scroll: document.documentElement.scrollWidth };
  }, card);
  check(layout.scroll <= 420, "at 420 px nothing is wider than the screen (" + layout.scroll + " px)");
  check(layout.levers.every((x) => x <= layout.right + 0.5), "and the card's buttons are inside it");
  await page.screenshot({ path: shots + "-narrow.png", fullPage: true });
  check(pageErrors.length === 0, "no script errors" + (pageErrors.length ? ": " + pageErrors.join(" | ") : ""));
} catch (e) {
  checks.fail(e);
} finally {
  await checks.finish({ browser, mates, team, model: null, ws });
}
