// What the browser tests share: their options (--name value) and the
// browser parts, or a skip (exit 77) naming what is missing.
import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

export function options() {
  return Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []));
}

// Debian's chromium and puppeteer-core from DIR (scripts/setup-browser).
export function browserParts(args) {
  const chromium = args.chromium || "/usr/bin/chromium";
  if (!fs.existsSync(chromium)) { console.log("SKIPPED: no chromium at " + chromium + " (scripts/setup installs it)"); process.exit(77); }
  try { return { chromium, puppeteer: createRequire(path.resolve(args.modules) + "/")("puppeteer-core") }; }
  catch (e) { console.log("SKIPPED: puppeteer-core is not in " + args.modules + " (scripts/setup-browser): " + e.message); process.exit(77); }
}

// `mates --workspace DIR ARGS...` to its end: {code, out, err}.
export function matesIn(bin, dir, env) {
  return (...a) => {
    const r = spawnSync(bin, ["--workspace", dir, ...a], { encoding: "utf8", timeout: 60000, env });
    return { code: r.status, out: r.stdout || "", err: r.stderr || "" };
  };
}

// The checks of a test: each printed, the failures counted.
export class Checks {
  constructor() { this.failures = 0; }
  check(ok, what) {
    console.log((ok ? "ok   " : "FAIL ") + what);
    if (!ok) this.failures++;
  }
  // What threw, as a failure.
  fail(e) {
    console.log("FAIL " + (e && e.stack || e));
    this.failures++;
  }
  // The end of a test with a host and a mock model: the browser closed,
  // the team down, the model killed, the workspace removed if all passed
  // (kept to look at if not); exits 0 or 1.
  async finish({ browser, mates, team, model, ws }) {
    if (browser) await browser.close();
    mates("down", "--team", team, "--timeout", "10");
    if (model && model.exitCode === null) model.kill("SIGKILL");
    if (this.failures === 0) fs.rmSync(ws, { recursive: true, force: true });
    else console.log("kept " + ws);
    console.log(this.failures ? this.failures + " failed" : "all passed");
    process.exit(this.failures ? 1 : 0);
  }
}

// `mates mock-llm --scenario FILE [--port P] --quiet`: the process and its
// URL once it listens.
export function startMockLlm(bin, scenario, port) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["mock-llm", "--scenario", scenario, ...(port ? ["--port", String(port)] : []), "--quiet"],
                        { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (d) => {
      text += d;
      const m = text.match(/listening on (http:\/\/127\.0\.0\.1:(\d+))/);
      if (m) resolve({ child, url: m[1], port: Number(m[2]) });
    });
    child.on("exit", (c) => reject(new Error("mock-llm exited " + c)));
  });
}

// The dashboard `mates up` printed, from its output; throws if none.
export function upDashboard(up) {
  if (up.code !== 0) throw new Error("mates up failed: " + up.out + up.err);
  const url = (up.out.match(/dashboard (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/) || [])[1];
  if (!url) throw new Error("no dashboard URL in: " + up.out);
  return url;
}

// The first line a child prints, or null by the deadline (or at its end).
export function firstLine(child, ms) {
  return new Promise((resolve) => {
    let text = "";
    const timer = setTimeout(() => resolve(null), ms);
    child.stdout.on("data", (d) => {
      text += d;
      const nl = text.indexOf("\n");
      if (nl >= 0) { clearTimeout(timer); resolve(text.slice(0, nl)); }
    });
    child.on("exit", () => { clearTimeout(timer); resolve(null); });
  });
}

// A private PostgreSQL server (tests/support/pg_server_main.cc) for the
// whole run: {child, url}; skips (77) where none can be started. Closing
// the child's stdin stops it.
export async function startPgServer(bin) {
  const child = spawn(bin, [], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await firstLine(child, 60000);
  if (!line || !line.startsWith("url ")) {
    if (child.exitCode === 77) { console.log("SKIPPED: no PostgreSQL server here (scripts/setup installs it)"); process.exit(77); }
    console.log("FAIL the PostgreSQL server did not start (" + line + ", exit " + child.exitCode + ")");
    process.exit(1);
  }
  return { child, url: line.slice(4) };
}

// Headless chromium, as every browser test runs it.
export function launchBrowser(puppeteer, chromium) {
  return puppeteer.launch({
    executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars"],
  });
}

// Looks at `f` every `every` ms until it holds (for state no page event
// says: a process, a file); throws naming `what` after `ms`.
export async function until(what, f, ms, every = 50) {
  const end = Date.now() + ms;
  for (;;) {
    if (await f()) return;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, every));
  }
}

// Parts of the page that live updates redraw or move (the roster, the
// plans, a task's detail, everything under the attention banner, which
// comes and goes) are acted on in one step inside the page: puppeteer's
// click finds the element's point, then moves the mouse there, and its
// $eval finds the element, then acts on it in a second round trip; a redraw
// in between detaches it (a "Changes" block opened there stays closed in
// the page) or lands the click elsewhere. `act` is "click", "open" (a
// <details>) or "clear" (an input).
export async function actLive(page, selector, act) {
  await page.waitForSelector(selector, { timeout: 5000 });
  const done = await page.evaluate((sel, how) => {
    const e = document.querySelector(sel);
    if (!e) return false;
    if (how === "click") e.click();
    else if (how === "open") e.open = true;
    else if (how === "clear") e.value = "";
    else throw new Error("no such act: " + how);
    return true;
  }, selector, act);
  if (!done) throw new Error("nothing to " + act + " at " + selector);
}
export function clickLive(page, selector) { return actLive(page, selector, "click"); }
