// Claude Code's own agent team, watched and steered from mates (DESIGN
// §24), against the real CLI the scripts pin: Claude Code runs in tmux with
// agent teams on and `mates mock-llm` as its model, scripted so that the
// lead puts two tasks on its board and spawns alpha and beta, alpha takes
// task #1, and the two message each other. Then:
//   - `mates claude list` and `mates claude status --json` show the
//     members, tasks and messages as Claude Code wrote them, with each
//     member's tokens and cost;
//   - a task made with `mates claude task` is seen by the team (beta's
//     TaskList, as the mock records it);
//   - a message sent with `mates claude send` is in beta's next request;
//   - the page (`mates dashboard --claude`, headless Chromium) shows the
//     roster, the board and the messages, and sends a member a message
//     that reaches it.
// With --fixtures DIR, the run's files are copied there, scrubbed of its
// paths (tests/fixtures/claude_team/ came from such a run).
//   node claude_team.mjs --mates BIN --claude BIN --modules DIR [--shots PREFIX] [--fixtures DIR]
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { options, browserParts, Checks } from "./common.mjs";

const args = options();
if (args.claude) args.claude = path.resolve(args.claude);  // the pane starts in another folder
if (!args.claude || !fs.existsSync(args.claude)) {
  console.log("SKIPPED: the Claude Code CLI is not at " + args.claude + " (./scripts/test installs it with npm)");
  process.exit(77);
}
if (spawnSync("tmux", ["-V"]).status !== 0) { console.log("SKIPPED: no tmux"); process.exit(77); }
const { chromium, puppeteer } = browserParts(args);

const checks = new Checks();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mates-ccteam-"));
const home = path.join(dir, "home"), work = path.join(dir, "work"), claudeHome = path.join(home, ".claude");
fs.mkdirSync(home);
fs.mkdirSync(work);
const key = "sk-test-claude-team-0123456789abcdef";
const socket = "mates-ccteam-" + process.pid;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Polls `look` (every 50 ms, up to `ms`) until it gives something.
async function until(look, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = look();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(50);
  }
}
const mates = (...a) => {
  const r = spawnSync(args.mates, a, { encoding: "utf8", timeout: 60000, env: { ...process.env, HOME: home } });
  return { code: r.status, out: r.stdout || "", err: r.stderr || "" };
};
const status = (team) => {
  const r = mates("claude", "status", team, "--json", "--home", claudeHome);
  try { return r.code === 0 ? JSON.parse(r.out) : null; } catch { return null; }
};
// Every message of the team, as the same store's log has it.
const log = (team) => {
  const r = mates("--store", "claude:" + claudeHome, "log", "--team", team, "--json");
  return r.code !== 0 ? [] : r.out.split("\n").filter(Boolean).map((l) => JSON.parse(l));
};
// The processes of this run's Claude Code (their HOME is ours).
const ours = () => fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((p) => {
  try { return fs.readFileSync(`/proc/${p}/environ`, "latin1").split("\0").includes("HOME=" + home); } catch { return false; }
});
const record = () => { try { return fs.readFileSync(path.join(dir, "rec.jsonl"), "utf8"); } catch { return ""; } };

// The model: each rule fires once, in order, matched on the newest user
// turn. A message's words are in its sender's tool result too: a rule for
// its recipient names the tag Claude Code delivers it in.
fs.writeFileSync(path.join(dir, "s.yaml"), `rules:
  - {when: "Write the title in the language", once: false, reply: [{type: text, text: '{"title": "Team start"}'}]}
  - when: "please start the team"
    reply:
      - {type: tool_use, name: TaskCreate, input: {subject: "Parse the input", description: "Write the parser"}}
      - {type: tool_use, name: TaskCreate, input: {subject: "Test the parser", description: "Write its tests"}}
      - {type: tool_use, name: Agent, input: {description: "Alpha coder", name: alpha, prompt: "You are alpha, a coder. Take task 1."}}
  # beta once alpha is on the team: spawned together, beta's greeting could
  # reach Claude Code before alpha had joined ("no teammate named alpha").
  - when: "agent_id: alpha@"
    reply:
      - {type: tool_use, name: Agent, input: {description: "Beta tester", name: beta, prompt: "You are beta, a tester. Greet alpha."}}
  - when: "You are alpha, a coder"
    reply: [{type: tool_use, name: TaskUpdate, input: {taskId: "1", status: in_progress, owner: alpha}}]
  - when: "You are beta, a tester"
    reply: [{type: tool_use, name: SendMessage, input: {to: alpha, summary: "hello from beta", message: "Hello alpha, beta here. Send me code."}}]
  - when: '<teammate-message teammate_id="beta"[^>]*>\\s*Hello alpha'
    reply: [{type: tool_use, name: SendMessage, input: {to: beta, summary: "the parser", message: "Here is the parser, beta."}}]
  - when: "Please look at the board, from mates"
    reply: [{type: tool_use, name: TaskList, input: {}}]
  - when: "Review from mates"
    reply: [{type: text, text: "I see the review task."}]
default_reply:
  - {type: text, text: "ok, noted"}
`);
const mock = spawn(args.mates, ["mock-llm", "--scenario", path.join(dir, "s.yaml"), "--record", path.join(dir, "rec.jsonl"), "--quiet"],
                   { stdio: ["ignore", "pipe", "inherit"] });
const modelUrl = await new Promise((resolve, reject) => {
  let text = "";
  mock.stdout.on("data", (d) => { text += d; const m = text.match(/listening on (\S+)/); if (m) resolve(m[1]); });
  mock.on("exit", (c) => reject(new Error("mock-llm exited " + c)));
});
// Claude Code's first-run questions, answered as a person would have.
fs.writeFileSync(path.join(home, ".claude.json"), JSON.stringify({
  hasCompletedOnboarding: true, theme: "dark",
  projects: { [work]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
  customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] } }));
const env = ["HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color", "ANTHROPIC_BASE_URL=" + modelUrl,
  "ANTHROPIC_API_KEY=" + key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
  "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1"];
const tmux = (...a) => spawnSync("tmux", ["-L", socket, ...a], { encoding: "utf8" });
let browser, dashboard, team, page;
try {
  checks.check(tmux("new-session", "-d", "-s", "cc", "-x", "200", "-y", "50", "-c", work, "env", ...env, args.claude).status === 0,
               "Claude Code starts in tmux");
  // Claude Code makes its session's team as it starts.
  const listed = await until(() => {
    const r = mates("claude", "list", "--json", "--home", claudeHome);
    try { const l = JSON.parse(r.out); return l.length === 1 && l[0].running ? l : null; } catch { return null; }
  }, 60000, "Claude Code's team");
  team = listed[0].team;
  checks.check(/^session-[0-9a-f]{8}$/.test(team) && listed[0].lead === "team-lead", "mates claude list: " + team + ", running, led by team-lead");
  await until(() => /❯/.test(tmux("capture-pane", "-p", "-t", "cc").stdout), 60000, "Claude Code's prompt");
  tmux("send-keys", "-t", "cc", "please start the team", "Enter");

  // The team as Claude Code writes it: members, the board, the mail.
  const said = (ms, from, to, text) => ms.some((m) => m.sender === from && m.recipient === to && m.content.includes(text));
  let s = await until(() => {
    const s = status(team);
    return s && s.members.length === 3 && said(log(team), "alpha", "beta", "Here is the parser") &&
      s.members.every((m) => m.activity && m.activity.calls > 0) ? s : null;
  }, 90000, "the team's members, tasks and messages in status --json");
  checks.check(s.foreign === "Claude Code" && s.lead === "team-lead", "status --json: a Claude Code team led by team-lead");
  // In the order they joined: the lead, then whichever spawn finished first.
  const asJoined = (names) => JSON.stringify([names[0], ...names.slice(1).sort()]);
  checks.check(asJoined(s.members.map((m) => m.name)) === '["team-lead","alpha","beta"]', "its members: team-lead, alpha, beta");
  checks.check(s.members.every((m) => m.status !== "offline"), "all of them running");
  checks.check(s.members.every((m) => m.model === "claude-opus-4-8" || m.activity.model), "each member's model");
  checks.check(s.members.every((m) => m.activity.tokens.input + m.activity.tokens.cache_write + m.activity.tokens.cache_read > 0 &&
                                      typeof m.activity.cost_usd === "number" && m.activity.cost_usd > 0),
               "each member's tokens and cost, from mates' price table");
  s = await until(() => { const s = status(team); return s && s.board.in_progress === 1 ? s : null; }, 30000, "alpha's task");
  const taskOf = (s, id) => (s.members.find((m) => m.task && m.task.id === id) || {}).name;
  checks.check(s.board.pending === 1 && taskOf(s, 1) === "alpha", "the board: #1 in progress, alpha's; #2 pending");
  let messages = log(team);
  checks.check(said(messages, "team-lead", "alpha", "You are alpha") && said(messages, "beta", "alpha", "Send me code"),
               "the lead's and beta's messages to alpha, as delivered");
  // A teammate's idle notification is written when its turn ends, which
  // may be a moment after the messages above: waited for, not assumed.
  const idle = (ms) => ms.some((m) => m.protocol === "idle_notification" && m.recipient === "team-lead");
  if (!idle(messages)) await until(() => idle(log(team)), 30000, "an idle notification to team-lead");
  checks.check(idle(log(team)), "idle notifications, with their protocol type");
  checks.check(s.messages.length > 0 && s.messages.every((m) => typeof m.read === "boolean"), "status --json: messages with their read state");
  await until(() => log(team).every((m) => m.read === true), 30000, "every message read");
  checks.check(true, "every message read (delivered) in the end");

  // Steering: a task on the board, then a message to beta, who looks at it.
  const t = mates("claude", "task", team, "Review from mates", "--description", "Look it over", "--home", claudeHome);
  checks.check(t.code === 0 && /created #3/.test(t.out), "mates claude task: #3 " + (t.out + t.err).trim());
  const task = JSON.parse(fs.readFileSync(path.join(claudeHome, "tasks", team, "3.json"), "utf8"));
  checks.check(task.id === "3" && task.status === "pending" && Array.isArray(task.blockedBy), "written as Claude Code writes a task");
  const sent = mates("claude", "send", team, "beta", "Please look at the board, from mates", "--home", claudeHome);
  checks.check(sent.code === 0, "mates claude send: " + (sent.out + sent.err).trim());
  await until(() => record().includes("Please look at the board, from mates"), 60000, "beta's next request");
  checks.check(true, "the message is in beta's next request to the model");
  await until(() => /Review from mates/.test(record().split("Please look at the board, from mates").slice(1).join("")),
              60000, "the task in beta's TaskList");
  checks.check(true, "the task made with mates is in the team's TaskList");
  messages = await until(() => { const l = log(team); return said(l, "user", "beta", "Please look at the board") ? l : null; },
                         30000, "the message in the log");
  checks.check(messages.find((m) => m.content.includes("Please look at the board")).read === true, "and it shows read");

  // The page.
  dashboard = spawn(args.mates, ["dashboard", "--claude", team, "--claude-home", claudeHome], { stdio: ["ignore", "pipe", "inherit"] });
  const pageUrl = await new Promise((resolve, reject) => {
    let text = "";
    dashboard.stdout.on("data", (d) => { text += d; const m = text.match(/(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/); if (m) resolve(m[1]); });
    dashboard.on("exit", (c) => reject(new Error("dashboard exited " + c)));
  });
  browser = await puppeteer.launch({ executablePath: chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 900 });
  await page.goto(pageUrl, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await page.waitForSelector('#roster .member[data-name="beta"]', { timeout: 10000 });
  const pill = await page.$eval("#host-pill", (p) => p.textContent);
  checks.check(pill === "Claude Code team · running", "the page: " + pill);
  const roster = await page.$$eval("#roster .member", (ms) => ms.map((m) => m.dataset.name));
  checks.check(asJoined(roster) === '["team-lead","alpha","beta"]', "its roster: " + roster.join(", "));
  const costs = await page.$$eval("#roster .member .cost", (cs) => cs.map((c) => c.textContent));
  checks.check(costs.every((c) => /^\$\d/.test(c)), "each member's cost: " + costs.join(" "));
  const cards = await page.$$eval("#board .card", (cs) => cs.map((c) => c.textContent));
  checks.check(cards.length === 3 && cards.some((c) => c.includes("Review from mates")), "its board: " + cards.length + " tasks");
  await page.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")].some((m) => m.textContent.includes("Here is the parser")),
                             { timeout: 10000 });
  const types = await page.$$eval("#timeline .msg .type", (ts) => ts.map((t) => t.textContent));
  checks.check(types.includes("idle notification"), "messages with their protocol types");
  // Each is one line: its document as sent is folded away until opened.
  const folded = await page.$$eval("#timeline .msg .raw", (rs) => rs.map((r) => getComputedStyle(r).display));
  checks.check(folded.length > 0 && folded.every((d) => d === "none"), "protocol documents folded away: " + folded.join(","));
  if (args.shots) await page.screenshot({ path: args.shots + "-claude.png" });
  // A person writes to alpha on the page: in alpha's inbox, then read.
  await page.select("#composer-to", "alpha");
  await page.type("#composer-text", "Hello alpha, from the page");
  await page.click("#composer-send");
  await until(() => record().includes("Hello alpha, from the page"), 60000, "alpha's request with the page's message");
  checks.check(true, "a message sent on the page reaches alpha's next request");
  await page.waitForFunction(() => [...document.querySelectorAll("#timeline .msg")]
    .some((m) => m.textContent.includes("Hello alpha, from the page") && m.dataset.read === "true"), { timeout: 15000 });
  checks.check(true, "and shows on the page, read");
  if (args.shots) await page.screenshot({ path: args.shots + "-claude-sent.png" });

  // The run's files, for the readers' tests without Claude Code.
  if (args.fixtures) copyFixtures(team, args.fixtures);
} catch (e) {
  checks.fail(e);
  console.log(tmux("capture-pane", "-p", "-t", "cc").stdout);
  if (team) console.log(mates("claude", "status", team, "--home", claudeHome).out);
  if (page) console.log(await page.evaluate(() => JSON.stringify([...document.querySelectorAll("#timeline .msg")].map((m) => m.dataset.read + " " + m.textContent.slice(0, 80)))));
} finally {
  if (browser) await browser.close();
  if (dashboard) dashboard.kill("SIGTERM");
  tmux("kill-server");
  // Claude Code ends with its pane, writing its last files: waited for.
  try { await until(() => ours().length === 0, 20000, "Claude Code to end"); }
  catch (e) { for (const p of ours()) { try { process.kill(Number(p), "SIGKILL"); } catch { /* gone */ } } }
  mock.kill("SIGTERM");
}
if (checks.failures === 0) fs.rmSync(dir, { recursive: true, force: true });
else console.log("kept " + dir);
console.log(checks.failures ? checks.failures + " failed" : "all passed");
process.exit(checks.failures ? 1 : 0);

// Claude Code's files of `team`, with this run's paths and ids replaced.
function copyFixtures(team, out) {
  const scrub = (text) => text.split(work).join("/work/project").split(dir).join("/tmp/run")
    .split(work.replace(/[^a-zA-Z0-9]/g, "-")).join("-work-project");
  const copy = (from, to) => {
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
      const src = path.join(from, e.name), dst = path.join(to, scrub(e.name));
      if (e.isDirectory()) { if (!e.name.endsWith(".lock")) { fs.mkdirSync(dst, { recursive: true }); copy(src, dst); } continue; }
      let text = fs.readFileSync(src, "utf8");
      // The long listings Claude Code attaches to turns say nothing of the team.
      if (e.name.endsWith(".jsonl")) {
        text = text.split("\n").filter((l) => !l.includes('"type":"attachment"') && !l.includes('"type":"file-history-snapshot"')).join("\n");
      }
      fs.writeFileSync(dst, scrub(text));
    }
  };
  fs.rmSync(out, { recursive: true, force: true });
  for (const part of ["teams", "tasks", "projects"]) {
    fs.mkdirSync(path.join(out, part), { recursive: true });
    copy(path.join(claudeHome, part), path.join(out, part));
  }
  fs.rmSync(path.join(out, "teams", team, "inboxes"), { recursive: true, force: true });
  fs.mkdirSync(path.join(out, "teams", team, "inboxes"), { recursive: true });
  // Inboxes are empty once read; one message waits in the fixture's.
  fs.writeFileSync(path.join(out, "teams", team, "inboxes", "beta.json"), JSON.stringify([{
    from: "alpha", text: "Tests are next, beta.", summary: "tests next", timestamp: "2026-11-29T01:00:00.000Z",
    color: "blue", msgV: 1, msg_id: "00000000-0000-4000-8000-000000000001", type: "message", read: false, shiny: { new: "field" } }], null, 2));
  console.log("fixtures written to " + out);
}
