// The mates dashboard: one page, no framework, no network beyond its host.
// State comes from /api/*; /events says which part changed, and only that
// part is fetched again (one request in flight per part, one more queued).
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
document.getElementById("report").href = "/report?token=" + encodeURIComponent(token);
const liveMode = new URLSearchParams(location.search).get("live");
const forcePoll = liveMode === "poll";
// A still picture (`?live=still`): loaded once, no stream and no polling,
// so a headless browser's --virtual-time-budget sees the network go quiet
// and takes its picture of the page drawn (examples/tour.sh).
const still = liveMode === "still";
const $ = (id) => document.getElementById(id);
const S = {
  team: null, tasks: [], messages: [], msgIds: new Set(), msgNext: null, requests: [], merges: [],
  transcriptAgent: null, clockSkew: 0, readOnly: true, firstLoad: true, look: null,
  outage: null, detailTask: null, tasksLoaded: false,
};

// ---------- helpers ----------
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k instanceof Node ? k : String(k));
  return e;
}
async function api(path, body) {
  const opt = { headers: { Authorization: "Bearer " + token }, cache: "no-store" };
  if (body !== undefined) {
    opt.method = "POST";
    opt.headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body);
  }
  const r = await fetch(path, opt);
  let j = null;
  try { j = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) {
    const e = new Error((j && j.error) || ("HTTP " + r.status));
    e.status = r.status;
    throw e;
  }
  return j;
}
function duration(s) {
  s = Math.max(0, Math.floor(s));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h" + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + "m";
  return Math.floor(s / 86400) + "d" + Math.floor(s % 86400 / 3600) + "h";
}
function human(n) {
  if (n < 1000) return String(n);
  if (n < 1e6) return (n / 1e3).toFixed(n < 1e4 ? 1 : 0) + "k";
  return (n / 1e6).toFixed(n < 1e7 ? 1 : 0) + "M";
}
function serverNow() { return Date.now() / 1000 + S.clockSkew; }
function nameClass(name) {
  if (name === "user") return "c-user";
  const m = S.team && S.team.members.find((x) => x.name === name);
  if (m && m.color) return "c-" + m.color;
  return S.team && name === S.team.lead ? "c-lead" : "";
}
function clock(ts) {
  if (typeof ts === "number") return new Date(ts * 1000).toTimeString().slice(0, 8);
  if (typeof ts !== "string") return "";
  const i = ts.indexOf("T");
  return i < 0 ? ts.slice(0, 8) : ts.slice(i + 1, i + 9);
}
function fullTime(ts) { return typeof ts === "number" ? new Date(ts * 1000).toString() : String(ts || ""); }

// ---------- refresh scheduling ----------
const loaders = { team: loadTeam, tasks: loadTasks, messages: loadMessages, requests: loadRequests, merges: loadMerges, transcript: loadTranscript };
const busy = {}, again = {};
function refresh(kind) {
  if (busy[kind]) { again[kind] = true; return; }
  busy[kind] = true;
  loaders[kind]().catch((e) => console.warn(kind, e)).finally(() => {
    busy[kind] = false;
    if (again[kind]) { again[kind] = false; refresh(kind); }
  });
}
function refreshAll() { for (const k of Object.keys(loaders)) refresh(k); }

// ---------- team & roster ----------
async function loadTeam() {
  let t;
  try { t = await api("/api/team"); }
  catch (e) {
    // A store out of reach (503) is news on the page too (DESIGN §20).
    S.outage = e.status === 503 ? e.message : null;
    renderAttention();
    throw e;
  }
  S.outage = null;
  S.clockSkew = t.now - Date.now() / 1000;
  S.team = t;
  renderAttention();
  S.readOnly = !!t.read_only;
  renderHeader();
  renderRoster();
  renderMemberSelects();
  renderComposerState();
  // The other views draw names in their colours, and the plans and merges
  // buttons only a page that may write has. Their data can come before the
  // team's (each is its own request): drawn read-only and colourless then,
  // they are drawn again once the team is known, and when either changes.
  const look = S.readOnly + "|" + (t.foreign || "") + "|" + t.members.map((m) => m.name + ":" + (m.color || "")).join(",") +
    "|" + JSON.stringify(t.forecasts || []);
  if (look !== S.look) {
    S.look = look;
    renderBoard();
    renderTimeline();
    renderPlans();
    renderMerges();
  }
}
function renderHeader() {
  const t = S.team;
  $("team-name").textContent = t.team;
  document.title = t.team + " · mates";
  const pill = $("host-pill");
  if (t.foreign) {
    // Another system's team (DESIGN §24): it runs while its lead does.
    const runs = t.members.some((m) => m.role === "lead" && m.status !== "offline");
    pill.textContent = t.foreign + " team · " + (runs ? "running" : "ended");
    pill.className = "pill " + (runs ? "hosted" : "down");
  } else if (t.archived) { pill.textContent = "archived " + t.archived; pill.className = "pill down"; }
  else if (t.host) {
    pill.textContent = "hosted by pid " + t.host.pid + (t.host.mode ? " (mates " + t.host.mode + ")" : "") +
      (t.host.started_at ? " · " + duration(serverNow() - t.host.started_at) : "");
    pill.className = "pill hosted";
  } else if (t.store && t.members.some((m) => m.role === "lead" && m.status !== "offline")) {
    // A team in a shared store whose lead another machine hosts.
    pill.textContent = "hosted on another machine"; pill.className = "pill hosted";
  } else { pill.textContent = "not hosted"; pill.className = "pill down"; }
  if (t.store) pill.title = "kept in " + t.store;
  // The other team the same host hosts (the lead's home team, or the team it
  // made and works in), with a link to its page.
  // Made again only when they change: a link replaced under the pointer
  // loses the click that was on its way to it.
  const also = (!t.archived && t.host && t.host.also) || [];
  const alsoKey = JSON.stringify(also.map((a) => [a.team, a.dashboard || ""]));
  const alsoBox = $("also-hosted");
  if (alsoBox.dataset.key !== alsoKey) {
    alsoBox.dataset.key = alsoKey;
    alsoBox.replaceChildren(...also.map((a) => a.dashboard
      ? el("a", { class: "pill", href: a.dashboard, title: "This host hosts team " + a.team + " too: its page" },
          "also team " + a.team + " ↗")
      : el("span", { class: "pill" }, "also team " + a.team)));
  }
  // MCP servers of the workspace its host did not start (not trusted): said
  // once, with why on hover.
  const skipped = (!t.archived && t.host && t.host.mcp_skipped) || [];
  const skippedKey = JSON.stringify(skipped);
  const skippedBox = $("mcp-skipped");
  if (skippedBox.dataset.key !== skippedKey) {
    skippedBox.dataset.key = skippedKey;
    skippedBox.replaceChildren(...(skipped.length === 0 ? [] : [el("span", {
      class: "pill", title: skipped.map((s) => s.server + ": " + s.why).join("\n") },
      "mcp: " + skipped.length + " server" + (skipped.length === 1 ? "" : "s") + " skipped (not trusted)")]));
  }
  // Where the agents' commands run: said always, in warning colours when off.
  const sandbox = (!t.archived && t.host && t.host.sandbox) || "";
  const sandboxBox = $("sandbox-mode");
  if (sandboxBox.dataset.key !== sandbox) {
    sandboxBox.dataset.key = sandbox;
    sandboxBox.replaceChildren(...(sandbox === "" ? [] : [el("span", {
      class: "pill" + (sandbox === "off" ? " off" : ""),
      title: sandbox === "off" ? "--sandbox off: the agents' commands run as you, with all you can reach"
        : "The agents' commands write only their work root and tmp, read no secret, reach " +
          (sandbox === "strict" ? "no network" : "only the network the sandbox allows") },
      "sandbox: " + sandbox)]));
  }
  if (t.read_only && !t.archived) pill.textContent += " · read-only";
  const b = t.board || {};
  $("board-counts").replaceChildren(
    el("span", { class: "count" }, el("b", { text: b.pending || 0 }), " pending"),
    el("span", { class: "count" }, el("b", { text: b.in_progress || 0 }), " in progress"),
    el("span", { class: "count" }, el("b", { text: b.completed || 0 }), " done"));
}
function doingText(m) {
  const a = m.activity;
  if (!a) return ["—", null];
  if (S.team.archived) return [a.state === "stopped" ? doingTextStopped(a) : "archived", null];
  if (m.status === "offline") return ["host gone", null];
  const since = a.since ? serverNow() - a.since : null;
  switch (a.state) {
    case "thinking": return ["thinking", since];
    case "tool": return [a.doing || "a tool", since];
    case "idle": return [a.doing || "waiting for work", since];  // a lead working in another team says where
    case "stopped": return ["stopped" + (a.doing ? ": " + a.doing : ""), null];
    // Said by the host in full: which attempt, why, and what comes next.
    case "retrying": case "error": return [m.doing || a.state, since];
  }
  return [a.state, since];
}
function doingTextStopped(a) { return "stopped" + (a.doing ? ": " + a.doing : ""); }
// An archived team has no host: its members are shown as they ended.
function shownState(m) { return S.team.archived ? "stopped" : (m.state || m.status); }
function renderRoster() {
  const t = S.team;
  // The team's spend so far, beside the count (what `mates usage` adds up).
  let calls = 0, tokens = 0, usd = 0, unpriced = false;
  for (const m of t.members) {
    const a = m.activity;
    if (!a || !a.calls) continue;
    calls += a.calls;
    tokens += a.tokens.input + a.tokens.cache_read + a.tokens.cache_write + a.tokens.output;
    if (a.cost_usd === null) unpriced = true; else usd += a.cost_usd;
  }
  const dollars = (x) => "$" + x.toFixed(x < 1 ? 4 : 2);
  const spent = calls ? " · " + human(tokens) + " tokens · " + (unpriced && !usd ? "cost ?" : dollars(usd) + (unpriced ? " + ?" : "")) : "";
  // The team's budget: its members' spend, with what the session that made
  // the team spent before it and what its sessions spent in teams they made.
  const b = t.budget;
  let budget = "", over = false, why = "";
  if (b) {
    const none = { tokens: 0, usd: 0 };
    const before = b.spent_before || none, made = b.spent_in_teams_made || none;
    const parts = [];
    const share = (used, of) => { over = over || used >= of; return Math.round(100 * used / of) + "% of "; };
    if (b.tokens > 0) parts.push(share(tokens + before.tokens + made.tokens, b.tokens) + human(b.tokens) + " tokens");
    if (b.usd > 0) parts.push(share(usd + before.usd + made.usd, b.usd) + dollars(b.usd));
    budget = " · budget " + parts.join(", ");
    if (over) why += "The budget is spent: no agent calls the model. ";
    if (b.from) why += "It is shared with team " + b.from + "'s session, which made this team and spent " + human(before.tokens) + " tokens (" + dollars(before.usd) + ") before it. ";
    if (made.tokens) why += "It counts " + human(made.tokens) + " tokens (" + dollars(made.usd) + ") spent in teams this team's sessions made.";
  }
  const count = $("member-count");
  count.textContent = "(" + t.members.length + spent + budget + ")";
  count.classList.toggle("over-budget", over);
  count.title = why.trim();
  const rows = t.members.map((m) => {
    const [doing, since] = doingText(m);
    const a = m.activity;
    // An agent CLI in a pane: its spend as its own records say, or unknown.
    const unknown = a && a.usage_unknown;
    const tok = unknown ? "usage unknown" : a && a.calls ? human(a.tokens.input + a.tokens.cache_read + a.tokens.cache_write) + " in · " + human(a.tokens.output) + " out" : "";
    const cost = unknown ? "cost unknown" : a && a.calls ? (a.cost_usd === null ? "cost ?" : "$" + a.cost_usd.toFixed(a.cost_usd < 1 ? 4 : 2)) : "";
    const tokTitle = unknown ? a.usage_unknown : a && a.usage_from ? "as " + a.usage_from + " say" : "";
    const isLead = m.name === t.lead;
    const levers = memberLevers(t, m, isLead);
    const state = shownState(m);
    return el("div", { class: "member s-" + state + (S.transcriptAgent === m.name ? " selected" : ""),
      dataset: { name: m.name, status: m.status, state },
      title: m.name + ": " + state + (m.doing && state !== m.status ? " — " + m.doing : "") + " (click for its transcript)",
      onclick: () => { location.hash = "agent/" + encodeURIComponent(m.name); } },
      el("span", { class: "state " + shownState(m), title: shownState(m) }),
      el("div", { class: "name " + nameClass(m.name) }, m.name, el("span", { class: "role", text: isLead ? "lead" : shownState(m) }),
        // Another host took it over when its holder's lease ended (DESIGN §32).
        m.lease && m.lease.live && m.lease.taken_from ? el("span", { class: "taken-over",
          title: "the lease of " + m.lease.taken_from + " ended unrenewed; " + m.lease.holder + " took it over (fencing token " +
            m.lease.token + "): what the old host writes for it is refused" }, "taken over · " + m.lease.holder) : null),
      el("div", { class: "cost" }, cost || "\u00a0"),
      el("div", { class: "doing" }, doing, since !== null ? el("span", { class: "for", dataset: { since: a.since } }, " · " + duration(since)) : ""),
      el("div", { class: "task" }, el("span", { class: "t" }, m.task ? "#" + m.task.id + " " + m.task.subject : (tok ? "" : "no task")),
        m.unread ? el("span", { class: "unread", title: "waiting in its inbox, not read yet" }, m.unread + " unread") : null,
        el("span", { class: "tokens", title: tokTitle }, tok), levers));
  });
  $("roster").replaceChildren(...rows);
}
function tickDurations() {
  for (const e of document.querySelectorAll(".member .for")) e.textContent = " · " + duration(serverNow() - Number(e.dataset.since));
  for (const e of document.querySelectorAll("#attention .since")) e.textContent = duration(serverNow() - Number(e.dataset.since)) + " ago";
  if (S.team && S.team.host && S.team.host.started_at) renderHeader();
}
function renderMemberSelects() {
  const names = S.team.members.map((m) => m.name);
  const keep = (sel, opts) => {
    const v = sel.value;
    sel.replaceChildren(...opts.map(([value, label]) => el("option", { value }, label)));
    if (opts.some(([value]) => value === v)) sel.value = v;
  };
  keep($("composer-to"), [...names.map((n) => [n, n + (n === S.team.lead ? " (lead)" : "")]), ["*", "everyone (broadcast)"]]);
  keep($("filter-member"), [["", "all members"], ...names.map((n) => [n, n]), ["user", "user"]]);
  keep($("transcript-agent"), [["", "agent…"], ...names.map((n) => [n, n])]);
  if (S.transcriptAgent) $("transcript-agent").value = S.transcriptAgent;
}
// The levers on a member (DESIGN §27): interrupt a turn, stop, restart.
// The host's page has them all (S.team.levers); another has only `stop`.
const LEVERS = {
  interrupt: { danger: false, ask: (n) => "Interrupt " + n + "'s turn now? Its model call is cancelled and its tool killed; it waits for a message." },
  stop: { danger: true, ask: (n) => "Ask " + n + " to wrap up and stop?" },
  restart: { danger: false, ask: (n) => "Restart " + n + " with its conversation?" },
};
function memberLevers(t, m, isLead) {
  if (S.readOnly || t.foreign || m.backend !== "in-process") return null;
  const live = m.status === "active" || m.status === "idle";
  const ops = [];
  if (t.levers && m.status === "active") ops.push("interrupt");
  if (!isLead && live) ops.push("stop");
  if (t.levers && !isLead && m.status === "shutdown") ops.push("restart");
  if (!ops.length) return null;
  return el("span", { class: "levers" }, ...ops.map((op) => el("button", {
    class: "btn small lever " + op + (LEVERS[op].danger ? " danger" : ""), title: op + " " + m.name, dataset: { op },
    onclick: (e) => { e.stopPropagation(); pullLever(op, m.name); } }, op)));
}
async function pullLever(op, name) {
  if (!confirm(LEVERS[op].ask(name))) return;
  try { await api("/api/agents/" + encodeURIComponent(name) + "/" + op, {}); }
  catch (e) { alert("Could not " + op + " " + name + ": " + e.message); }
}

// ---------- board & graph ----------
async function loadTasks() {
  const j = await api("/api/tasks");
  const before = new Map(S.tasks.map((t) => [t.id, t.status + t.owner]));
  S.tasks = j.tasks;
  S.tasksLoaded = true;
  renderBoard(before);
  renderGraph();
  renderTaskDetail();
}
function taskCard(t, byId, changed) {
  const meta = [];
  if (t.owner) meta.push(el("span", { class: "chip owner " + nameClass(t.owner) }, t.owner));
  if (t.status === "pending") {
    const open = (t.blockedBy || []).filter((b) => !byId.get(b) || byId.get(b).status !== "completed");
    if (open.length) meta.push(el("span", { class: "chip blocked" }, "blocked by " + open.map((b) => "#" + b).join(" ")));
    else meta.push(el("span", { class: "chip ready" }, "ready"));
  }
  if ((t.blocks || []).length) meta.push(el("span", { class: "chip" }, "unblocks " + t.blocks.map((b) => "#" + b).join(" ")));
  if ((t.paths || []).length) meta.push(el("span", { class: "chip lease", title: "its file lease: another task on these paths waits" }, "lease " + t.paths.join(" ")));
  // Conflicts the host forecasts (DESIGN §30) while this task's work is in progress.
  const forecasts = ((S.team && S.team.forecasts) || []).filter((f) => (f.tasks || []).includes(t.id));
  for (const f of forecasts) {
    const other = f.target ? "the target" : f.members.filter((_, i) => f.tasks[i] !== t.id).join(", ");
    meta.push(el("span", { class: "chip forecast", title: "will not merge as it stands: " + f.files.join(", ") },
      "conflict forecast with " + other + ": " + f.files.slice(0, 3).join(", ") + (f.files.length > 3 ? ", …" : "")));
  }
  return el("div", { class: "card" + (t.status === "completed" ? " done" : "") + (changed ? " flash" : ""), dataset: { id: t.id },
    title: (t.description || t.subject) + "\n(click for its detail)", onclick: () => { location.hash = "task/" + t.id; } },
    el("div", { class: "subject" }, el("span", { class: "id", text: "#" + t.id }), t.subject),
    meta.length ? el("div", { class: "meta" }, meta) : null);
}
function renderBoard(before) {
  const byId = new Map(S.tasks.map((t) => [t.id, t]));
  const cols = [["pending", "Pending"], ["in_progress", "In progress"], ["completed", "Done"]].map(([st, label]) => {
    const ts = S.tasks.filter((t) => t.status === st);
    return el("div", { class: "column", dataset: { status: st } },
      el("h3", {}, label, el("span", { text: ts.length })),
      ts.length ? ts.map((t) => taskCard(t, byId, before && !S.firstLoad && before.get(t.id) !== t.status + t.owner))
        : el("div", { class: "empty" }, st === "pending" ? "Nothing waiting." : st === "in_progress" ? "Nobody working." : "Nothing done yet."));
  });
  $("board").replaceChildren(...cols);
}
function renderGraph() {
  const ns = "http://www.w3.org/2000/svg";
  const byId = new Map(S.tasks.map((t) => [t.id, t]));
  const level = new Map();
  const depth = (t, seen) => {
    if (level.has(t.id)) return level.get(t.id);
    if (seen.has(t.id)) return 0;  // a cycle cannot be made, but never loop
    seen.add(t.id);
    let d = 0;
    for (const b of t.blockedBy || []) if (byId.has(b)) d = Math.max(d, depth(byId.get(b), seen) + 1);
    level.set(t.id, d);
    return d;
  };
  S.tasks.forEach((t) => depth(t, new Set()));
  const layers = [];
  for (const t of S.tasks) (layers[level.get(t.id)] = layers[level.get(t.id)] || []).push(t);
  const W = 190, H = 46, GX = 48, GY = 14;
  const pos = new Map();
  let maxRows = 0;
  layers.forEach((ts, x) => { ts.sort((a, b) => a.id - b.id); ts.forEach((t, y) => pos.set(t.id, [12 + x * (W + GX), 12 + y * (H + GY)])); maxRows = Math.max(maxRows, ts.length); });
  const width = 24 + layers.length * (W + GX) - GX, height = 24 + maxRows * (H + GY) - GY;
  const svg = document.createElementNS(ns, "svg");
  // Shrinks to the panel when wider than it (never grows past 1:1).
  svg.setAttribute("viewBox", `0 0 ${Math.max(width, 10)} ${Math.max(height, 10)}`);
  svg.setAttribute("width", "100%");
  svg.style.maxWidth = Math.max(width, 10) + "px";
  const mk = (tag, attrs, text) => { const e = document.createElementNS(ns, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text !== undefined) e.textContent = text; return e; };
  const defs = mk("defs", {}); const marker = mk("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(mk("path", { d: "M0,0 L8,4 L0,8 z" })); defs.append(marker); svg.append(defs);
  for (const t of S.tasks) for (const b of t.blockedBy || []) {
    if (!pos.has(b)) continue;
    const [x1, y1] = pos.get(b), [x2, y2] = pos.get(t.id);
    const sx = x1 + W, sy = y1 + H / 2, ex = x2, ey = y2 + H / 2, mx = (sx + ex) / 2;
    svg.append(mk("path", { class: "edge" + (byId.get(b).status !== "completed" ? " open" : ""), d: `M${sx},${sy} C${mx},${sy} ${mx},${ey} ${ex},${ey}`, "marker-end": "url(#arrow)" }));
  }
  for (const t of S.tasks) {
    const [x, y] = pos.get(t.id);
    const g = mk("g", { class: "node " + t.status, transform: `translate(${x},${y})` });
    g.addEventListener("click", () => { location.hash = "task/" + t.id; });
    g.append(mk("title", {}, "#" + t.id + " " + t.subject + " (" + t.status + ")"));
    g.append(mk("rect", { width: W, height: H, rx: 7 }));
    const subj = t.subject.length > 24 ? t.subject.slice(0, 23) + "…" : t.subject;
    g.append(mk("text", { x: 10, y: 19 }, "#" + t.id + " " + subj));
    g.append(mk("text", { x: 10, y: 36, class: "sub" }, t.status.replace("_", " ") + (t.owner ? " · " + t.owner : "")));
    svg.append(g);
  }
  $("graph").replaceChildren(S.tasks.length ? svg : el("div", { class: "empty" }, "No tasks yet."));
}

// ---------- messages ----------
async function loadMessages() {
  const j = await api("/api/messages" + (S.msgNext === null ? "" : "?after=" + S.msgNext));
  S.msgNext = j.next;
  const fresh = j.messages.filter((m) => !S.msgIds.has(m.id));
  // A message shown unread comes again until it is read (a Claude Code
  // team's, DESIGN §24): its row is replaced then.
  for (const m of j.messages) {
    if (!S.msgIds.has(m.id) || m.read === undefined) continue;
    const i = S.messages.findIndex((x) => x.id === m.id);
    if (i < 0 || S.messages[i].read === m.read) continue;
    S.messages[i] = m;
    const row = $("timeline").querySelector('.msg[data-id="' + CSS.escape(m.id) + '"]');
    if (row) row.replaceWith(msgRow(m, false));
  }
  for (const m of fresh) { S.msgIds.add(m.id); S.messages.push(m); }
  if (S.messages.length > 3000) { S.messages.splice(0, S.messages.length - 3000); }
  if (fresh.length || S.firstLoad) renderTimeline(fresh);
  if (fresh.length) renderTaskDetail();
  if (j.more) again.messages = true;  // cut short: the rest at once
}
const msgTypes = ["message", "broadcast", "shutdown_request", "shutdown_response", "plan_approval_request", "plan_approval_response",
                  "elicitation_request", "elicitation_response"];
function msgMatches(m) {
  const who = $("filter-member").value, type = $("filter-type").value;
  if (who && m.sender !== who && m.recipient !== who && !(m.type === "broadcast" && who !== "user")) return false;
  return !type || m.type === type;
}
function msgRow(m, isNew) {
  let body = m.content || "", raw = null;
  if (m.type === "elicitation_request") {
    // An MCP server's question: its words, not its schema.
    try { const q = JSON.parse(body); body = "MCP server " + q.server + " asks: " + q.message; } catch (e) { /* shown as it is */ }
  } else if (m.type === "elicitation_response") {
    body = m.approve ? "answered: " + body : body;
  } else if (m.protocol && m.type === "message") {
    // Another system's protocol message (an idle notification, say): what
    // it says in words, then the document as it came, set apart.
    raw = body;
    body = m.summary || "";
  } else if (m.type.endsWith("_response")) {
    // The answer first; the content only when it says more than the feedback.
    const answer = (m.approve ? "approved" : "rejected") + (m.feedback ? " — " + m.feedback : "");
    body = body && body !== m.feedback ? answer + "\n" + body : answer;
  }
  const kind = m.protocol || m.type;
  const row = el("div", { class: "msg" + (isNew ? " new" : "") + (m.read === false ? " is-unread" : ""), dataset: { id: m.id, type: m.type, read: String(m.read !== false) } },
    el("div", { class: "head" },
      el("span", { class: "time", text: clock(m.timestamp), title: fullTime(m.timestamp) }),
      el("span", { class: "route" }, el("span", { class: nameClass(m.sender), text: m.sender }),
        el("span", { class: "arrow", text: " → " }), el("span", { class: nameClass(m.recipient || ""), text: m.recipient || "everyone" })),
      m.read === false ? el("span", { class: "unread", title: "in its inbox, not read yet", text: "unread" }) : null,
      el("span", { class: "type t-" + m.type, text: kind.replace(/_/g, " ") })),
    el("div", { class: "body" }, body, raw === null ? null : el("div", { class: "raw", text: raw })));
  // A protocol message is its one line; the document as it came is folded
  // away with the rest of a long message.
  if (raw !== null || body.length > 400 || body.split("\n").length > 5) {
    row.append(el("button", { class: "more", onclick: () => { row.classList.toggle("open"); } },
      raw !== null ? "as sent / less" : "more / less"));
  }
  return row;
}
function renderTimeline(fresh) {
  const box = $("timeline");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const shown = S.messages.filter(msgMatches);
  if (!fresh || S.firstLoad || box.dataset.filter !== $("filter-member").value + "|" + $("filter-type").value) {
    box.dataset.filter = $("filter-member").value + "|" + $("filter-type").value;
    box.replaceChildren(...(shown.length ? shown.map((m) => msgRow(m, false)) : [el("div", { class: "empty" }, "No messages yet.")]));
  } else {
    const add = fresh.filter(msgMatches);
    if (add.length) {
      const empty = box.querySelector(".empty");
      if (empty) empty.remove();
      box.append(...add.map((m) => msgRow(m, true)));
    }
    while (box.children.length > 3000) box.firstChild.remove();
  }
  $("msg-count").textContent = "(" + shown.length + ")";
  if (atBottom || S.firstLoad) box.scrollTop = box.scrollHeight;
}

// ---------- plans ----------
async function loadRequests() {
  const j = await api("/api/requests");
  S.requests = j.requests;
  renderPlans();
}
function renderPlans() {
  const pending = S.requests.filter((r) => (r.kind === "plan_approval" || r.kind === "elicitation") && r.status === "pending");
  // Merge requests waiting for review wait for a person too, numbered as
  // `mates merges` numbers them.
  const reviews = (S.merges || []).filter((m) => m.status === "review");
  const count = pending.length + reviews.length;
  $("plan-count").textContent = count ? "(" + count + ")" : "";
  if (!count) { $("plans").replaceChildren(el("div", { class: "empty" }, "Nothing waits for you.")); return; }
  const mergeReviews = reviews.map((m) => ["merge-" + m.id + "|" + cardLook(), () => el("div", { class: "plan merge-review", dataset: { id: "merge-" + m.id } },
    el("div", { class: "who" }, el("span", { text: "merge request " + m.id + " · " }), taskLink(m.task),
      el("span", { class: nameClass(m.owner), text: " " + m.owner }),
      el("span", { class: "muted", text: " — passed its check; merge it?" })),
    el("div", { class: "muted", text: m.subject }), lazyDiff("/api/merges/" + m.id + "/diff", "Changes"),
    ...(S.readOnly ? [] : mergeDecision(m)))]);
  const ro = String(Boolean(S.readOnly));
  redrawKeeping($("plans"), [...pending.map((r) => {
    // A question is kept across colour changes too: it is the one a person
    // may be halfway through.
    if (r.kind === "elicitation") return [r.request_id + "|" + ro, () => questionForm(r)];
    return [r.request_id + "|" + cardLook(), () => {
      const fb = el("input", { placeholder: "feedback (optional)", class: "feedback" });
      const err = el("div", { class: "error" });
      const decide = async (approve, btn) => {
        btn.disabled = true;
        try { await api("/api/requests/" + encodeURIComponent(r.request_id), { approve, feedback: fb.value }); refresh("requests"); }
        catch (e) { err.textContent = e.message; btn.disabled = false; }
      };
      return el("div", { class: "plan", dataset: { id: r.request_id } },
        el("div", { class: "who" }, el("span", { class: nameClass(r.requester), text: r.requester }), el("span", { class: "muted", text: " asks " + r.responder + " to approve" })),
        el("pre", { text: r.content }), S.readOnly || S.team?.foreign ? null : fb,
        S.readOnly || S.team?.foreign ? null : el("div", { class: "row" },
          el("button", { class: "btn small danger reject", onclick: (e) => decide(false, e.target) }, "Reject"),
          el("button", { class: "btn small primary approve", onclick: (e) => decide(true, e.target) }, "Approve")), err);
    }];
  }), ...mergeReviews]);
}

// What a card's drawing depends on besides its own record: whether the page
// may write, and the members' colours.
function cardLook() {
  return S.readOnly + "|" + (S.team?.foreign || "") + "|" + (S.team?.members || []).map((m) => m.name + ":" + (m.color || "")).join(",");
}
// Draws box's cards, each given as [key, make]: a card already drawn under
// its key is kept as it is (what a person typed in it, a diff they opened),
// and so is the focus: moved, an input loses it, and the keys typed next
// would go nowhere.
function redrawKeeping(box, cards) {
  const drawn = new Map([...box.children].filter((c) => c.dataset.key).map((c) => [c.dataset.key, c]));
  const focused = box.contains(document.activeElement) ? document.activeElement : null;
  const range = focused && typeof focused.selectionStart === "number"
    ? [focused.selectionStart, focused.selectionEnd, focused.selectionDirection] : null;
  box.replaceChildren(...cards.map(([key, make]) => {
    const card = drawn.get(key) || make();
    card.dataset.key = key;
    return card;
  }));
  if (focused && focused.isConnected && document.activeElement !== focused) {
    focused.focus({ preventScroll: true });
    if (range) focused.setSelectionRange(...range);
  }
}

// An MCP server's question (DESIGN §23) as a form drawn from its schema:
// each field by its type, its bounds and default; Answer sends what was
// filled in (the defaults fill the rest), Decline declines. The store
// checks the answer again and says what does not fit.
function questionForm(r) {
  let q;
  try { q = JSON.parse(r.content); } catch (e) { q = { server: "?", message: r.content, requestedSchema: {} }; }
  const schema = q.requestedSchema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const choicesOf = (p) => {
    const h = p.type === "array" ? (p.items || {}) : p;
    if (Array.isArray(h.enum)) return h.enum.map((v, i) => ({ value: v, title: (h.enumNames || [])[i] || v }));
    return (h.oneOf || h.anyOf || []).filter((c) => typeof c.const === "string").map((c) => ({ value: c.const, title: c.title || c.const }));
  };
  const fields = Object.entries(props).map(([name, p]) => {
    const label = (p.title || name) + (required.has(name) ? " *" : "");
    const choices = choicesOf(p);
    let input, read;
    if (p.type === "boolean") {
      input = el("input", { type: "checkbox", name, checked: p.default === true });
      read = () => input.checked;
    } else if (p.type === "array") {
      const given = new Set(Array.isArray(p.default) ? p.default : []);
      const boxes = choices.map((c) => el("label", { class: "choice" }, el("input", { type: "checkbox", value: c.value, checked: given.has(c.value) }), " " + c.title));
      input = el("div", { class: "choices", "data-name": name }, boxes);
      read = () => { const v = boxes.map((b) => b.firstChild).filter((b) => b.checked).map((b) => b.value); return v.length || required.has(name) ? v : undefined; };
    } else if (choices.length) {
      input = el("select", { name },
        required.has(name) || p.default !== undefined ? null : el("option", { value: "" }, "—"),
        choices.map((c) => el("option", { value: c.value, selected: c.value === p.default }, c.title)));
      read = () => input.value === "" ? undefined : input.value;
    } else if (p.type === "number" || p.type === "integer") {
      input = el("input", { type: "number", name, min: p.minimum, max: p.maximum, step: p.type === "integer" ? 1 : "any",
                            placeholder: p.default !== undefined ? String(p.default) : "" });
      read = () => input.value === "" ? undefined : Number(input.value);
    } else {
      const type = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" }[p.format] || "text";
      input = el("input", { type, name, minlength: p.minLength, maxlength: p.maxLength,
                            placeholder: p.default !== undefined ? String(p.default) : "" });
      read = () => {
        if (input.value === "") return undefined;
        return type === "datetime-local" ? new Date(input.value).toISOString() : input.value;
      };
    }
    return { name, read, row: el("label", { class: "field", dataset: { field: name } },
      el("span", { class: "label", text: label }), input,
      p.description ? el("span", { class: "muted help", text: p.description }) : null) };
  });
  const err = el("div", { class: "error" });
  const send = async (body, btn) => {
    btn.disabled = true;
    try { await api("/api/requests/" + encodeURIComponent(r.request_id), body); refresh("requests"); }
    catch (e) { err.textContent = e.message; btn.disabled = false; }
  };
  const answer = (btn) => {
    const content = {};
    for (const f of fields) { const v = f.read(); if (v !== undefined) content[f.name] = v; }
    send({ action: "accept", content }, btn);
  };
  return el("div", { class: "plan question", dataset: { id: r.request_id, ro: String(Boolean(S.readOnly)) } },
    el("div", { class: "who" }, el("span", { text: "MCP server " + q.server }),
       el("span", { class: "muted", text: " asks you, for " }), el("span", { class: nameClass(r.requester), text: r.requester })),
    el("pre", { text: q.message }),
    S.readOnly ? null : el("form", { class: "fields", onsubmit: (e) => { e.preventDefault(); answer(e.submitter || e.target.querySelector(".answer")); } },
      fields.map((f) => f.row),
      el("div", { class: "row" },
        el("button", { type: "button", class: "btn small danger decline", onclick: (e) => send({ action: "decline" }, e.target) }, "Decline"),
        el("button", { type: "submit", class: "btn small primary answer" }, "Answer"))),
    err);
}

// ---------- merges (worktree isolation) ----------
async function loadMerges() {
  const j = await api("/api/merges");
  S.merges = j.merges;
  renderMerges();
  renderPlans();
  renderTaskDetail();
}
function renderMerges() {
  const all = S.merges || [];
  $("merges-panel").hidden = all.length === 0;
  const open = all.filter((m) => m.status === "queued" || m.status === "checking" || m.status === "review");
  $("merge-count").textContent = all.length ? "(" + open.length + " open, " + all.length + " in all)" : "";
  // The open ones first, then the latest decided, newest first.
  const shown = open.concat(all.filter((m) => !open.includes(m)).reverse()).slice(0, 12);
  redrawKeeping($("merges"), shown.map((m) => [JSON.stringify([m.id, m.status, m.merged_commit, m.decided_by, m.feedback, m.files, m.output, cardLook()]), () => {
    const head = el("div", { class: "who" },
      el("span", { class: "mid", text: "#" + m.task }),
      el("span", { class: nameClass(m.owner), text: " " + m.owner }),
      el("span", { class: "pill m-" + m.status, text: m.status }));
    const detail = m.status === "merged" ? "onto " + m.target + " (" + (m.merged_commit || "").slice(0, 10) + ")"
      : m.status === "conflict" ? "conflict in " + m.files.join(", ")
      : m.status === "rejected" ? "rejected by " + m.decided_by + (m.feedback ? ": " + m.feedback : "")
      : m.status === "review" ? "passed its check; waits for a decision"
      : m.status === "failed" ? "not merged: back with " + m.owner
      : m.status === "checking" ? "being merged and checked" : "waiting in the queue";
    const box = el("div", { class: "merge", dataset: { id: String(m.id), status: m.status } }, head,
      el("div", { class: "muted", text: m.subject }), el("div", { class: "detail", text: detail }));
    if (m.status === "failed" && m.output) box.append(el("pre", { text: m.output.slice(-600) }));
    box.append(lazyDiff("/api/merges/" + m.id + "/diff", "Changes"));
    if (m.status === "review" && !S.readOnly) box.append(...mergeDecision(m));
    return box;
  }]));
}
// Feedback, Reject and Merge for a merge request waiting for review.
function mergeDecision(m) {
  const fb = el("input", { placeholder: "feedback (optional)", class: "feedback" });
  const err = el("div", { class: "error" });
  const decide = async (approve, btn) => {
    btn.disabled = true;
    try { await api("/api/merges/" + m.id, { approve, feedback: fb.value }); refresh("merges"); }
    catch (e) { err.textContent = e.message; btn.disabled = false; }
  };
  return [fb, el("div", { class: "row" },
    el("button", { class: "btn small danger reject", onclick: (e) => decide(false, e.target) }, "Reject"),
    el("button", { class: "btn small primary approve", onclick: (e) => decide(true, e.target) }, "Merge")), err];
}

// ---------- diffs (DESIGN §27) ----------
// A unified diff as one collapsible block per file, its lines coloured:
// added, removed, hunk heads; the file's counts in its summary.
function diffView(text) {
  if (!text) return el("div", { class: "muted" }, "No changes.");
  const files = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("diff --git ") || !files.length) files.push({ name: "", lines: [], add: 0, del: 0 });
    const f = files[files.length - 1];
    if (line.startsWith("diff --git ")) f.name = (line.match(/ b\/(.*)$/) || [, line.slice(11)])[1];
    if (line.startsWith("+") && !line.startsWith("+++")) f.add++;
    if (line.startsWith("-") && !line.startsWith("---")) f.del++;
    f.lines.push(line);
  }
  return el("div", { class: "diff" }, ...files.map((f) => el("details", { class: "diff-file", open: files.length <= 8 },
    el("summary", {}, el("span", { class: "path", text: f.name || "(diff)" }),
      el("span", { class: "add", text: " +" + f.add }), el("span", { class: "del", text: " \u2212" + f.del })),
    el("pre", {}, ...f.lines.map((l) => el("span", {
      class: l.startsWith("@@") ? "hunk" : l.startsWith("+++") || l.startsWith("---") || l.startsWith("diff ") || l.startsWith("index ") ? "meta"
        : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "" }, l + "\n"))))));
}
// The "Changes" blocks a person opened, by path: a task's detail and the
// cards are drawn again at each change, and an open block stays open
// there (its diff fetched again) instead of closing under the reader.
const openDiffs = new Set();
// A "Changes" block that fetches its diff from `path` when first opened.
function lazyDiff(path, title) {
  const box = el("details", { class: "diff-lazy", dataset: { path } }, el("summary", { text: title || "Changes" }));
  let loaded = false;
  box.addEventListener("toggle", async () => {
    if (!box.open) {
      openDiffs.delete(path);
      return;
    }
    openDiffs.add(path);
    if (loaded) return;
    loaded = true;
    const wait = el("div", { class: "muted", text: "Loading…" });
    box.append(wait);
    try { const j = await api(path); wait.replaceWith(diffView(j.diff)); }
    catch (e) { wait.replaceWith(el("div", { class: "muted error" }, e.message)); }
  });
  // Open before: recorded by its toggle, or (opened a moment ago, its
  // toggle event not yet run) the block this one replaces, still in the page.
  const wasOpen = openDiffs.has(path) ||
    [...document.querySelectorAll("details.diff-lazy[open]")].some((d) => d.dataset.path === path);
  if (wasOpen) box.open = true;  // its toggle fetches it
  return box;
}

// ---------- transcript ----------
function openTranscript(name) {
  if (name) setHash("agent/" + encodeURIComponent(name));
  S.transcriptAgent = name;
  $("transcript-agent").value = name;
  $("transcript-name").textContent = name ? "· " + name : "";
  showTab("transcript");
  if (S.team) renderRoster();
  $("transcript").replaceChildren(el("div", { class: "empty" }, "Loading…"));
  refresh("transcript");
}
async function loadTranscript() {
  if (!S.transcriptAgent) return;
  const name = S.transcriptAgent;
  let j;
  try { j = await api("/api/agents/" + encodeURIComponent(name) + "/transcript"); }
  catch (e) { $("transcript").replaceChildren(el("div", { class: "empty" }, e.message)); return; }
  if (name !== S.transcriptAgent) return;
  const box = $("view-transcript");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const u = j.usage || {};
  $("transcript-meta").textContent = j.total + " messages · " + j.calls + " model calls · " +
    human((u.input_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0)) + " in / " + human(u.output_tokens || 0) + " out" +
    (j.compactions ? " · " + j.compactions + " compactions" : "") + (j.total > j.messages.length ? " · last " + j.messages.length + " shown" : "") +
    (j.problem ? " · replay stopped at " + j.problem : "");
  renderSpend(j.series);
  const turns = transcriptTurns(j.messages, name);
  $("transcript").replaceChildren(...(turns.length ? turns : [el("div", { class: "empty" }, "Nothing yet.")]));
  if (atBottom) box.scrollTop = box.scrollHeight;
}

// What mates put before a model, drawn (DESIGN §20): its frames — only
// mates writes them (agent/conversation.cc, team/lead_news.cc,
// agent/subagents.cc, agent/context.cc), content cannot forge one (§19) —
// as who sent what; team updates folded; each tool call with its result.
const frameRe = /<teammate-message ([^>]*)>\n?([\s\S]*?)\n?<\/teammate-message>|<team-update>([\s\S]*?)<\/team-update>|<background-task ([^>]*)>\n?([\s\S]*?)\n?<\/background-task>|<conversation-summary ([^>]*)>\n?([\s\S]*?)\n?<\/conversation-summary>/g;
function frameAttrs(s) {
  const a = {};
  for (const m of s.matchAll(/([a-z_]+)="([^"]*)"/g)) a[m[1]] = m[2].replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&amp;/g, "&");
  return a;
}
function frameParts(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(frameRe)) {
    if (m.index > last) out.push({ kind: "text", text: text.slice(last, m.index) });
    if (m[1] !== undefined) out.push({ kind: "message", attrs: frameAttrs(m[1]), text: m[2] });
    else if (m[3] !== undefined) out.push({ kind: "update", text: m[3] });
    else if (m[4] !== undefined) out.push({ kind: "task", attrs: frameAttrs(m[4]), text: m[5] });
    else out.push({ kind: "summary", attrs: frameAttrs(m[6]), text: m[7] });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ kind: "text", text: text.slice(last) });
  return out.filter((p) => p.kind !== "text" || p.text.trim() !== "");
}
function inputBlocks(text) {
  const parts = frameParts(text), out = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p.kind === "update") {
      const run = [p];
      while (i + 1 < parts.length && parts[i + 1].kind === "update") run.push(parts[++i]);
      out.push(el("details", { class: "frame updates" },
        el("summary", {}, el("span", { class: "chip" }, "team"), " " + run.length + " update" + (run.length === 1 ? "" : "s") + ": " + run[0].text.split("\n")[0].slice(0, 90)),
        el("ul", {}, run.map((u) => el("li", { text: u.text })))));
    } else if (p.kind === "message") {
      const a = p.attrs, type = a.type || "message";
      out.push(el("div", { class: "frame message t-" + type },
        el("div", { class: "frame-head" },
          el("span", { class: "chip sender " + nameClass(a.teammate_id || ""), text: a.teammate_id || "?" }),
          type !== "message" ? el("span", { class: "chip type", text: type.replace(/_/g, " ") + (a.approve ? (a.approve === "true" ? ": approved" : ": rejected") : "") }) : null,
          a.summary ? el("span", { class: "muted", text: a.summary }) : null),
        el("pre", { text: p.text })));
    } else if (p.kind === "task") {
      out.push(el("details", { class: "frame task" + (p.attrs.status === "failed" ? " error" : "") },
        el("summary", {}, el("span", { class: "chip" }, "background task"), " " + (p.attrs.description || p.attrs.id || "") + " · " + (p.attrs.status || "")),
        el("pre", { text: p.text })));
    } else if (p.kind === "summary") {
      out.push(el("details", { class: "frame summary" },
        el("summary", {}, el("span", { class: "chip" }, "earlier conversation, summarised")), el("pre", { text: p.text })));
    } else {
      out.push(el("pre", { text: p.text }));
    }
  }
  return out;
}
function resultText(b) { return typeof b.content === "string" ? b.content : (b.content || []).map((c) => c.text || "").join("\n"); }
function transcriptTurns(messages, name) {
  const blocksOf = (m) => typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content || []);
  const results = new Map();
  for (const m of messages) for (const b of blocksOf(m)) if (b.type === "tool_result") results.set(b.tool_use_id, b);
  const called = new Set();
  for (const m of messages) for (const b of blocksOf(m)) if (b.type === "tool_use") called.add(b.id);
  const turns = [];
  for (const m of messages) {
    const kids = [];
    for (const b of blocksOf(m)) {
      if (b.type === "text") kids.push(...(m.role === "assistant" ? [el("pre", { text: b.text })] : inputBlocks(b.text)));
      else if (b.type === "tool_use") {
        const r = results.get(b.id);
        const input = JSON.stringify(b.input);
        const bad = r && r.is_error;
        kids.push(el("details", { class: "block-tool" + (bad ? " error" : "") + (r ? "" : " pending"), open: bad || null },
          el("summary", {}, el("b", { text: b.name }), " " + input.slice(0, 110) + (input.length > 110 ? "…" : ""),
            el("span", { class: "outcome", text: r ? (bad ? "✗ error" : "✓") : "…" })),
          el("pre", { class: "input", text: JSON.stringify(b.input, null, 2) }),
          r ? el("pre", { class: "result", text: resultText(r) || "(empty)" }) : el("div", { class: "muted" }, "no result yet")));
      } else if (b.type === "tool_result") {
        if (called.has(b.tool_use_id)) continue;  // shown under its call
        const text = resultText(b);
        kids.push(el("details", { class: "block-tool" + (b.is_error ? " error" : "") }, el("summary", { text: (b.is_error ? "✗ error: " : "↳ result: ") + text.split("\n")[0].slice(0, 120) }), el("pre", { text })));
      } else kids.push(el("pre", { text: JSON.stringify(b) }));
    }
    if (!kids.length) continue;  // only results, each shown under its call
    turns.push(el("div", { class: "turn " + m.role }, el("div", { class: "who", text: m.role === "assistant" ? name : "input" }), kids));
  }
  return turns;
}
// The agent's spend as it grew: tokens (solid) and cost (dashed), drawn here.
function renderSpend(series) {
  const box = $("spend-chart");
  if (!series || series.length < 2) { box.hidden = true; box.replaceChildren(); return; }
  box.hidden = false;
  const ns = "http://www.w3.org/2000/svg", W = 220, H = 40, P = 3;
  const t0 = series[0][0], t1 = series[series.length - 1][0];
  const last = series[series.length - 1];
  const priced = series.every((p) => p[2] !== null);
  const x = (t) => P + (W - 2 * P) * (t1 > t0 ? (t - t0) / (t1 - t0) : 1);
  const y = (v, max) => H - P - (H - 2 * P) * (max > 0 ? v / max : 0);
  const line = (i, max) => series.map((p) => x(p[0]).toFixed(1) + "," + y(p[i] || 0, max).toFixed(1)).join(" ");
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  const poly = (cls, points) => { const e = document.createElementNS(ns, "polyline"); e.setAttribute("class", cls); e.setAttribute("points", points); return e; };
  svg.append(poly("tokens", line(1, last[1])));
  if (priced) svg.append(poly("cost", line(2, last[2])));
  const title = document.createElementNS(ns, "title");
  title.textContent = "Spend over " + duration(t1 - t0) + ": " + human(last[1]) + " tokens" + (priced ? ", $" + last[2].toFixed(4) : ", cost unknown");
  svg.append(title);
  box.replaceChildren(svg, el("span", { class: "legend" }, el("span", { class: "k tokens" }, human(last[1]) + " tok"), priced ? el("span", { class: "k cost" }, "$" + last[2].toFixed(last[2] < 1 ? 4 : 2)) : null));
}

// ---------- attention ----------
const attentionWords = {
  turn_failed: ["failed turn", "failed turns"], paused: ["paused agent", "paused agents"], retrying: ["retrying", "retrying"], orphaned_task: ["orphaned task", "orphaned tasks"],
  task_waiting: ["task nobody can take", "tasks nobody can take"],
  unread_while_idle: ["unread while idle", "unread while idle"], request_unanswered: ["request unanswered", "requests unanswered"],
  merge_failed: ["failed merge", "failed merges"], merge_conflict: ["merge conflict", "merge conflicts"],
  merge_review: ["merge to review", "merges to review"], merge_held: ["merge queue held", "merge queues held"],
  question_waiting: ["question for you", "questions for you"], plan_waiting: ["plan waiting", "plans waiting"], budget: ["budget", "budgets"],
  sandbox_denied: ["sandbox refusal", "sandbox refusals"], hook_blocked: ["hook block", "hook blocks"], store_unreachable: ["store out of reach", "stores out of reach"],
};
function renderAttention() {
  const items = (S.outage ? [{ kind: "store_unreachable", subject: "the team's store cannot be reached: " + S.outage, since: 0, hint: "",
    note: "the page shows what it read last and tries again", link: "" }] : [])
    .concat((S.team && !S.team.archived && S.team.attention) || []);
  const box = $("attention");
  const key = JSON.stringify(items.map((i) => [i.kind, i.subject, i.hint, i.link]));
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.hidden = items.length === 0;
  if (!items.length) { box.replaceChildren(); return; }
  const counts = new Map();
  for (const i of items) counts.set(i.kind, (counts.get(i.kind) || 0) + 1);
  const summary = [...counts].map(([k, n]) => n + " " + (attentionWords[k] || [k, k])[n === 1 ? 0 : 1]).join(" · ");
  const copy = (text, e) => {
    const done = () => { e.target.dataset.copied = "1"; setTimeout(() => delete e.target.dataset.copied, 1200); };
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, () => {});
  };
  box.replaceChildren(
    el("div", { class: "attention-head" },
      el("span", { class: "badge", text: String(items.length) }),
      el("b", { text: items.length === 1 ? "needs attention" : "need attention" }),
      el("span", { class: "summary", text: summary }),
      el("div", { class: "spacer" }),
      el("button", { class: "btn small", onclick: () => box.classList.toggle("open") }, "details")),
    el("ul", { class: "attention-list" }, items.map((i) => el("li", { class: "k-" + i.kind, dataset: { kind: i.kind } },
      el("div", { class: "what" }, el("span", { text: i.subject }),
        i.since ? el("span", { class: "since muted", dataset: { since: i.since } }, duration(serverNow() - i.since) + " ago") : null,
        i.link ? el("a", { class: "go", href: "#" + i.link }, "show") : null),
      i.hint ? el("div", { class: "fix" },
        el("code", { class: "hint", title: "Click to copy", onclick: (e) => copy(i.hint, e) }, i.hint), fixButton(i.hint)) : null,
      i.note ? el("div", { class: "note muted", text: i.note }) : null))));
}
// A hint the page can do itself, as a button beside it: a restart (the
// host's page has the levers) or the message that lets an agent go on.
function fixButton(hint) {
  if (S.readOnly || !S.team || S.team.foreign) return null;
  const restart = /^mates restart --team \S+ ([A-Za-z0-9_.-]+)$/.exec(hint);
  if (restart && S.team.levers) {
    return el("button", { class: "btn small fix-do", dataset: { op: "restart" }, onclick: () => pullLever("restart", restart[1]) },
      "Restart " + restart[1]);
  }
  const goOn = /^mates send --team \S+ --to ([A-Za-z0-9_.-]+) "Go on\."$/.exec(hint);
  if (goOn) {
    return el("button", { class: "btn small fix-do", dataset: { op: "send" }, onclick: async (e) => {
      e.target.disabled = true;
      try { await api("/api/messages", { to: goOn[1], content: "Go on." }); }
      catch (err) { alert("Could not send to " + goOn[1] + ": " + err.message); }
      finally { e.target.disabled = false; }
    } }, "Send “Go on.” to " + goOn[1]);
  }
  return null;
}

// ---------- links and a task's detail ----------
// Where the page is, in its address (#tab/graph, #agent/w1, #task/3): a
// reload or a link comes back to it.
function setHash(h) { if (location.hash !== "#" + h) history.replaceState(null, "", "#" + h); }
function route() {
  const h = location.hash.slice(1);
  const at = h.indexOf("/");
  const kind = at < 0 ? h : h.slice(0, at);
  let arg = at < 0 ? "" : h.slice(at + 1);
  try { arg = decodeURIComponent(arg); } catch (_) { return; }
  if (kind === "tab" && ["board", "graph", "transcript"].includes(arg)) showTab(arg);
  else if (kind === "tab" && (arg === "merges" || arg === "usage")) {
    const panel = arg === "merges" ? $("merges-panel") : $("roster").closest(".panel");
    panel.scrollIntoView({ block: "nearest" });
    panel.classList.remove("flash"); void panel.offsetWidth; panel.classList.add("flash");
  } else if (kind === "agent" && arg) openTranscript(arg);
  else if (kind === "task" && /^[1-9][0-9]{0,17}$/.test(arg)) openTaskDetail(Number(arg));
}
function openTaskDetail(id) {
  S.detailTask = id;
  renderTaskDetail();
  const d = $("task-detail");
  if (!d.open) d.showModal();
}
function taskLink(id) { return el("a", { href: "#task/" + id, class: "task-link" }, "#" + id); }
function renderTaskDetail() {
  if (S.detailTask === null) return;
  const id = S.detailTask, body = $("task-detail-body");
  const t = S.tasks.find((x) => x.id === id);
  if (!t) {
    body.replaceChildren(el("h2", {}, "Task #" + id), el("div", { class: "empty" }, S.tasksLoaded ? "No task #" + id + " on this board." : "Loading…"));
    return;
  }
  const now = serverNow();
  const hist = t.history || [];
  // How long in each state: from each change to the next (or to now).
  const spent = new Map();
  const rows = hist.map((e, i) => {
    const end = i + 1 < hist.length ? hist[i + 1].at : (e.status === "completed" || e.status === "deleted" ? e.at : now);
    const d = Math.max(0, end - e.at);
    if (e.status !== "completed" && e.status !== "deleted") spent.set(e.status, (spent.get(e.status) || 0) + d);
    return el("li", {}, el("span", { class: "time", text: clock(e.at), title: fullTime(e.at) }),
      el("span", { class: "pill s-" + e.status, text: e.status.replace("_", " ") }),
      e.owner ? el("span", { class: "chip owner " + nameClass(e.owner), text: e.owner }) : el("span", { class: "muted", text: "no owner" }),
      end > e.at ? el("span", { class: "muted", text: "for " + duration(d) + (i + 1 === hist.length ? " so far" : "") }) : null);
  });
  const re = new RegExp("(^|[^0-9A-Za-z&])#" + id + "(?![0-9])");
  const named = S.messages.filter((m) => re.test(m.content || "") || re.test(m.summary || "")).slice(-20);
  const merges = (S.merges || []).filter((m) => m.task === id);
  const section = (title, ...kids) => el("section", {}, el("h3", { text: title }), ...kids);
  // (replaceChildren would write a null as the text "null")
  body.replaceChildren(...[
    el("div", { class: "detail-head" }, el("span", { class: "id", text: "#" + t.id }), el("span", { class: "subject", text: t.subject }),
      el("span", { class: "pill s-" + t.status, text: t.status.replace("_", " ") }),
      t.owner ? el("span", { class: "chip owner " + nameClass(t.owner), text: t.owner }) : null),
    el("div", { class: "muted times" }, "made " + clock(t.created_at) + " · changed " + clock(t.updated_at) +
      (spent.size ? " · " + [...spent].map(([s, d]) => s.replace("_", " ") + " " + duration(d)).join(" · ") : "")),
    t.description ? el("pre", { class: "desc", text: t.description }) : el("div", { class: "muted" }, "No description."),
    (t.blockedBy || []).length || (t.blocks || []).length ? el("div", { class: "links" },
      (t.blockedBy || []).length ? el("span", {}, "blocked by ", ...(t.blockedBy.map(taskLink))) : null,
      (t.blocks || []).length ? el("span", {}, "  blocks ", ...(t.blocks.map(taskLink))) : null) : null,
    section("Owners and states", hist.length ? el("ul", { class: "history" }, rows) : el("div", { class: "muted" }, "No history kept for this task.")),
    t.owner ? section("Changes", lazyDiff("/api/tasks/" + t.id + "/diff", "What it changed")) : null,
    merges.length ? section("Merge requests", el("ul", { class: "history" }, merges.map((m) => el("li", {},
      el("span", { class: "time", text: clock(m.updated_at) }), el("span", { class: "pill m-" + m.status, text: m.status }),
      el("span", { text: "#" + m.id + " by " + m.owner + (m.files && m.files.length ? " · " + m.files.join(", ") : "") }))))) : null,
    section("Messages that name it", named.length ? el("ul", { class: "history" }, named.map((m) => el("li", {},
      el("span", { class: "time", text: clock(m.timestamp) }),
      el("span", { class: nameClass(m.sender), text: m.sender }), el("span", { class: "muted", text: "→" }),
      el("span", { class: nameClass(m.recipient || ""), text: m.recipient || "everyone" }),
      el("span", { class: "line", text: (m.summary || m.content || "").split("\n")[0].slice(0, 140) })))) : el("div", { class: "muted" }, "None."))]
    .filter((e) => e !== null));
}

// ---------- tabs, composer, new task, theme ----------
function showTab(name, fromUser) {
  if (fromUser) setHash("tab/" + name);
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.dataset.tab === name);
  for (const v of document.querySelectorAll(".view")) v.classList.toggle("active", v.id === "view-" + name);
}
function renderComposerState() {
  const ro = S.readOnly;
  $("composer").classList.toggle("disabled", ro);
  for (const id of ["composer-to", "composer-text", "composer-send"]) $(id).disabled = ro;
  $("new-task").disabled = ro;
  $("composer-note").textContent = ro ? (S.team && S.team.archived ? "archived: read-only" : "read-only view (the host's dashboard can send)")
    : S.team && S.team.foreign ? "as user, into the member's " + S.team.foreign + " inbox" : "as user";
}
async function sendMessage(ev) {
  ev.preventDefault();
  const text = $("composer-text").value;
  if (!text.trim()) return;
  $("composer-send").disabled = true;
  $("composer-error").textContent = "";
  try {
    await api("/api/messages", { to: $("composer-to").value, content: text });
    $("composer-text").value = "";
  } catch (e) { $("composer-error").textContent = e.message; }
  finally { $("composer-send").disabled = S.readOnly; $("composer-text").focus(); }
}
async function createTask(ev) {
  ev.preventDefault();
  $("task-error").textContent = "";
  const blocked = $("task-blocked").value.split(/[\s,]+/).filter(Boolean).map((s) => Number(s.replace(/^#/, "")));
  if (blocked.some((n) => !Number.isInteger(n) || n <= 0)) { $("task-error").textContent = "blocked by: task ids like 1, 2"; return; }
  try {
    await api("/api/tasks", { subject: $("task-subject").value, description: $("task-description").value, blocked_by: blocked });
    $("task-form").reset();
    $("task-dialog").close();
    showTab("board");
  } catch (e) { $("task-error").textContent = e.message; }
}
function setTheme(t) {
  document.documentElement.dataset.theme = t;
  try { localStorage.setItem("mates-theme", t); } catch (_) { /* private mode */ }
}

// ---------- live updates ----------
function setLive(state, text) {
  $("live").className = "live " + state;
  $("live-text").textContent = text;
}
let pollTimer = null;
function startPolling() {
  if (pollTimer) return;
  setLive("poll", "polling 1 s");
  pollTimer = setInterval(refreshAll, 1000);
}
function connect() {
  if (still) { setLive("", "still picture"); return; }
  if (forcePoll || typeof EventSource === "undefined") { refreshAll(); startPolling(); return; }
  let failures = 0;
  const es = new EventSource("/events?token=" + encodeURIComponent(token));
  es.addEventListener("hello", () => { failures = 0; setLive("on", "live"); refreshAll(); });
  es.addEventListener("change", (e) => {
    const kinds = JSON.parse(e.data).kinds || [];
    for (const k of kinds) {
      if (k === "team" || k === "activity") refresh("team");
      else if (k === "tasks") { refresh("tasks"); refresh("team"); }
      else if (k === "messages") refresh("messages");
      // The team's attention items are made of requests and merges too.
      else if (k === "requests") { refresh("requests"); refresh("team"); }
      else if (k === "merges") { refresh("merges"); refresh("team"); }
      else if (k === "transcripts" && S.transcriptAgent) refresh("transcript");
    }
  });
  es.onerror = () => {
    setLive("", "reconnecting");
    if (++failures >= 5) { es.close(); refreshAll(); startPolling(); }
  };
}

function init() {
  let theme = null;
  try { theme = localStorage.getItem("mates-theme"); } catch (_) { /* private mode */ }
  setTheme(theme || (matchMedia("(prefers-color-scheme: light)").matches ? "light" : "dark"));
  $("theme").onclick = () => setTheme(document.documentElement.dataset.theme === "light" ? "dark" : "light");
  for (const t of document.querySelectorAll(".tab")) t.onclick = () => { showTab(t.dataset.tab, true); if (t.dataset.tab === "transcript") refresh("transcript"); };
  $("task-detail-close").onclick = () => $("task-detail").close();
  $("task-detail").addEventListener("close", () => {
    S.detailTask = null;
    if (location.hash.startsWith("#task/")) setHash("tab/" + (document.querySelector(".tab.active") || { dataset: { tab: "board" } }).dataset.tab);
  });
  window.addEventListener("hashchange", route);
  $("filter-type").replaceChildren(el("option", { value: "" }, "all types"), ...msgTypes.map((t) => el("option", { value: t }, t.replace(/_/g, " "))));
  $("filter-member").onchange = $("filter-type").onchange = () => renderTimeline(null);
  $("transcript-agent").onchange = (e) => openTranscript(e.target.value);
  $("composer").onsubmit = sendMessage;
  $("composer-text").onkeydown = (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); } };
  $("new-task").onclick = () => { $("task-error").textContent = ""; $("task-dialog").showModal(); $("task-subject").focus(); };
  $("task-cancel").onclick = () => $("task-dialog").close();
  $("task-form").onsubmit = createTask;
  if (!still) setInterval(tickDurations, 1000);  // a picture shows the durations as loaded
  Promise.allSettled([loadTeam(), loadTasks(), loadMessages(), loadRequests(), loadMerges()]).then(() => {
    S.firstLoad = false;
    route();  // a link followed or a page reloaded: where it pointed
    document.body.dataset.ready = "1";
  });
  connect();
}
init();
