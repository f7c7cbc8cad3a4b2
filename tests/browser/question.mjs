// An MCP server's question answered on the page (DESIGN §23), in a real
// browser: Debian's chromium, headless, driven by puppeteer-core, against
// a team `mates up` hosts with the Anthropic provider pointed at a real
// `mates mock-llm`, and the reference MCP server (server-everything, from
// npm) whose trigger-elicitation-request asks for its form of fifteen
// fields mid-call.
//
//   node tests/browser/question.mjs --mates BIN --modules DIR --servers DIR
//        [--chromium PATH] [--shots PREFIX]
//
// Proves: the question is in the banner and in "Waiting for a decision",
// as a form drawn from its schema (a text field, a checkbox, an email, a
// number with its bounds, a choice by title, a multiple choice); an answer
// that does not fit is refused with the store's reason, shown by the form;
// one that fits reaches the server (the lead's next turn quotes it), the
// defaults filling what was left empty; the form goes, nothing waits. A
// second question, declined on the page, is declined at the server. No
// script error on the way. Exit 0 passed, 1 failed, 77 skipped.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { actLive, browserParts, Checks, clickLive, launchBrowser, matesIn, options, startMockLlm, upDashboard } from "./common.mjs";

const args = options();
const server = path.resolve(args.servers || "", "mcp-server-everything");
if (!fs.existsSync(server)) { console.log("SKIPPED: no " + server + " (scripts/setup-mcp installs it)"); process.exit(77); }
const { chromium, puppeteer } = browserParts(args);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-question-"));
const team = "ask";
const env = { ...process.env, ANTHROPIC_API_KEY: "sk-test-not-a-real-key", XDG_CONFIG_HOME: path.join(ws, ".config") };
const mates = matesIn(args.mates, ws, env);
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);

// The model: the tool that asks, twice; then what the server said.
fs.writeFileSync(path.join(ws, "model.json"), JSON.stringify({
  rules: [
    { agent: "lead", when: "Ask me", once: false, reply: [{ type: "tool_use", name: "mcp__everything__trigger-elicitation-request", input: {} }] },
    { agent: "lead", when: "User provided the requested information", reply: [{ type: "text", text: "The server has your answer." }] },
    { agent: "lead", when: "User declined", reply: [{ type: "text", text: "You declined." }] },
  ],
  default_reply: [{ type: "text", text: "Noted." }],
}));
fs.writeFileSync(path.join(ws, ".mcp.json"), JSON.stringify({ mcpServers: { everything: { command: server } } }));
fs.mkdirSync(path.join(ws, ".mates"), { recursive: true });
fs.writeFileSync(path.join(ws, ".mates", "config.yaml"), "mcp:\n  servers:\n    everything: {call_timeout: 5}\n");

let model = null;

let browser = null;
const pageErrors = [];
async function shot(page, name) { if (args.shots) await page.screenshot({ path: args.shots + "-" + name + ".png", fullPage: true }); }
try {
  const trusted = mates("trust");
  if (trusted.code !== 0) throw new Error("mates trust failed: " + trusted.err);
  const started = await startMockLlm(args.mates, path.join(ws, "model.json"));
  model = started.child;
  const modelUrl = started.url;
  const up = mates("up", "--team", team, "--provider", "anthropic", "--base-url", modelUrl, "--sandbox", "off", "Ask me");
  const url = upDashboard(up);
  browser = await launchBrowser(puppeteer, chromium);
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 1000 });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error" && !/status of 4\d\d/.test(m.text())) pageErrors.push(m.text()); });
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });

  // The question: in the banner, and as a form.
  await page.waitForSelector("#plans .question", { timeout: 30000 });
  await page.waitForFunction(() => document.querySelector('#attention li[data-kind="question_waiting"]'), { timeout: 5000 });
  const banner = await page.$eval('#attention li[data-kind="question_waiting"]', (e) => e.textContent);
  check(/MCP server everything asks you \(for lead\)/.test(banner) && /mates answer --team ask r-/.test(banner),
        "the banner names the server, whom it asks for, and the command: " + banner.slice(0, 160));
  const form = await page.$eval("#plans .question", (q) => ({
    who: q.querySelector(".who").textContent,
    message: q.querySelector("pre").textContent,
    fields: [...q.querySelectorAll(".field")].map((f) => f.dataset.field),
    kinds: Object.fromEntries([...q.querySelectorAll(".field")].map((f) => {
      const i = f.querySelector("input, select, .choices");
      return [f.dataset.field, i.tagName === "DIV" ? "choices" : i.tagName === "SELECT" ? "select" : i.type];
    })),
    intBounds: [q.querySelector('[data-field="integer"] input').min, q.querySelector('[data-field="integer"] input').max],
    heroes: [...q.querySelectorAll('[data-field="titledSingleSelectEnum"] option')].map((o) => o.textContent),
    required: q.querySelector('[data-field="name"] .label').textContent,
  }));
  check(form.who === "MCP server everything asks you, for lead", "who asks, for whom: " + form.who);
  check(form.message === "Please provide inputs for the following fields:", "the server's words: " + form.message);
  check(form.fields.length >= 13, "a field for each property (" + form.fields.length + ")");
  const want = { name: "text", check: "checkbox", email: "email", homepage: "url", birthdate: "date", integer: "number",
                 untitledSingleSelectEnum: "select", untitledMultipleSelectEnum: "choices", titledMultipleSelectEnum: "choices" };
  check(Object.entries(want).every(([k, v]) => form.kinds[k] === v), "each field by its type: " + JSON.stringify(form.kinds));
  check(form.intBounds[0] === "1" && form.intBounds[1] === "100", "a number with its bounds: " + form.intBounds);
  check(form.heroes.join(",") === "Superman,Green Lantern,Wonder Woman", "a choice by its titles: " + form.heroes);
  check(form.required === "String *", "a required field is marked: " + form.required);
  await shot(page, "form");

  // An answer that does not fit: refused, the reason on the form. (The
  // browser's own checks are off: the store is what is being tested.)
  await page.$eval("#plans .question form", (f) => { f.noValidate = true; });
  // The page draws its plans again whenever requests or merges change; one
  // such redraw in the middle of a field keeps the form and its focus.
  await page.type('#plans .question [data-field="name"] input', "An");
  await page.evaluate(() => renderPlans());
  await page.keyboard.type("n");
  const typed = await page.$eval('#plans .question [data-field="name"] input', (i) => i.value);
  check(typed === "Ann", "a redraw while a field is filled in loses nothing typed: " + typed);
  await page.type('#plans .question [data-field="integer"] input', "500");
  await clickLive(page, "#plans .question .answer");
  await page.waitForFunction(() => document.querySelector("#plans .question .error").textContent !== "", { timeout: 5000 });
  const refusal = await page.$eval("#plans .question .error", (e) => e.textContent);
  check(/field 'integer': 500 is above its maximum 100/.test(refusal), "a misfit is refused with the reason: " + refusal);
  await shot(page, "refused");

  // One that fits.
  await actLive(page, '#plans .question [data-field="integer"] input', "clear");
  await page.type('#plans .question [data-field="integer"] input', "7");
  await clickLive(page, '#plans .question [data-field="check"] input');
  await page.type('#plans .question [data-field="email"] input', "ann@example.com");
  await page.select('#plans .question [data-field="titledSingleSelectEnum"] select', "hero-3");
  await clickLive(page, '#plans .question [data-field="untitledMultipleSelectEnum"] input[value="Piano"]');
  await clickLive(page, "#plans .question .answer");
  await page.waitForFunction(() => !document.querySelector("#plans .question"), { timeout: 10000 });
  check(true, "answered: the form is gone");
  // The lead's next turn quotes the server's answer; its reply is in its
  // journal (not in the team's log: it speaks to nobody).
  const leadJournal = () => fs.readFileSync(path.join(ws, ".teams", team, "agents", "lead.jsonl"), "utf8");
  const deadline = Date.now() + 30000;
  let journal;
  while (!/The server has your answer/.test(journal = leadJournal()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const parts = { name: /- Name: Ann/, terms: /- Agreed to terms: true/, integer: /- Favorite Integer: 7/, hero: /hero-3/,
                  choices: /Guitar.*Piano|Piano.*Guitar/s, default: /dark and stormy night/ };
  const missing = Object.keys(parts).filter((k) => !parts[k].test(journal));
  check(missing.length === 0, "the server got the answer, with the defaults filled in" + (missing.length ? " (missing: " + missing.join(", ") + ")" : ""));
  const left = JSON.parse(mates("answer", "--team", team, "--json").out || "null");
  check(Array.isArray(left) && left.length === 0, "nothing waits any more");

  // Asked again, declined on the page.
  mates("send", "--team", team, "--to", "lead", "Ask me again");
  await page.waitForSelector("#plans .question", { timeout: 30000 });
  await clickLive(page, "#plans .question .decline");
  await page.waitForFunction(() => !document.querySelector("#plans .question"), { timeout: 10000 });
  const until = Date.now() + 30000;
  let after = "";
  while (!/You declined/.test(after = fs.readFileSync(path.join(ws, ".teams", team, "agents", "lead.jsonl"), "utf8")) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
  }
  check(/User declined to provide the requested information/.test(after), "a decline on the page reaches the server");
  await shot(page, "after");
  check(pageErrors.length === 0, "no script errors" + (pageErrors.length ? ": " + pageErrors.join(" | ") : ""));
} catch (e) {
  checks.fail(e);
} finally {
  await checks.finish({ browser, mates, team, model, ws });
}
