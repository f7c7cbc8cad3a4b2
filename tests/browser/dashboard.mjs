// The dashboard in a real browser (DESIGN §11): Debian's chromium, headless,
// driven by puppeteer-core over the DevTools protocol, against a team that
// `mates up` hosts with the scripted provider.
//
//   node tests/browser/dashboard.mjs --mates BIN --scenario FILE --modules DIR
//        [--pg-server BIN] [--chromium PATH] [--screenshot OUT.png]
//        [--screenshot-elsewhere OUT.png]
//
// With --pg-server (tests/support/pg_server_main.cc) the team is kept in a
// private PostgreSQL server (DESIGN §13), and a second workspace, standing
// for another machine, serves its read-only page (`mates dashboard
// --store`), which must show what the host's page did.
//
// Proves: the page renders the roster and board from live data; a `mates
// send` from another process shows in the timeline within 1 s; a message
// sent from the page reaches the lead (whose answer shows); a plan approved
// on the page is approved; a task created on the page is on the board; a
// teammate can be asked to stop; the team's spend and budget show; dark
// and light; no token → 401; a lead that made a team links its home page
// to that team's page and back.
// Exit 0 passed, 1 failed, 77 skipped (no chromium or puppeteer-core).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Checks, browserParts, clickLive, firstLine, launchBrowser, matesIn, options, startPgServer, upDashboard } from "./common.mjs";

const args = options();
const { chromium, puppeteer } = browserParts(args);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-browser-"));
const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "mates-browser-elsewhere-"));
const team = "dash";

// A private PostgreSQL server for the whole run, if asked for.
let pgServer = null, storeUrl = null;
if (args["pg-server"]) ({ child: pgServer, url: storeUrl } = await startPgServer(args["pg-server"]));
const env = storeUrl ? { ...process.env, MATES_STORE: storeUrl } : process.env;
const mates = matesIn(args.mates, ws, env);
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);

let browser = null, readOnly = null;
try {
  const up = mates("up", "--team", team, "--provider", "scripted", "--scenario", args.scenario,
                   "--budget-tokens", "5000000", "Start the team");
  const url = upDashboard(up);
  const base = url.slice(0, url.indexOf("/?token="));

  // No token, a wrong one: 401 (and no page).
  check((await fetch(base + "/")).status === 401, "GET / without the token is 401");
  check((await fetch(base + "/api/team?token=wrong")).status === 401, "a wrong token is 401");

  browser = await launchBrowser(puppeteer, chromium);
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 900 });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });
  page.on("dialog", (d) => d.accept());
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });

  // Roster and board from live data.
  await page.waitForSelector('#roster .member[data-name="lead"]', { timeout: 10000 });
  await page.waitForSelector('#roster .member[data-name="planner"]', { timeout: 15000 });
  check(true, "the roster shows the lead and the planner it started");
  // The team's spend beside it, held to its budget.
  await page.waitForFunction(() => /tokens · cost \? · budget \d+% of 5\.0M tokens\)$/.test(
    document.querySelector("#member-count").textContent), { timeout: 5000 });
  check(true, "the team's spend and its budget show (" + await page.$eval("#member-count", (e) => e.textContent) + ")");
  await page.waitForFunction(() => document.querySelector("#live").classList.contains("on"), { timeout: 5000 });
  check(true, "the page is live (event stream open)");
  // Where the agents' commands run (DESIGN §18): the default, said.
  await page.waitForFunction(() => (document.querySelector("#sandbox-mode .pill") || {}).textContent ===
    "sandbox: workspace", { timeout: 5000 });
  check(true, "the header says the agents run in the workspace sandbox");
  const created = mates("tasks", "create", "--team", team, "Parse the grammar");
  check(created.code === 0, "a task created from the CLI");
  // The idle planner claims it at once: whichever column, it is there.
  await page.waitForFunction(() => [...document.querySelectorAll("#board .column .card")]
    .some((c) => c.textContent.includes("Parse the grammar")), { timeout: 3000 });
  check(true, "it shows on the board");

  // A send from another process: in the timeline within 1 s.
  const t0 = Date.now();
  const sent = mates("send", "--team", team, "--to", "lead", "status of the parser?");
  const seen = page.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")]
    .some((m) => m.textContent.includes("status of the parser?")), { timeout: 5000, polling: "mutation" });
  await seen;
  const latency = Date.now() - t0;
  const bound = Number(args["latency-ms"] || 1000);
  check(sent.code === 0 && latency < bound, "a mates send shows in the timeline in " + latency + " ms (< " + bound + ")");

  // Sending from the page, as user: the lead answers.
  await page.select("#composer-to", "lead");
  await page.type("#composer-text", "ping page");
  await clickLive(page, "#composer-send");
  await page.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")]
    .some((m) => m.textContent.includes("pong page")), { timeout: 10000 });
  check(true, "a message sent from the page reached the lead, whose answer shows");
  // The answer can be drawn before the message it answers (each comes as
  // its own event): wait for it rather than look once.
  const fromUser = await page.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")]
    .some((m) => m.textContent.includes("user") && m.textContent.includes("ping page")), { timeout: 5000, polling: "mutation" })
    .then(() => true, () => false);
  check(fromUser, "the page's message went out as user");

  // The planner's plan, approved on the page.
  await page.waitForSelector("#plans .plan .approve", { timeout: 30000 });
  // A page whose team's answer comes after the requests' (held back here;
  // under load it happened by itself): the plan drawn before the page knew
  // it may write gets its buttons once it knows.
  const slow = await browser.newPage();
  await slow.setRequestInterception(true);
  slow.on("request", (r) => {
    if (new URL(r.url()).pathname === "/api/team") setTimeout(() => r.continue().catch(() => {}), 800);
    else r.continue().catch(() => {});
  });
  await slow.goto(url, { waitUntil: "domcontentloaded" });
  const buttons = await slow.waitForSelector("#plans .plan .approve", { timeout: 10000 }).then(() => true, () => false);
  check(buttons, "a plan drawn before the team was known gets its buttons once it is");
  await slow.close();
  const rid = await page.$eval("#plans .plan", (p) => p.dataset.id);
  // The page draws its plans again whenever requests or merges change: here
  // in the middle of the feedback, which must keep what was typed and the
  // keys that follow.
  await page.type("#plans .plan .feedback", "looks");
  await page.evaluate(() => renderPlans());
  await page.keyboard.type(" right");
  await clickLive(page, "#plans .plan .approve");
  await page.waitForFunction(() => !document.querySelector("#plans .plan"), { timeout: 5000 });
  const reqs = await (await fetch(base + "/api/requests?token=" + url.split("token=")[1])).json();
  check(reqs.requests.some((r) => r.request_id === rid && r.status === "approved"), "the plan " + rid + " is approved");
  const answered = matesIn(args.mates, storeUrl ? elsewhere : ws, env)("log", "--team", team, "--json").out;
  check(/"feedback":"looks right[ "]/.test(answered), "with the feedback typed across a redraw of the plans: " +
        (answered.match(/"feedback":"[^"]*"/) || ["none"])[0]);
  await page.waitForFunction(() => [...document.querySelectorAll('#timeline .msg[data-type="plan_approval_response"]')].length > 0, { timeout: 5000 });
  check(true, "the approval shows in the timeline");

  // A task from the page's dialog, blocked by the first.
  await clickLive(page, "#new-task");
  await page.waitForSelector("#task-dialog[open]", { timeout: 5000 });
  await page.type("#task-subject", "Test the parser");
  await page.type("#task-blocked", "1");
  await clickLive(page, "#task-create");
  await page.waitForFunction(() => [...document.querySelectorAll("#board .card")]
    .some((c) => c.textContent.includes("Test the parser") && c.textContent.includes("blocked by #1")), { timeout: 5000 });
  check(true, "a task created on the page shows, blocked by #1");
  const listed = matesIn(args.mates, storeUrl ? elsewhere : ws, env)("tasks", "list", "--team", team);
  check(listed.out.includes("Test the parser"), storeUrl ? "and the board in the database has it, for every machine"
                                                         : "and the board on disk has it");

  // The dependency graph and a transcript.
  await clickLive(page, '.tab[data-tab="graph"]');
  const edges = await page.$$eval("#graph path.edge", (e) => e.length);
  check(edges === 1, "the dependency graph draws the one dependency (" + edges + ")");
  await clickLive(page, '#roster .member[data-name="lead"]');
  await page.waitForFunction(() => document.querySelectorAll("#transcript .turn").length > 0, { timeout: 5000 });
  check(true, "the lead's transcript shows");

  // Dark and light.
  const theme0 = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.click("#theme");
  const theme1 = await page.evaluate(() => document.documentElement.dataset.theme);
  check(theme0 !== theme1 && ["dark", "light"].includes(theme1), "the theme switches (" + theme0 + " → " + theme1 + ")");
  if (theme1 !== "dark") await page.click("#theme");

  // Asking the planner to stop.
  await clickLive(page, '.tab[data-tab="board"]');
  await clickLive(page, '#roster .member[data-name="planner"] .stop');
  await page.waitForFunction(() => [...document.querySelectorAll('#timeline .msg[data-type="shutdown_request"]')].length > 0, { timeout: 5000 });
  check(true, "the planner was asked to stop (a shutdown request shows)");

  if (args.screenshot) {
    await page.screenshot({ path: args.screenshot });
    console.log("screenshot: " + args.screenshot);
  }

  if (storeUrl) {
    // Another machine: its own workspace, nothing but the database shared.
    readOnly = spawn(args.mates, ["--workspace", elsewhere, "dashboard", "--team", team],
                     { stdio: ["ignore", "pipe", "inherit"], env });
    const line = await firstLine(readOnly, 20000);
    const roUrl = ((line || "").match(/read-only: (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/) || [])[1];
    if (!roUrl) throw new Error("no read-only dashboard URL in: " + line);
    const other = await browser.newPage();
    await other.setViewport({ width: 1600, height: 900 });
    other.on("pageerror", (e) => pageErrors.push("elsewhere: " + e.message));
    await other.goto(roUrl, { waitUntil: "domcontentloaded" });
    await other.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
    await other.waitForSelector('#roster .member[data-name="planner"]', { timeout: 10000 });
    await other.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")]
      .some((m) => m.textContent.includes("pong page")), { timeout: 10000 });
    check(true, "another machine's page shows the roster and the messages");
    const pill = await other.$eval("#host-pill", (e) => e.textContent);
    check(pill.includes("hosted on another machine") && pill.includes("read-only"), "its header says the lead is hosted on another machine, read-only (" + pill + ")");
    await other.waitForFunction(() => [...document.querySelectorAll("#board .card")]
      .some((c) => c.textContent.includes("Test the parser")), { timeout: 5000 });
    check(true, "and the board the host's page added to");
    // Live there too: a send from a third workspace shows within the bound.
    const t1 = Date.now();
    const third = fs.mkdtempSync(path.join(os.tmpdir(), "mates-browser-third-"));
    const s2 = matesIn(args.mates, third, env)("send", "--team", team, "--to", "lead", "hello from a third machine");
    fs.rmSync(third, { recursive: true, force: true });
    await other.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")]
      .some((m) => m.textContent.includes("hello from a third machine")), { timeout: 5000, polling: "mutation" });
    const l2 = Date.now() - t1;
    check(s2.code === 0 && l2 < bound, "a send from a third machine shows there in " + l2 + " ms (< " + bound + ")");
    await clickLive(other, '#roster .member[data-name="planner"]');
    await other.waitForFunction(() => document.querySelectorAll("#transcript .turn").length > 0, { timeout: 5000 });
    check(true, "the planner's transcript shows there (its journal's copy)");
    const composer = await other.$eval("#composer-send", (b) => b.disabled);
    check(composer, "its composer is off (read-only)");
    if (args["screenshot-elsewhere"]) {
      await other.screenshot({ path: args["screenshot-elsewhere"] });
      console.log("screenshot: " + args["screenshot-elsewhere"]);
    }
  }

  // A hosted lead that makes a team of its own (tests/scenarios/
  // team_hosted_moves.yaml): the page `up` printed links to that team's
  // page, and that page shows it, with a link back.
  const moves = mates("up", "--team", "mover", "--provider", "scripted", "--scenario",
                      path.join(path.dirname(args.scenario), "team_hosted_moves.yaml"), "Make a team");
  if (moves.code !== 0) throw new Error("mates up of team mover failed: " + moves.out + moves.err);
  const moverUrl = (moves.out.match(/dashboard (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/) || [])[1];
  const mover = await browser.newPage();
  mover.on("pageerror", (e) => pageErrors.push(e.message));
  await mover.goto(moverUrl, { waitUntil: "domcontentloaded" });
  await mover.waitForFunction(() => document.querySelector("#also-hosted a") !== null &&
    document.querySelector("#also-hosted a").textContent.startsWith("also team made"), { timeout: 10000 });
  await mover.waitForFunction(() => document.querySelector('#roster .member[data-name="lead"]') !== null &&
    document.querySelector('#roster .member[data-name="lead"]').textContent.includes("working in team made"),
    { timeout: 10000 });
  check(true, "a lead that made a team: its home page says where it works and links to that team's page");
  await Promise.all([mover.waitForNavigation({ waitUntil: "domcontentloaded" }), mover.click("#also-hosted a")]);
  await mover.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await mover.waitForFunction(() => document.querySelector("#team-name").textContent === "made" &&
    document.querySelector("#also-hosted a") !== null &&
    document.querySelector("#also-hosted a").textContent.startsWith("also team mover"), { timeout: 10000 });
  check(true, "the link opens the made team's page, which links back");
  check(mates("down", "--team", "mover", "--timeout", "10").code === 0, "mates down of team mover");

  check(pageErrors.length === 0, "no script error on the page" + (pageErrors.length ? ": " + pageErrors.join("; ") : ""));
} catch (e) {
  checks.fail(e);
  // What the team did, for whoever reads the failure.
  for (const a of [["status", "--team", team], ["log", "--team", team], ["tasks", "list", "--team", team]]) {
    const r = mates(...a);
    console.log("--- mates " + a.join(" ") + "\n" + r.out + r.err);
  }
  const logs = fs.readdirSync(ws, { recursive: true }).filter((f) => String(f).endsWith("host.log"));
  for (const f of logs) console.log("--- " + f + " (last 80 lines)\n" + fs.readFileSync(path.join(ws, String(f)), "utf8").split("\n").slice(-80).join("\n"));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (readOnly) readOnly.kill("SIGTERM");
  const down = mates("down", "--team", team, "--timeout", "10");
  check(down.code === 0, "mates down");
  if (pgServer) pgServer.stdin.end();  // it stops its server and exits
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(elsewhere, { recursive: true, force: true });
}
console.log(checks.failures ? checks.failures + " check(s) failed" : "all checks passed");
process.exit(checks.failures ? 1 : 0);
