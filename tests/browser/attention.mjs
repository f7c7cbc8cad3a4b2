// What goes wrong, in plain sight, in a real browser (DESIGN §20): Debian's
// chromium, headless, driven by puppeteer-core, against a team `mates up`
// hosts with the Anthropic provider pointed at a real `mates mock-llm`.
//
//   node tests/browser/attention.mjs --mates BIN --modules DIR [--chromium PATH]
//        [--shots PREFIX]
//
// Proves: with the model server killed, the lead's card says `retrying`,
// then `error` with the reason, and a banner counts what needs attention
// (its hint as printed, its link to the agent); the server back and a
// message from the page, the error clears. A task's detail (description,
// owners and states with their times, the messages naming it) opens from
// its card and from its link (#task/N) after a reload, as do #agent/NAME
// and #tab/graph; the transcript draws frames as senders and tool calls
// with their results, with the agent's spend over time; at 480 px wide
// the board, the roster and the messages are all there, one under the
// other, nothing wider than the screen; no script error on the way.
// With --shots, the screenshots docs/ shows.
// Exit 0 passed, 1 failed, 77 skipped (no chromium or puppeteer-core).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Checks, browserParts, clickLive, launchBrowser, matesIn, options, startMockLlm, upDashboard } from "./common.mjs";

const args = options();
const { chromium, puppeteer } = browserParts(args);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-attention-"));
const team = "web";
const env = { ...process.env, ANTHROPIC_API_KEY: "sk-test-not-a-real-key" };
const mates = matesIn(args.mates, ws, env);
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);

// The model: one tool call when asked for the build, else a short answer.
fs.writeFileSync(path.join(ws, "model.json"), JSON.stringify({
  rules: [
    { agent: "lead", when: "Check the build", reply: [{ type: "tool_use", name: "bash", input: { command: "echo build ok; exit 3" } }] },
    { agent: "lead", when: "build ok", reply: [{ type: "text", text: "The build check exits 3: task #1 waits on it." }] },
  ],
  default_reply: [{ type: "text", text: "Noted." }],
}));
let model = null, port = 0;
// The model server, on the port it had before when started again.
async function startModel() {
  const started = await startMockLlm(args.mates, path.join(ws, "model.json"), port);
  model = started.child;
  port = started.port;
  return started.url;
}
function stopModel() {
  return new Promise((resolve) => { model.once("exit", resolve); model.kill("SIGKILL"); });
}

let browser = null;
const pageErrors = [];
async function shot(page, name) { if (args.shots) await page.screenshot({ path: args.shots + "-" + name + ".png" }); }
try {
  const modelUrl = await startModel();
  const up = mates("up", "--team", team, "--provider", "anthropic", "--base-url", modelUrl, "--sandbox", "off",
                   "Check the build");
  const url = upDashboard(up);
  // A board with a history: one task done, one in progress, one whose owner is gone.
  mates("tasks", "--team", team, "create", "Check the build", "--description", "Run the build and say what fails.\nSee task #2.");
  mates("tasks", "--team", team, "create", "Fix the parser", "--blocked-by", "1");
  mates("tasks", "--team", team, "create", "Write the release notes");
  mates("tasks", "--team", team, "update", "1", "--owner", "lead", "--status", "in_progress");
  mates("tasks", "--team", team, "update", "3", "--owner", "ghost", "--status", "in_progress");
  mates("send", "--team", team, "--to", "lead", "Is task #1 done yet?");

  browser = await launchBrowser(puppeteer, chromium);
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 900 });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });
  await page.evaluateOnNewDocument((t) => localStorage.setItem("mates-theme", t), args.theme || "dark");
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await page.waitForFunction(() => (document.querySelector('#roster .member[data-name="lead"]') || {}).dataset?.state === "idle",
                             { timeout: 20000 });
  check(true, "the lead is idle after its first turns");

  // The orphaned task is news already.
  await page.waitForFunction(() => document.querySelector('#attention li[data-kind="orphaned_task"]'), { timeout: 5000 });
  const hint = await page.$eval('#attention li[data-kind="orphaned_task"] .hint', (e) => e.textContent);
  check(hint === 'mates tasks --team web update 3 --owner "" --status pending', "the orphaned task's hint, as printed: " + hint);

  // The model server gone: retrying, then error, on the card and in the banner.
  await stopModel();
  await page.select("#composer-to", "lead");
  await page.type("#composer-text", "Are you there?");
  await clickLive(page, "#composer-send");
  // The card's text as first drawn in that state, read in the same step (a redraw may come between two).
  const retrying = await (await page.waitForFunction(() => {
    const card = document.querySelector('#roster .member[data-name="lead"]');
    return card.dataset.state === "retrying" && card.querySelector(".doing").textContent;
  }, { timeout: 10000, polling: "mutation" })).jsonValue();
  check(/retrying (in \d+ s|now) \(attempt \d of 5\)/.test(retrying), "the lead's card says it is retrying: " + retrying);
  await page.waitForFunction(() => document.querySelector('#roster .member[data-name="lead"]').dataset.state === "error",
                             { timeout: 40000 });
  const error = await page.$eval('#roster .member[data-name="lead"] .doing', (e) => e.textContent);
  check(/gave up after 5 attempts/.test(error) && /next message/.test(error), "then error, with the reason and what comes next: " + error);
  await page.waitForFunction(() => document.querySelector('#attention li[data-kind="turn_failed"]'), { timeout: 5000 });
  const banner = await page.$eval("#attention .attention-head", (e) => e.textContent);
  check(/need attention/.test(banner) && /1 failed turn/.test(banner) && /1 orphaned task/.test(banner),
        "the banner counts what needs attention: " + banner);
  await clickLive(page, "#attention .attention-head .btn");
  const failedHint = await page.$eval('#attention li[data-kind="turn_failed"] .hint', (e) => e.textContent);
  check(failedHint === 'mates send --team web --to lead "Go on."', "the failed turn's hint: " + failedHint);
  const link = await page.$eval('#attention li[data-kind="turn_failed"] .go', (e) => e.getAttribute("href"));
  check(link === "#agent/lead", "and its link goes to the agent");
  await shot(page, "attention");

  // The server back, a message from the page: the turn succeeds, the error clears.
  await startModel();
  await page.type("#composer-text", "Go on.");
  await clickLive(page, "#composer-send");
  await page.waitForFunction(() => document.querySelector('#roster .member[data-name="lead"]').dataset.state === "idle" &&
    !document.querySelector('#attention li[data-kind="turn_failed"]'), { timeout: 30000 });
  check(true, "the server back and a message later, the lead is idle and the failed turn is no longer news");

  // A task's detail from its card.
  await clickLive(page, '#board .card[data-id="1"]');
  await page.waitForFunction(() => document.querySelector("#task-detail").open &&
    document.querySelector("#task-detail .detail-head").textContent.includes("Check the build"), { timeout: 5000 });
  const detail = await page.$eval("#task-detail", (e) => e.textContent);
  check(detail.includes("Run the build and say what fails.") && /in progress/.test(detail) && detail.includes("lead"),
        "the detail shows its description, state and owner");
  const states = await page.$$eval("#task-detail .history li .pill", (ps) => ps.map((p) => p.textContent));
  check(states[0] === "pending" && states[1] === "in progress", "its owners and states, in order: " + states.join(", "));
  check(/pending \d+s/.test(detail), "the time it spent pending");
  check(detail.includes("Is task #1 done yet?"), "the messages that name it");
  check(await page.evaluate(() => location.hash) === "#task/1", "its link is in the address");
  await shot(page, "task");

  // Links survive a reload.
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const reopened = await page.waitForFunction(() => document.querySelector("#task-detail").open &&
    document.querySelector("#task-detail .detail-head").textContent.includes("#1"), { timeout: 5000 }).then(() => true, () => false);
  check(reopened, "#task/1 opens the task's detail after a reload");
  await clickLive(page, "#task-detail-close");
  await page.goto(url + "#tab/graph", { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  check(await page.$eval("#view-graph", (e) => e.classList.contains("active")), "#tab/graph opens the graph");
  await page.goto(url + "#agent/lead", { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await page.waitForFunction(() => document.querySelectorAll("#transcript .turn").length > 0, { timeout: 10000 });
  check(await page.$eval("#view-transcript", (e) => e.classList.contains("active")), "#agent/lead opens its transcript");

  // The transcript: frames as senders, tool calls with their results, no raw markup.
  const transcript = await page.$eval("#transcript", (e) => e.textContent);
  check(!transcript.includes("<teammate-message") && !transcript.includes("</teammate-message>"), "no frame markup shows raw");
  const senders = await page.$$eval("#transcript .frame.message .chip.sender", (cs) => cs.map((c) => c.textContent));
  check(senders.includes("user"), "messages are drawn as from their sender: " + [...new Set(senders)].join(", "));
  const tool = await page.$eval("#transcript .block-tool", (e) => ({ text: e.textContent, error: e.classList.contains("error") }))
    .catch(() => null);
  check(tool && tool.text.includes("bash") && tool.text.includes("build ok") && tool.error,
        "a tool call shows with its result, an error in red");
  await page.waitForSelector("#spend-chart svg polyline.tokens", { timeout: 5000 }).catch(() => {});
  check(await page.$("#spend-chart svg polyline.tokens") !== null, "the agent's spend over time is drawn");
  await shot(page, "tools");

  // 480 px: one column, nothing cut off.
  await page.setViewport({ width: 480, height: 900 });
  await page.goto(url + "#tab/board", { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  const layout = await page.evaluate(() => {
    const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return { w: r.width, h: r.height, l: r.left, r: r.right }; };
    return { board: box("#board"), roster: box("#roster"), timeline: box("#timeline"), scroll: document.documentElement.scrollWidth,
             cards: document.querySelectorAll("#board .card").length };
  });
  check(layout.board.h > 100 && layout.board.w > 300 && layout.cards >= 3, "at 480 px the board is there (" + JSON.stringify(layout.board) + ")");
  check(layout.roster.h > 50 && layout.timeline.h > 100, "and the roster and the messages");
  check(layout.scroll <= 480, "nothing is wider than the screen (" + layout.scroll + " px)");
  await page.screenshot({ path: args.shots ? args.shots + "-narrow.png" : path.join(ws, "narrow.png"), fullPage: true });

  check(pageErrors.length === 0, "no script errors" + (pageErrors.length ? ": " + pageErrors.join(" | ") : ""));
} catch (e) {
  checks.fail(e);
} finally {
  await checks.finish({ browser, mates, team, model, ws });
}
