// What a task changed, on the page (DESIGN §27): Debian's chromium,
// headless, driven by puppeteer-core, against a worktree team `mates up`
// hosts in a real git repository with the scripted provider.
//
//   node tests/browser/diffs.mjs --mates BIN --modules DIR [--chromium PATH] [--shots PREFIX]
//
// Proves: a merge waiting for review is under "waiting for a decision",
// numbered as in the CLI, with its changes, and is merged from there;
// once merged, the task's detail
// shows what it changed (opened on demand: one block per file with its
// counts, added lines coloured), and so does its merge request's card;
// dark and light; no script error on the way.
// Exit 0 passed, 1 failed, 77 skipped (no chromium or puppeteer-core).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { Checks, actLive, browserParts, clickLive, launchBrowser, matesIn, options, until, upDashboard } from "./common.mjs";

const args = options();
const { chromium, puppeteer } = browserParts(args);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-diffs-"));
const team = "wt";
const mates = matesIn(args.mates, ws, process.env);
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);
const shots = args.shots || path.join(ws, "diffs");
const git = (...a) => spawnSync("git", ["-C", ws, "-c", "user.name=t", "-c", "user.email=t@t", ...a], { encoding: "utf8" });

let browser = null;
const pageErrors = [];
try {
  git("init", "-q", "-b", "main");
  fs.writeFileSync(path.join(ws, "README"), "the project\n");
  git("add", "README");
  git("commit", "-q", "-m", "initial");
  fs.writeFileSync(path.join(ws, "model.yaml"), `rules:
  - agent: lead
    when: "Go isolated one"
    reply: [{type: tool_use, name: Task, input: {team_name: wt, name: w1, isolation: worktree, prompt: "Work."}}]
  - {agent: lead, once: false, reply: [{type: text, text: "Noted."}]}
  - agent: "w*"
    when: "Task #(\\\\d+): write (\\\\S+) with (.*)"
    once: false
    reply:
      - {type: tool_use, name: bash, input: {command: "printf '%s\\\\n' '$3' > $2"}}
      - {type: tool_use, name: TaskUpdate, input: {task_id: "$1", status: completed}}
  - {agent: "w*", once: false, reply: [{type: text, text: "Done."}]}
`);
  const url = upDashboard(mates("up", "--team", team, "--isolation", "worktree", "--merge", "review",
                                "--provider", "scripted", "--scenario", path.join(ws, "model.yaml"), "Go isolated one"));
  mates("tasks", "--team", team, "create", "write notes.txt with alpha");
  const merges = () => { try { return JSON.parse(mates("merges", "--team", team, "list", "--json").out); } catch { return []; } };
  await until("the merge's review", () => merges().some((m) => m.status === "review"), 30000);

  browser = await launchBrowser(puppeteer, chromium);
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });

  // Waiting for review: under "waiting for a decision", numbered as in the
  // CLI, its changes a click away, merged from there.
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('#plans .merge-review[data-id="merge-1"]', { timeout: 10000 });
  const said = await page.$eval('#plans .merge-review[data-id="merge-1"] .who', (e) => e.textContent);
  check(said.startsWith("merge request 1 · #1 w1"), "the review waits for a decision, numbered as in the CLI: " + said);
  check(await page.$eval("#plan-count", (e) => e.textContent) === "(1)", "and is counted there");
  await actLive(page, "#plans .merge-review .diff-lazy", "open");
  await page.waitForSelector("#plans .merge-review .diff-file", { timeout: 10000 });
  check(await page.$eval("#plans .merge-review .diff-file summary", (e) => e.textContent) === "notes.txt +1 \u22120",
        "with its changes");
  // The page draws its decisions again whenever requests or merges change:
  // a diff opened stays open, its feedback typed stays.
  await page.type("#plans .merge-review .feedback", "fine");
  await page.evaluate(() => { renderPlans(); renderMerges(); });
  check(await page.$eval("#plans .merge-review", (r) => r.querySelector(".diff-lazy").open && r.querySelector(".diff-file") !== null &&
                         r.querySelector(".feedback").value === "fine"),
        "drawn again, the review keeps its diff open and its feedback");
  await page.screenshot({ path: shots + "-review.png" });
  await clickLive(page, "#plans .merge-review .approve");
  await until("the merge", () => merges().some((m) => m.status === "merged"), 30000);
  await page.waitForFunction(() => !document.querySelector("#plans .merge-review"), { timeout: 10000 });
  check(true, "merged from the page, it leaves the decisions");
  for (const theme of ["dark", "light"]) {
    await page.goto(url, { waitUntil: "domcontentloaded" });
    await page.evaluate((t) => localStorage.setItem("mates-theme", t), theme);
    await page.goto(url + "#task/1", { waitUntil: "domcontentloaded" });
    await page.reload({ waitUntil: "domcontentloaded" });  // the theme is read as the page loads
    await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
    check(await page.evaluate(() => document.documentElement.dataset.theme) === theme,
          theme + ": the page is in that theme");
    await page.waitForSelector("#task-detail .diff-lazy", { timeout: 10000 });
    await actLive(page, "#task-detail .diff-lazy", "open");
    await page.waitForSelector("#task-detail .diff-file", { timeout: 10000 }).catch(async (e) => {
      // What the block says instead (an error from the API, "Loading…"), for the failure's message.
      const said = await page.evaluate(() => {
        const d = document.querySelector("#task-detail");
        const box = document.querySelector("#task-detail .diff-lazy");
        return JSON.stringify({ detail: d ? d.textContent.slice(0, 400) : null, hidden: d ? d.hidden : null,
                                lazy: box ? { open: box.open, text: box.textContent.slice(0, 200) } : null,
                                hash: location.hash });
      }).catch(() => "(no page)");
      throw new Error(e.message + "; the page: " + said);
    });
    const file = await page.$eval("#task-detail .diff-file summary", (e) => e.textContent);
    check(file === "notes.txt +1 \u22120", theme + ": the task's detail shows its file and counts: " + file);
    const added = await page.$$eval("#task-detail .diff-file pre .add", (ls) => ls.map((l) => l.textContent));
    check(added.length === 1 && added[0] === "+alpha\n", theme + ": its added line, coloured: " + JSON.stringify(added));
    await page.screenshot({ path: shots + "-task-" + theme + ".png" });
  }
  // The merge request's card has the same.
  await page.goto(url + "#tab/merges", { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
  await page.waitForSelector('#merges .merge[data-status="merged"] .diff-lazy', { timeout: 10000 });
  await actLive(page, '#merges .merge[data-status="merged"] .diff-lazy', "open");
  await page.waitForSelector("#merges .diff-file", { timeout: 10000 });
  const merged = await page.$eval("#merges .diff-file summary", (e) => e.textContent);
  check(merged === "notes.txt +1 \u22120", "the merge request's card shows the same: " + merged);
  await page.$eval("#merges-panel", (e) => e.scrollIntoView());
  await page.screenshot({ path: shots + "-merge.png" });
  check(pageErrors.length === 0, "no script errors" + (pageErrors.length ? ": " + pageErrors.join(" | ") : ""));
} catch (e) {
  checks.fail(e);
} finally {
  await checks.finish({ browser, mates, team, model: null, ws });
}
