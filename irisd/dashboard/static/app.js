// The Iris dashboard: one page, live over /api/events, every action through /api.
//
// How it works: `state` holds what the daemon told us (status, tells, approvals, ...).
// The WebSocket pushes events; each one updates `state` and re-renders the visible view
// (a few events also refetch one listing, e.g. the pairs after a tell changes state).
// When the socket opens (first time or after irisd restarted) everything is fetched
// again, since events may have been missed meanwhile. Nothing polls.

import { ago, clear, clock, bytes, duration, firstLine, h, money, pairLabel, pill, seconds, shortId, teamColor, who } from "./dom.js";
import { renderSteps, toolInput } from "./transcript.js";
import { inputCard } from "./input_form.js";

const FINAL = new Set(["completed", "timed_out", "interrupted", "failed"]);
const STATUSES = ["queued", "running", "awaiting_approval", "completed", "timed_out", "interrupted", "failed"];
const TELL_LIMIT = 200;

const state = {
  status: null, // StatusReply
  tells: new Map(), // id -> TellInfo
  approvals: new Map(), // id -> ApprovalInfo (pending ones)
  decided: [], // recently decided approvals
  questions: new Map(), // id -> QuestionInfo (pending ones)
  closedQuestions: [], // recently answered, dismissed or expired questions
  // The conversation with iris-agent: its one session for the person, shared with 'iris ask'
  // ("New conversation" starts another).
  ask: { turns: [], thinking: false, session: "", fresh: false },
  costs: { by: "team", since: "all", reply: null, loading: false, error: "" }, // the Costs view
  rules: null, // remembered rules, when the daemon offers them
  notifications: [],
  connected: false,
  everConnected: false,
  loggedOut: false,
  filter: { team: "", status: "" },
  open: null, // { id, tell, steps, text, loading }
  notices: new Map(), // tell id -> [notice text]
  touched: new Set(), // ids of tells events changed since the last listing
};

// --- the API ---------------------------------------------------------------------

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError("unreachable", "irisd is not answering");
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.status === 401) {
    setLoggedOut(true);
    throw new ApiError("unauthorized", (data && data.message) || "not logged in");
  }
  if (!response.ok || (data && data.type === "error")) {
    throw new ApiError((data && data.code) || String(response.status), (data && data.message) || response.statusText);
  }
  return data;
}

const q = (params) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== "" && value !== undefined && value !== null) search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
};

// --- loading -----------------------------------------------------------------------

// The daemon leaves out fields that hold their default value: put them back.
function tellInfo(t) {
  return { text: "", error: "", session_id: "", kind: "tell", hops: 0, chain_id: "", approval_id: "", cost_usd: null, started_at: null, finished_at: null, ...t };
}

async function loadStatus() {
  state.status = await api("GET", "/api/status");
  notifyFindings(state.status.findings);
  await loadSessions();
  renderChrome();
}

// Each pair's conversation: how full it is, its compactions, whether it is archived.
async function loadSessions() {
  try {
    const [active, archived] = await Promise.all([api("GET", "/api/sessions"), api("GET", "/api/sessions?archived=true")]);
    state.sessions = new Map([...active.sessions, ...archived.sessions].map((s) => [pairLabel(s.from_team, s.to_team), s]));
  } catch (err) {
    state.sessions = state.sessions || new Map();  // a reader may not list them: the pairs show without
  }
}

function sessionLine(p) {
  const s = (state.sessions || new Map()).get(pairLabel(p.from_team, p.to_team));
  if (!s) return null;
  const parts = [];
  if (s.status && s.status !== "active") parts.push(s.status === "compact_pending" ? "compacting next" : s.status);
  if (s.context_tokens != null && s.context_window) parts.push(`context ${Math.round((100 * s.context_tokens) / s.context_window)}%`);
  if (s.compactions) parts.push(`${s.compactions} compaction${s.compactions === 1 ? "" : "s"}`);
  if (!parts.length) return null;
  const title = s.context_tokens != null ? `${s.context_tokens} of ${s.context_window} tokens` : "";
  return h("div", { class: "muted small", "data-session-status": s.status || "active", title }, parts.join(" · "));
}

async function loadTells() {
  const reply = await api("GET", `/api/tells${q({ team: state.filter.team, status: state.filter.status, limit: TELL_LIMIT })}`);
  const keep = new Map();
  for (const tell of reply.tells) keep.set(tell.id, tellInfo(tell));
  // A tell we follow live stays, and so do those events told us about since the last
  // listing (the listing may have been read before they began).
  for (const id of [...state.touched, state.open && state.open.id]) {
    if (id && !keep.has(id) && state.tells.has(id)) keep.set(id, state.tells.get(id));
  }
  state.touched.clear();
  state.tells = keep;
}

async function loadApprovals() {
  const reply = await api("GET", `/api/approvals${q({ all: "true" })}`);
  state.approvals = new Map(reply.approvals.filter((a) => a.status === "pending").map((a) => [a.id, a]));
  state.decided = reply.approvals.filter((a) => a.status !== "pending").slice(0, 20);
  try {
    const rules = await api("GET", "/api/approvals/rules");
    state.rules = rules.rules;
  } catch {
    state.rules = null; // this irisd does not list them
  }
}

async function loadQuestions() {
  let reply;
  try {
    reply = await api("GET", `/api/questions${q({ all: "true" })}`);
  } catch (error) {
    if (error.code === "unauthorized" || error.code === "unreachable") throw error;
    return; // an irisd without pending questions
  }
  state.questions = new Map(reply.questions.filter((x) => x.status === "pending").map((x) => [x.id, x]));
  state.closedQuestions = reply.questions.filter((x) => x.status !== "pending").slice(0, 20);
}

const SINCE = { all: "all time", today: "today", "7d": "the last 7 days", "30d": "the last 30 days" };

function sinceEpoch(since) {
  if (since === "today") return new Date().setHours(0, 0, 0, 0) / 1000; // local midnight, as 'iris costs --since today'
  const days = { "7d": 7, "30d": 30 }[since];
  return days ? Date.now() / 1000 - days * 86400 : 0;
}

async function loadCosts() {
  const costs = state.costs;
  const wanted = `${costs.by}/${costs.since}`;
  costs.loading = true;
  try {
    const reply = await api("GET", `/api/costs${q({ by: costs.by, since: sinceEpoch(costs.since) })}`);
    costs.reply = reply;
    costs.error = "";
  } catch (error) {
    costs.error = error.message;
  } finally {
    costs.loading = false;
    costs.key = wanted; // if the choice changed meanwhile, the view asks again
  }
}

async function loadNotifications() {
  const reply = await api("GET", `/api/notifications${q({ all: "true" })}`);
  state.notifications = reply.notifications;
}

async function loadOpen() {
  const open = state.open;
  if (!open) return;
  open.loading = true;
  open.pending = "";
  try {
    const reply = await api("GET", `/api/tells/${encodeURIComponent(open.id)}/transcript${q({ steps: "true" })}`);
    if (state.open !== open) return;
    const tell = tellInfo(reply.tell);
    open.tell = tell;
    open.steps = reply.steps || [];
    // Text that arrived while we were asking may already be in the reply's text.
    open.text = tell.text + (tell.text.endsWith(open.pending) ? "" : open.pending);
    open.error = "";
    state.tells.set(tell.id, tell);
  } catch (error) {
    open.error = error.message;
  } finally {
    open.loading = false;
    open.pending = "";
  }
}

async function loadAll() {
  await loadStatus();
  await Promise.all([loadTells(), loadApprovals(), loadQuestions(), loadNotifications(), loadOpen()]);
  render();
}

// Refetching one listing after an event, at most once per 300 ms.
const pending = new Map();
function soon(what, load) {
  if (pending.has(what)) return;
  pending.set(what, setTimeout(async () => {
    pending.delete(what);
    try {
      await load();
      render();
    } catch (error) {
      flash(error.message);
    }
  }, 300));
}

// --- live events -------------------------------------------------------------------

let socket = null;
let retryDelay = 500;

function connect() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  socket = new WebSocket(`${scheme}//${location.host}/api/events`);
  socket.addEventListener("open", async () => {
    retryDelay = 500;
    state.connected = true;
    state.everConnected = true;
    setLoggedOut(false);
    renderChrome();
    try {
      await loadAll();
    } catch (error) {
      flash(error.message);
    }
  });
  socket.addEventListener("message", (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    onEvent(event);
  });
  socket.addEventListener("close", async () => {
    const was = state.connected;
    state.connected = false;
    socket = null;
    renderChrome();
    if (was) document.body.classList.add("away");
    // Why did it close? A daemon that is up but refuses us means the login is gone.
    try {
      const up = await fetch("/health", { credentials: "same-origin" });
      if (up.ok) await api("GET", "/api/status");
    } catch {
      // irisd is away: keep trying
    }
    setTimeout(connect, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 5000);
  });
}

function onEvent(event) {
  switch (event.type) {
    case "tell_text": {
      const tell = state.tells.get(event.tell_id);
      if (tell) tell.text = (tell.text || "") + event.text;
      const open = state.open;
      if (open && open.id === event.tell_id) {
        if (open.loading) open.pending += event.text;
        else open.text += event.text;
        const bubble = document.querySelector("[data-live-answer]");
        if (bubble) bubble.textContent = open.text;
        else renderView();
      }
      return;
    }
    case "tell_state": {
      const known = state.tells.get(event.tell_id);
      const now = Date.now() / 1000;
      const tell = known || tellInfo({
        id: event.tell_id, from_team: event.from_team ?? null, to_team: event.to_team, message: event.message,
        status: event.status, created_at: now,
      });
      tell.status = event.status;
      if (event.error) tell.error = event.error;
      if (event.status === "running" && !tell.started_at) tell.started_at = now;
      if (FINAL.has(event.status) && !tell.finished_at) tell.finished_at = now;
      state.tells.set(tell.id, tell);
      state.touched.add(tell.id);
      if (state.open && state.open.id === tell.id) {
        state.open.tell = { ...state.open.tell, ...tell };
        soon("open", loadOpen); // the tool calls, the cost, the final text
      }
      if (FINAL.has(event.status)) soon("tell", () => refreshTell(tell.id));
      soon("status", loadStatus);
      if (tell.kind === "notification" || state.notifications.length) soon("notifications", loadNotifications);
      render();
      return;
    }
    case "tell_phase": { // what an unfinished tell waits for, in irisd's words
      const tell = state.tells.get(event.tell_id);
      if (tell) tell.phase = event.phase;
      if (state.open && state.open.id === event.tell_id && state.open.tell) state.open.tell.phase = event.phase;
      render();
      return;
    }
    case "tell_notice": {
      const list = state.notices.get(event.tell_id) || [];
      list.push(event.text);
      state.notices.set(event.tell_id, list);
      if (state.open && state.open.id === event.tell_id) renderView();
      return;
    }
    case "approval_event": {
      const approval = event.approval;
      if (approval.status === "pending") {
        state.approvals.set(approval.id, approval);
        notifyPerson(`approval:${approval.id}`, `${approval.to_team} asks to use ${approval.tool_name}`,
          `iris approve ${approval.id} (or deny it in the Inbox)`);
      } else {
        state.approvals.delete(approval.id);
        state.decided = [approval, ...state.decided.filter((a) => a.id !== approval.id)].slice(0, 20);
        if (approval.remembered) soon("approvals", loadApprovals);
      }
      if (state.open && state.open.id === approval.tell_id) soon("open", loadOpen);
      render();
      return;
    }
    case "question_event": {
      const question = event.question;
      if (question.status === "pending") {
        state.questions.set(question.id, question);
        notifyPerson(`question:${question.id}`, `${question.to_team} asks a question`, question.question);
      } else {
        state.questions.delete(question.id);
        state.closedQuestions = [question, ...state.closedQuestions.filter((x) => x.id !== question.id)].slice(0, 20);
      }
      render();
      return;
    }
    default:
      // A pair's process changed state (or an event this page does not know yet).
      if (event.process && typeof event.process === "object") {
        upsertProcess(event.process);
        // A pair changes state once a tell ended is saved: the ledger has its figures.
        if (state.costs.reply) soon("costs", loadCosts);
        render();
      } else if (/process|pair|session/.test(event.type || "")) {
        soon("status", loadStatus);
      }
  }
}

async function refreshTell(id) {
  try {
    const reply = await api("GET", `/api/tells/${encodeURIComponent(id)}`);
    state.tells.set(id, tellInfo(reply.tell));
  } catch {
    // forgotten meanwhile
  }
}

function upsertProcess(process) {
  if (!state.status) return;
  const same = (p) => p.from_team === process.from_team && p.to_team === process.to_team;
  const list = state.status.processes.filter((p) => !same(p));
  list.push(process); // with the pair's cost so far: it grows as claude reports each turn
  state.status.processes = list;
}

// --- chrome: connection, badge, title ----------------------------------------------

function setLoggedOut(value) {
  if (state.loggedOut === value) return;
  state.loggedOut = value;
  if (value) {
    state.status = null;
    state.tells.clear();
    state.approvals.clear();
    state.questions.clear();
    state.notifications = [];
    state.open = null;
  }
  render();
}

function renderChrome() {
  const conn = document.getElementById("conn");
  const banner = document.getElementById("banner");
  conn.className = `conn ${state.connected ? "live" : "away"}`;
  if (state.loggedOut) {
    conn.textContent = "not logged in";
    banner.hidden = false;
    banner.textContent = "This browser is not logged in to irisd (or its token was rotated). Run 'iris dashboard' to open a fresh login link.";
  } else if (state.connected) {
    conn.textContent = "live";
    banner.hidden = true;
    document.body.classList.remove("away");
  } else {
    conn.textContent = state.everConnected ? "reconnecting…" : "connecting…";
    banner.hidden = !state.everConnected;
    banner.textContent = "irisd is not answering (stopped or restarting). This page reconnects by itself; what you see may be out of date.";
  }
  const approvals = state.approvals.size;
  const questions = state.questions.size;
  const count = approvals + questions;
  document.title = `${count ? `(${count}) ` : ""}Iris${state.connected ? "" : " (offline)"}`;
  const badge = document.getElementById("approvals-badge");
  badge.hidden = count === 0;
  document.getElementById("approvals-count").textContent = String(count);
  document.getElementById("inbox-label").textContent = `waiting for you: ${waitingLabel(approvals, questions)}`;
  const nav = document.getElementById("nav-approvals");
  nav.hidden = count === 0;
  nav.textContent = String(count);
  nav.title = waitingLabel(approvals, questions);
}

/** "2 approvals, 1 question" */
function waitingLabel(approvals, questions) {
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return [approvals ? plural(approvals, "approval") : "", questions ? plural(questions, "question") : ""].filter(Boolean).join(", ");
}

let flashTimer = null;
function flash(text, kind = "error") {
  let box = document.getElementById("flash");
  if (!box) {
    box = h("div", { id: "flash", role: "status", "aria-live": "assertive" });
    document.body.appendChild(box);
  }
  box.className = `flash ${kind}`;
  box.textContent = text;
  box.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { box.hidden = true; }, 6000);
}

/** Run an action from a button: disabled while it runs, errors shown, never thrown. */
async function act(button, work, done) {
  if (button) button.disabled = true;
  try {
    const result = await work();
    if (done) flash(done(result), "ok");
    return result;
  } catch (error) {
    flash(error.message);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

/** A button that asks to be pressed twice for something that cannot be undone. */
function confirmButton(label, question, work, attrs = {}) {
  let armed = null;
  const button = h("button", {
    type: "button", ...attrs,
    onclick: async () => {
      if (!armed) {
        button.textContent = question;
        button.classList.add("armed");
        armed = setTimeout(() => { armed = null; button.textContent = label; button.classList.remove("armed"); }, 4000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      button.textContent = label;
      button.classList.remove("armed");
      await work(button);
    },
  }, label);
  return button;
}

// --- views -----------------------------------------------------------------------

function route() {
  const path = location.hash.replace(/^#\/?/, "").split("?")[0];
  const parts = path.split("/").map(decodeURIComponent);
  return { view: parts[0] || "teams", arg: parts[1] || "" };
}

function render() {
  renderChrome();
  renderView();
}

// A view is rebuilt on every event; rebuilt between a press and its release, the element
// pressed is gone and the click never happens. So a press holds renders until it ends
// (or for HOLD_MS at most: a release the page never sees must not freeze it).
const HOLD_MS = 3000;
const pointer = { down: false, held: false, timer: null };
document.getElementById("main").addEventListener("pointerdown", () => { pointer.down = true; }, true);
function releasePointer() {
  if (!pointer.down) return;
  pointer.down = false;
  clearTimeout(pointer.timer);
  pointer.timer = null;
  // After the click this release makes (dispatched in the same task), not before it.
  if (pointer.held) setTimeout(() => { if (pointer.held && !pointer.down) renderView(); }, 0);
}
for (const type of ["pointerup", "pointercancel"]) window.addEventListener(type, releasePointer, true);
window.addEventListener("blur", releasePointer); // the window's own (an element's blur does not bubble)

let lastView = "";
function renderView() {
  if (pointer.down) {
    pointer.held = true;
    pointer.timer ??= setTimeout(releasePointer, HOLD_MS);
    return;
  }
  pointer.held = false;
  const main = document.getElementById("main");
  const { view, arg } = route();
  for (const link of document.querySelectorAll("nav.side a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  // Keep what the person is typing: re-render around focused form fields.
  const keep = captureForm(main);
  clear(main);
  if (state.loggedOut) {
    main.appendChild(loggedOutView());
  } else if (!state.status) {
    main.appendChild(h("p", { class: "muted" }, state.everConnected ? "Loading…" : "Connecting to irisd…"));
  } else if (view === "tells" && arg) {
    main.appendChild(conversationView(arg));
  } else {
    const views = { teams: teamsView, tells: tellsView, approvals: inboxView, notifications: notificationsView, costs: costsView, ask: askView, health: healthView };
    main.appendChild((views[view] || teamsView)());
  }
  restoreForm(main, keep);
  const key = `${view}/${arg}`;
  if (key !== lastView) {
    lastView = key;
    if (!keep.focused) main.focus({ preventScroll: true });
  }
}

function captureForm(root) {
  const values = {};
  for (const field of root.querySelectorAll("[data-keep]")) {
    values[field.dataset.keep] = field.type === "checkbox" ? field.checked : field.value;
  }
  const active = document.activeElement;
  const focused = active && root.contains(active) && active.dataset ? active.dataset.keep : undefined;
  const selection = focused && "selectionStart" in active ? [active.selectionStart, active.selectionEnd] : null;
  return { values, focused, selection };
}

function restoreForm(root, keep) {
  for (const field of root.querySelectorAll("[data-keep]")) {
    const value = keep.values[field.dataset.keep];
    if (value === undefined) continue;
    if (field.type === "checkbox") field.checked = value;
    else field.value = value;
  }
  if (keep.focused) {
    const field = root.querySelector(`[data-keep="${keep.focused}"]`);
    if (field) {
      field.focus({ preventScroll: true });
      if (keep.selection && "setSelectionRange" in field) {
        try { field.setSelectionRange(...keep.selection); } catch { /* not a text field */ }
      }
    }
  }
}

function section(title, ...children) {
  return h("section", { class: "panel" }, h("h2", {}, title), ...children);
}

function loggedOutView() {
  return h("div", { class: "empty" },
    h("h1", {}, "Not logged in"),
    h("p", {}, "Open the dashboard with:"),
    h("pre", { class: "cmd" }, "iris dashboard"),
    h("p", { class: "muted" }, "It opens this page with a login link (or prints it with --print)."));
}

// Teams and their pairs.

// The claude processes running now, as 'iris status' counts them: a pair of an A2A agent
// or of a team on another irisd (p.kind) has no claude here, whatever its state.
function claudeRunning(processes) {
  return processes.filter((p) => !p.kind && p.pid !== undefined && p.pid !== null).length;
}

function teamsView() {
  const { teams, processes, max_processes: max } = state.status;
  const running = claudeRunning(processes);
  const grid = h("div", { class: "cards" });
  for (const team of teams) {
    const pairs = processes.filter((p) => p.to_team === team.name).sort((a, b) => who(a.from_team).localeCompare(who(b.from_team)));
    const tells = [...state.tells.values()].filter((t) => t.to_team === team.name);
    const cost = pairs.reduce((sum, p) => sum + (p.cost_usd || 0), 0);
    const card = teamColor(h("article", { class: "card team", "data-team": team.name },
      h("header", {},
        h("h3", {}, team.name),
        h("span", { class: "muted" }, `${pairs.filter((p) => p.state !== "stopped").length} live`)),
      team.description ? h("p", { class: "desc" }, team.description) : null,
      teamPlace(team),
      team.unavailable ? h("p", { class: "note warn", "data-unavailable": "" }, team.unavailable) : null,
      pairs.length ? scrolls(h("table", { class: "pairs" },
        h("thead", {}, h("tr", {}, ["from", "state", "last used", "cost", ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, pairs.map(pairRow)))) : h("p", { class: "muted" }, "No pair yet: nobody has told this team anything since irisd started."),
      h("footer", {},
        tells.length || cost ? h("span", { class: "muted" }, [
          tells.length ? `${tells.length} recent tell${tells.length === 1 ? "" : "s"}` : "",
          cost ? `${money(cost)} spent by these pairs` : ""].filter(Boolean).join(" · ")) : h("span"),
        h("span", { class: "actions" },
          team.kind || pairs.some((p) => p.from_team === null) ? null : h("button", { type: "button", onclick: (e) => act(e.currentTarget, () => api("POST", `/api/teams/${encodeURIComponent(team.name)}/wake`, {}), (r) => r.message || `woke ${team.name}`) }, "Wake"),
          h("a", { class: "button", href: `#/tells?to=${team.name}` }, "Tell…")))), team.color);
    grid.appendChild(card);
  }
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Teams"),
      h("span", { class: "muted" }, `${running} of ${max} claude processes running`)),
    teams.length ? grid : h("p", { class: "muted" }, "No teams are configured: add some to config.yaml, then Reload config (Health)."));
}

// Where a team lives: its folder, or (a remote team) the agent or irisd it is.
function teamPlace(team) {
  if (!team.kind) return h("p", { class: "path", title: team.path }, team.path);
  const label = team.kind === "a2a" ? "A2A agent" : team.kind;
  return h("p", { class: "path", title: team.remote, "data-kind": team.kind }, `${label}: ${team.remote}`);
}

// A table wider than its place scrolls inside it, never the page.
function scrolls(table) {
  return h("div", { class: "table-scroll" }, table);
}

// A pair whose tell waits for a person shows that, not "processing": it is the one thing to do.
function pairState(p) {
  const current = p.current_tell ? state.tells.get(p.current_tell) : null;
  const waiting = (current && current.status === "awaiting_approval")
    || [...state.approvals.values()].some((a) => a.status === "pending" && a.to_team === p.to_team && (a.from_team || null) === (p.from_team || null));
  return waiting && p.state === "processing"
    ? h("a", { class: "pill s-awaiting_approval", href: "#/approvals", "data-pair-state": "awaiting_approval" }, "waiting for your approval")
    : pill(p.state);
}

function pairRow(p) {
  const base = `/api/teams/${encodeURIComponent(p.to_team)}`;
  const from = p.from_team ? { from_team: p.from_team } : {};
  const current = p.current_tell ? state.tells.get(p.current_tell) : null;
  return h("tr", { "data-pair": pairLabel(p.from_team, p.to_team) },
    // Two narrow lines a cell, so the card has room for every column and button at 1280 px:
    // the name over its session, the state over its process and queue.
    h("td", {}, h("div", { class: "name" }, who(p.from_team)),
      p.session_id ? h("div", { class: "muted small id", title: p.session_id, "data-session": "" }, `session ${shortId(p.session_id)}`) : null),
    h("td", {}, pairState(p),
      h("div", { class: "muted small", "data-process": "" }, [p.pid ? `pid ${p.pid}` : "", p.queued ? `${p.queued} queued` : ""].filter(Boolean).join(" · ")),
      p.reason ? h("div", { class: "muted small" }, p.reason) : null,
      p.current_tell ? h("div", { class: "small", "data-serving": "" }, h("a", { href: `#/tells/${p.current_tell}` }, current ? firstLine(current.message, 40) : `tell ${shortId(p.current_tell)}`)) : null),
    h("td", { title: clock(p.last_used_at) }, ago(p.last_used_at), sessionLine(p)),
    h("td", { class: "num", "data-cost-usd": String(p.cost_usd || 0), title: "spent on this pair's tells so far (the cost ledger)" }, p.cost_usd ? money(p.cost_usd) : "–"),
    p.kind ? h("td", { class: "actions muted small", "data-remote-pair": p.kind }, "no claude here") : h("td", { class: "actions" },
      p.state === "stopped" || p.state === "failed"
        ? h("button", { type: "button", onclick: (e) => act(e.currentTarget, () => api("POST", `${base}/wake`, from), (r) => r.message || "woken") }, "Wake")
        : p.state === "processing"
          ? confirmButton("Force sleep", "Interrupt it?", (b) => act(b, () => api("POST", `${base}/sleep`, { ...from, force: true }), (r) => r.message || "stopped"))
          : h("button", { type: "button", onclick: (e) => act(e.currentTarget, () => api("POST", `${base}/sleep`, from), (r) => r.message || "asleep") }, "Sleep"),
      confirmButton("Reset", "New session?", (b) => act(b, () => api("POST", `${base}/session/reset`, from), () => `${pairLabel(p.from_team, p.to_team)} starts a fresh conversation`))));
}

// Tells: send, filter, list.

function tellsView() {
  const teams = state.status.teams.map((t) => t.name);
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const list = [...state.tells.values()]
    .filter((t) => !state.filter.team || t.to_team === state.filter.team || t.from_team === state.filter.team)
    .filter((t) => !state.filter.status || t.status === state.filter.status)
    .sort((a, b) => b.created_at - a.created_at);
  const refilter = async () => {
    state.filter.team = document.getElementById("filter-team").value;
    state.filter.status = document.getElementById("filter-status").value;
    try {
      await loadTells();
    } catch (error) {
      flash(error.message);
    }
    renderView();
  };
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Tells")),
    sendForm(teams, params.get("to") || ""),
    h("div", { class: "filters", role: "search" },
      h("label", { for: "filter-team" }, "Team"),
      h("select", { id: "filter-team", onchange: refilter }, h("option", { value: "" }, "all teams"),
        teams.map((t) => h("option", { value: t, selected: t === state.filter.team }, t))),
      h("label", { for: "filter-status" }, "Status"),
      h("select", { id: "filter-status", onchange: refilter }, h("option", { value: "" }, "any status"),
        STATUSES.map((s) => h("option", { value: s, selected: s === state.filter.status }, s.replace("_", " "))))),
    list.length ? h("ul", { class: "tells" }, list.map(tellItem)) : h("p", { class: "muted" }, "No tells yet."));
}

function tellItem(t) {
  return h("li", { "data-tell": t.id },
    teamColor(h("a", { class: `tell-row${t.kind && t.kind !== "tell" ? ` k-${t.kind}` : ""}`, href: `#/tells/${t.id}` },
      pill(t.status),
      h("span", { class: "pair" }, pairLabel(t.from_team, t.to_team)),
      h("span", { class: "msg-line" }, firstLine(t.message)),
      h("span", { class: "meta" }, [ago(t.created_at), duration(t), money(t.cost_usd)].filter(Boolean).join(" · ")),
      waitsFor(t)),
    (state.status.teams.find((x) => x.name === t.to_team) || {}).color));
}

// An unfinished tell's phase (irisd words it: "queued behind 1 tell; tell … ahead awaits your approval …").
function waitsFor(t) {
  return !FINAL.has(t.status) && t.phase && t.phase.text ? h("span", { class: "meta", "data-phase": t.phase.name }, t.phase.text) : null;
}

function sendForm(teams, to) {
  const send = async (event) => {
    event.preventDefault();
    const form = event.currentTarget.closest("form");
    const data = new FormData(form);
    const team = data.get("to");
    const body = { message: data.get("message"), timeout_ms: -1 };
    if (data.get("from")) body.from_team = data.get("from");
    if (data.get("persist")) body.persist = true;
    const reply = await act(form.querySelector("button[type=submit]"), () => api("POST", `/api/teams/${encodeURIComponent(team)}/tell`, body));
    if (!reply) return;
    form.querySelector("textarea").value = "";
    if (reply.type === "notification_reply") {
      flash(`stored for ${team}: it is delivered when the team is free`, "ok");
      soon("notifications", loadNotifications);
    } else {
      state.tells.set(reply.tell.id, tellInfo(reply.tell));
      location.hash = `#/tells/${reply.tell.id}`;
    }
  };
  return h("form", { class: "send panel", autocomplete: "off", onsubmit: send },
    h("div", { class: "row" },
      h("label", { for: "send-to" }, "To"),
      h("select", { id: "send-to", name: "to", "data-keep": "to" }, teams.map((t) => h("option", { value: t, selected: t === to }, t))),
      h("label", { for: "send-from" }, "as"),
      h("select", { id: "send-from", name: "from", "data-keep": "from" }, h("option", { value: "" }, "you (external)"), teams.map((t) => h("option", { value: t }, t))),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "persist", "data-keep": "persist" }), "deliver later (persist)")),
    h("textarea", {
      name: "message", rows: 2, placeholder: "Message… (Ctrl+Enter sends)", "aria-label": "Message", "data-keep": "message",
      onkeydown: (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.currentTarget.form.requestSubmit(); } },
    }),
    h("div", { class: "row end" }, h("button", { type: "submit", class: "primary" }, "Send tell")));
}

// One tell's conversation.

function conversationView(id) {
  if (!state.open || state.open.id !== id) {
    state.open = { id, tell: state.tells.get(id) || null, steps: [], text: "", pending: "", loading: true, error: "" };
    loadOpen().then(renderView);
  }
  const open = state.open;
  const tell = open.tell;
  const back = h("a", { class: "back", href: "#/tells" }, "← all tells");
  if (!tell) {
    return h("div", {}, back, h("p", { class: open.error ? "error" : "muted" }, open.error || "Loading…"));
  }
  const running = !FINAL.has(tell.status);
  const facts = [
    ["id", tell.id],
    ["created", clock(tell.created_at)],
    tell.started_at ? [running ? "running for" : "took", running ? h("span", { "data-running-since": String(tell.started_at), "data-created": String(tell.created_at) }, duration(tell)) : duration(tell)] : null,
    running && tell.phase && tell.phase.text ? ["waits for", tell.phase.text] : null,
    tell.cost_usd !== undefined && tell.cost_usd !== null ? ["cost", money(tell.cost_usd)] : null,
    tell.session_id ? ["session", tell.session_id] : null,
    tell.hops ? ["hops", String(tell.hops)] : null,
    tell.kind && tell.kind !== "tell" ? ["kind", tell.kind] : null,
  ].filter(Boolean);
  const notices = state.notices.get(id) || [];
  const steps = renderSteps(tell, open.steps, { withText: !running, approvalFor: approvalFor });
  return h("div", { class: "conversation", "data-tell": tell.id, "data-status": tell.status },
    back,
    h("div", { class: "view-head" },
      h("h1", {}, pairLabel(tell.from_team, tell.to_team)), pill(tell.status),
      h("span", { class: "spacer" }),
      running ? confirmButton("Cancel tell", "Really cancel?", (b) => act(b, () => api("POST", `/api/tells/${encodeURIComponent(tell.id)}/cancel`, {}), () => "cancelled"), { class: "danger" }) : null),
    h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("div", { class: "msg question" }, h("div", { class: "who" }, who(tell.from_team)), h("div", { class: "text" }, tell.message)),
    steps,
    notices.map((n) => h("div", { class: "note warn" }, n)),
    running ? h("div", { class: "msg answer live" }, h("div", { class: "who" }, tell.to_team,
      tell.status === "awaiting_approval"
        ? h("span", { class: "waiting-approval", "data-waiting-approval": "" }, "waiting for your approval")
        : h("span", { class: "typing", "aria-hidden": "true" })),
      h("div", { class: "text", "data-live-answer": "", "aria-live": "polite" }, open.text || "")) : null,
    !running && !open.steps.length && tell.text ? h("div", { class: "msg answer" }, h("div", { class: "who" }, tell.to_team), h("div", { class: "text" }, tell.text)) : null,
    tell.error ? h("div", { class: "note warn" }, tell.error) : null,
    open.error ? h("p", { class: "error" }, open.error) : null);
}

function approvalFor(tellId) {
  const waiting = [...state.approvals.values()].filter((a) => a.tell_id === tellId);
  if (waiting.length) return waiting.map((a) => approvalCard(a, { compact: true }));
  const decided = state.decided.find((a) => a.tell_id === tellId);
  return decided ? h("div", { class: "muted small" }, decisionText(decided)) : null;
}

function decisionText(a) {
  const by = a.decided_by ? ` by ${a.decided_by}` : "";
  const reason = a.reason ? `: ${a.reason}` : "";
  return `${a.status}${a.remembered ? " and remembered" : ""}${by}${reason}`;
}

// The inbox: approvals and pending questions.

function inboxView() {
  const waiting = [...state.approvals.values()].sort((a, b) => a.created_at - b.created_at);
  const asked = [...state.questions.values()].sort((a, b) => a.created_at - b.created_at);
  const label = waitingLabel(waiting.length, asked.length);
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Inbox"), h("span", { class: "muted", "data-inbox-label": "" }, label ? `${label} waiting` : "nothing waits")),
    h("h2", {}, "Approvals"),
    waiting.length ? h("div", { class: "approvals" }, waiting.map((a) => approvalCard(a))) : h("p", { class: "muted" }, "No tool use waits for your decision."),
    h("h2", { class: "gap" }, "Questions"),
    asked.length ? h("div", { class: "approvals" }, asked.map(questionCard))
      : h("p", { class: "muted" }, "No team waits for an answer. (A question appears here when a team's answer asks something and nobody was waiting for it.)"),
    state.closedQuestions.length ? section("Recently closed questions", h("ul", { class: "decided" }, state.closedQuestions.map(closedQuestion))) : null,
    rulesSection(),
    state.decided.length ? section("Recently decided", h("ul", { class: "decided" }, state.decided.map((a) =>
      h("li", {}, pill(a.status), " ", h("strong", {}, a.tool_name), " ", pairLabel(a.from_team, a.to_team), " ",
        h("span", { class: "muted" }, `${decisionText(a)} · ${ago(a.decided_at)}`))))) : null);
}

function approvalCard(a, { compact = false } = {}) {
  const reasonId = `reason-${a.id}`;
  const decide = (verb, body, done) => (e) => act(e.currentTarget, () => api("POST", `/api/approvals/${encodeURIComponent(a.id)}/${verb}`, body), () => done);
  if (a.kind === "input") return teamColor(inputCard(a, decide, { compact }), (state.status.teams.find((t) => t.name === a.to_team) || {}).color);
  // In a conversation the tool call above already shows what it wants to run.
  return teamColor(h("article", { class: `card approval${compact ? " compact" : ""}`, "data-approval": a.id },
    compact ? null : h("header", {},
      h("h3", {}, a.tool_name),
      h("span", {}, pairLabel(a.from_team, a.to_team)),
      h("span", { class: "muted", title: `denied by itself at ${clock(a.expires_at)} if nobody decides` }, `asked ${ago(a.created_at)}`)),
    compact ? null : toolInput(a.tool_name, a.input),
    compact ? null : h("p", { class: "small" }, h("a", { href: `#/tells/${a.tell_id}` }, "the tell that asks")),
    h("div", { class: "decide" },
      h("button", { type: "button", class: "primary", "data-action": "approve", onclick: decide("approve", {}, "approved") }, "Approve"),
      h("button", { type: "button", "data-action": "remember", title: "Allow this request of this pair from now on", onclick: decide("approve", { remember: true }, "approved and remembered") }, "Approve & remember"),
      h("input", { id: reasonId, type: "text", placeholder: "reason (optional)", "aria-label": "Reason for denying", "data-keep": reasonId }),
      h("button", { type: "button", class: "danger", "data-action": "deny", onclick: (e) => decide("deny", { reason: document.getElementById(reasonId).value }, "denied")(e) }, "Deny"))),
    (state.status.teams.find((t) => t.name === a.to_team) || {}).color);
}

function questionCard(x) {
  const fieldId = `answer-${x.id}`;
  const answer = async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const text = form.querySelector("textarea").value;
    if (!text.trim()) {
      flash("Write the answer first.");
      return;
    }
    const reply = await act(form.querySelector("[data-action=answer]"),
      () => api("POST", `/api/questions/${encodeURIComponent(x.id)}/answer`, { text, timeout_ms: -1 }),
      (r) => `answered: ${r.question.to_team} goes on in the same conversation`);
    if (!reply) return;
    form.querySelector("textarea").value = "";
    state.questions.delete(x.id);
    state.closedQuestions = [reply.question, ...state.closedQuestions.filter((c) => c.id !== x.id)].slice(0, 20);
    state.tells.set(reply.tell.id, tellInfo(reply.tell));
    state.touched.add(reply.tell.id);
    render();
  };
  const dismiss = (e) => act(e.currentTarget, async () => {
    const reply = await api("POST", `/api/questions/${encodeURIComponent(x.id)}/dismiss`, {});
    state.questions.delete(x.id);
    state.closedQuestions = [reply.question, ...state.closedQuestions.filter((c) => c.id !== x.id)].slice(0, 20);
    render();
  }, () => "dismissed");
  return teamColor(h("form", { class: "card approval question-card", "data-question": x.id, autocomplete: "off", onsubmit: answer },
    h("header", {},
      h("h3", {}, `${x.to_team} asks ${who(x.from_team)}`),
      h("span", { class: "muted", title: `expires ${clock(x.expires_at)}` }, `asked ${ago(x.created_at)}`)),
    h("div", { class: "msg question-text" }, h("div", { class: "text" }, x.question)),
    x.context && x.context !== x.question ? h("details", { class: "tool-result" }, h("summary", {}, "the end of the answer"), h("pre", {}, x.context)) : null,
    h("p", { class: "small" }, h("a", { href: `#/tells/${x.tell_id}` }, "the tell that asked"),
      h("span", { class: "muted" }, ` · your answer is the next tell of ${pairLabel(x.from_team, x.to_team)}, in the same conversation`)),
    h("textarea", {
      id: fieldId, name: "text", rows: 2, placeholder: "Your answer… (Ctrl+Enter sends)", "aria-label": "Answer", "data-keep": fieldId,
      onkeydown: (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.currentTarget.form.requestSubmit(); } },
    }),
    h("div", { class: "decide" },
      h("button", { type: "submit", class: "primary", "data-action": "answer" }, "Answer"),
      h("button", { type: "button", "data-action": "dismiss", title: "Close it without answering", onclick: dismiss }, "Dismiss"))),
    (state.status.teams.find((t) => t.name === x.to_team) || {}).color);
}

function closedQuestion(x) {
  return h("li", { "data-closed-question": x.id }, pill(x.status), " ", h("strong", {}, `${x.to_team} asked ${who(x.from_team)}`), " ",
    firstLine(x.question, 80), " ",
    h("span", { class: "muted" }, [x.closed_by ? `by ${x.closed_by}` : "", ago(x.closed_at)].filter(Boolean).join(" · ")),
    x.answer_tell_id ? [" ", h("a", { href: `#/tells/${x.answer_tell_id}`, "data-answer-tell": x.answer_tell_id }, "the answer's tell")] : null);
}

function rulesSection() {
  if (!state.rules) return null;
  if (!state.rules.length) return section("Remembered rules", h("p", { class: "muted" }, "None: 'Approve & remember' adds one."));
  return section("Remembered rules", scrolls(h("table", { class: "rules" },
    h("thead", {}, h("tr", {}, ["pair", "tool", "rule", "since", ""].map((c) => h("th", {}, c)))),
    h("tbody", {}, state.rules.map((r) => h("tr", { "data-rule": r.id },
      h("td", {}, pairLabel(r.from_team, r.to_team)), h("td", {}, r.tool_name || ""), h("td", {}, h("code", {}, r.rule || r.pattern || JSON.stringify(r.input || {}))),
      h("td", {}, ago(r.created_at)),
      h("td", {}, confirmButton("Forget", "Forget it?", (b) => act(b, async () => {
        await api("POST", `/api/approvals/rules/${encodeURIComponent(r.id)}/forget`, {});
        await loadApprovals();
        renderView();
      }, () => "forgotten")))))))));
}

// Notifications.

function notificationsView() {
  const items = [...state.notifications].sort((a, b) => b.created_at - a.created_at);
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Notifications"), h("span", { class: "muted" }, "tells stored to be delivered later")),
    items.length ? scrolls(h("table", { class: "list notifications" },
      h("thead", {}, h("tr", {}, ["status", "pair", "message", "created", "attempts", "tell"].map((c) => h("th", {}, c)))),
      h("tbody", {}, items.map((n) => h("tr", { "data-notification": n.id },
        h("td", {}, pill(n.status), n.error ? h("div", { class: "muted small" }, n.error) : null),
        h("td", {}, pairLabel(n.from_team, n.to_team)),
        h("td", {}, firstLine(n.message, 80)),
        h("td", { title: clock(n.created_at) }, ago(n.created_at), h("div", { class: "muted small" }, `expires ${clock(n.expires_at)}`)),
        h("td", { class: "num" }, String(n.attempts || 0)),
        h("td", {}, n.tell_id ? h("a", { href: `#/tells/${n.tell_id}` }, shortId(n.tell_id)) : "–"))))))
      : h("p", { class: "muted" }, "No notifications. Send one with 'deliver later' on the Tells page, or iris tell TEAM MESSAGE --persist."));
}

// Costs: the ledger, summed.

function costsView() {
  const costs = state.costs;
  if (costs.key !== `${costs.by}/${costs.since}` && !costs.loading) loadCosts().then(renderView);
  const change = () => {
    costs.by = document.getElementById("costs-by").value;
    costs.since = document.getElementById("costs-since").value;
    renderView(); // which loads them
  };
  const reply = costs.reply;
  const cells = (row) => [row.key || "–", String(row.tells || 0), money(row.cost_usd || 0), (row.input_tokens || 0).toLocaleString(),
    (row.output_tokens || 0).toLocaleString(), (row.cache_read_tokens || 0).toLocaleString(), (row.cache_creation_tokens || 0).toLocaleString(),
    String(row.num_turns || 0), seconds((row.duration_ms || 0) / 1000) || "0 ms"];
  const head = [reply ? reply.by : costs.by, "tells", "cost", "input", "output", "cache read", "cache write", "turns", "claude time"];
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Costs"), h("span", { class: "muted" }, "what claude reported for each tell, summed")),
    h("div", { class: "filters", role: "search" },
      h("label", { for: "costs-by" }, "By"),
      h("select", { id: "costs-by", onchange: change }, ["team", "pair", "day", "chain"].map((b) => h("option", { value: b, selected: b === costs.by }, b))),
      h("label", { for: "costs-since" }, "Since"),
      h("select", { id: "costs-since", onchange: change }, Object.entries(SINCE).map(([v, label]) => h("option", { value: v, selected: v === costs.since }, label)))),
    costs.error ? h("p", { class: "error" }, costs.error) : null,
    !reply ? h("p", { class: "muted" }, "Loading…")
      : !reply.rows.length ? h("p", { class: "muted" }, `No costs recorded in ${SINCE[costs.since]}.`)
        : scrolls(h("table", { class: "list costs", "data-costs-by": reply.by },
          h("thead", {}, h("tr", {}, head.map((c, i) => h("th", { class: i ? "num" : null }, c)))),
          h("tbody", {}, [...reply.rows, reply.total].map((row, index) => h("tr", { "data-cost-key": index === reply.rows.length ? "total" : row.key, class: index === reply.rows.length ? "total" : null },
            cells(index === reply.rows.length ? { ...row, key: "total" } : row).map((c, i) => h("td", { class: i ? "num" : null }, c))))))));
}

// Ask Iris: a conversation with iris-agent (it reads Iris's data, changes nothing).

function askView() {
  const ask = state.ask;
  const submit = async (event) => {
    event.preventDefault();
    const field = event.currentTarget.querySelector("textarea");
    const question = field.value.trim();
    if (!question || ask.thinking) return;
    ask.turns.push({ who: "you", text: question });
    ask.thinking = true;
    field.value = "";
    renderView();
    try {
      const reply = await api("POST", "/api/ask", { question, new_session: ask.fresh });
      ask.fresh = false;
      ask.session = reply.session_id || ask.session;
      ask.turns.push({ who: "iris", text: reply.text, tools: [...new Set(reply.tools || [])], cost: reply.cost_usd, error: Boolean(reply.is_error) });
    } catch (error) {
      ask.turns.push({ who: "iris", text: error.message, error: true });
    } finally {
      ask.thinking = false;
      renderView();
    }
  };
  const restart = () => {
    state.ask = { turns: [], thinking: false, session: "", fresh: true };
    renderView();
  };
  return h("div", { class: "conversation ask", "data-ask": ask.thinking ? "thinking" : "idle" },
    h("div", { class: "view-head" }, h("h1", {}, "Ask Iris"), h("span", { class: "spacer" }),
      ask.turns.length && !ask.thinking ? h("button", { type: "button", onclick: restart }, "New conversation") : null),
    h("p", { class: "muted" }, "iris-agent answers from Iris's own data: teams, tells, approvals, questions, costs. It only reads; it changes nothing. It keeps one conversation with you, the same as 'iris ask'."),
    ask.turns.map((turn) => turn.who === "you"
      ? h("div", { class: "msg question" }, h("div", { class: "who" }, "you"), h("div", { class: "text" }, turn.text))
      : h("div", { class: `msg answer${turn.error ? " failed" : ""}`, "data-ask-answer": "" },
        h("div", { class: "who" }, "Iris", turn.error ? h("span", { class: "error" }, "error") : null),
        h("div", { class: "text" }, turn.text),
        turn.tools && turn.tools.length ? h("div", { class: "muted small", "data-ask-tools": "" }, `looked at: ${turn.tools.join(", ")}`) : null,
        turn.cost ? h("div", { class: "muted small" }, money(turn.cost)) : null)),
    ask.thinking ? h("div", { class: "msg answer live" }, h("div", { class: "who" }, "Iris", h("span", { class: "thinking-now", role: "status" }, "thinking…"))) : null,
    h("form", { class: "send panel", autocomplete: "off", onsubmit: submit },
      h("textarea", {
        name: "question", rows: 2, placeholder: "Which teams are busy? What did backend last say? (Ctrl+Enter asks)", "aria-label": "Question for Iris", "data-keep": "ask",
        onkeydown: (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.currentTarget.form.requestSubmit(); } },
      }),
      h("div", { class: "row end" }, h("button", { type: "submit", class: "primary", disabled: ask.thinking }, ask.thinking ? "Thinking…" : "Ask"))));
}

// Health.

function healthView() {
  const s = state.status;
  const live = claudeRunning(s.processes);
  const rows = [
    ["version", s.daemon_version],
    ["pid", String(s.pid)],
    ["up for", seconds(Date.now() / 1000 - s.started_at)],
    s.memory_rss ? ["memory (irisd)", bytes(s.memory_rss)] : null,
    s.children_rss ? ["memory (claude processes)", bytes(s.children_rss)] : null,
    ["approvals waiting", String(s.pending_approvals || 0)],
    ["questions waiting", String(state.questions.size)],
    ["claude", s.claude_version ? `${s.claude_version}${s.claude_version === s.claude_tested ? " (the version Iris is tested with)" : ` (Iris is tested with ${s.claude_tested})`}` : `none found (Iris is tested with ${s.claude_tested})`],
    ["socket", s.socket_path],
    ["config", s.config_path],
  ].filter(Boolean);
  const errors = s.recent_errors || [];
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Health"), pill(state.connected ? "live" : "away"),
      h("span", { class: "spacer" }),
      h("button", { type: "button", "data-action": "reload", title: "Read config.yaml again, without a restart",
        onclick: (e) => act(e.currentTarget, () => api("POST", "/api/reload", {}), (r) => r.changes.join("; ")) }, "Reload config")),
    s.config_problem ? h("p", { class: "note warn", "data-config-problem": "" }, `config.yaml was not reloaded: ${s.config_problem}`) : null,
    h("p", { class: "meter-label", id: "meter-label" }, `claude processes running: ${live} of ${s.max_processes} (maxProcesses)`),
    h("div", { class: "meter", role: "meter", "aria-valuemin": 0, "aria-valuemax": s.max_processes, "aria-valuenow": live, "aria-labelledby": "meter-label" },
      h("span", { class: "fill", "data-fill": String(Math.round((100 * live) / Math.max(1, s.max_processes))) })),
    h("dl", { class: "facts wide" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    healthFindings(s),
    section("Recent errors in the log",
      errors.length ? h("ul", { class: "log" }, errors.map((e) => h("li", { class: `lvl-${e.level}` },
        h("span", { class: "muted" }, clock(e.at)), " ", h("strong", {}, e.level), " ", e.message)))
        : h("p", { class: "muted" }, "None since irisd started.")));
}

// The health monitor's findings (irisd/health): each with its evidence and the command that fixes it,
// and what irisd did itself (settings.health.recover).
function healthFindings(s) {
  const findings = s.findings || [];
  const recoveries = s.recoveries || [];
  return h("div", { "data-health": "" },
    section("Findings",
      findings.length ? h("ul", { class: "log" }, findings.map((f) => h("li", { class: `lvl-${f.severity}`, "data-finding": f.kind },
        h("strong", {}, f.severity), " ", f.summary,
        f.evidence ? h("div", { class: "muted" }, f.evidence) : null,
        f.fix ? h("div", {}, "fix: ", h("code", {}, f.fix)) : null)))
        : h("p", { class: "muted" }, "Nothing is wrong that irisd can see.")),
    recoveries.length ? section("What irisd did itself",
      h("ul", { class: "log" }, recoveries.map((r) => h("li", {},
        h("span", { class: "muted" }, clock(r.at)), " ", r.action.replace("_", " "), " ", h("strong", {}, r.subject), ": ", r.outcome,
        h("div", { class: "muted" }, r.reason))))) : null);
}

// --- browser notifications (README "Notifications") ---------------------------------
// Only while the page is in the background: a person looking at it sees the Inbox.
// Each thing once per NOTIFY_EVERY_MS (a flapping finding is said once), at most
// NOTIFY_PER_MINUTE a minute. The browser asks for permission at the first click.

const NOTIFY_EVERY_MS = 10 * 60 * 1000;
const NOTIFY_PER_MINUTE = 10;
const notified = new Map(); // key -> when it was said
let notifiedRecently = [];

function notifyPerson(key, title, body) {
  if (!("Notification" in window) || Notification.permission !== "granted" || !document.hidden) return;
  const now = Date.now();
  const said = notified.get(key);
  if (said !== undefined && now - said < NOTIFY_EVERY_MS) return;
  notifiedRecently = notifiedRecently.filter((at) => now - at < 60_000);
  if (notifiedRecently.length >= NOTIFY_PER_MINUTE) return;
  notifiedRecently.push(now);
  notified.set(key, now);
  if (notified.size > 1000) for (const [k, at] of notified) if (now - at >= NOTIFY_EVERY_MS) notified.delete(k);
  const shown = new Notification(title, { body, tag: key });
  shown.onclick = () => { window.focus(); shown.close(); };
}

function notifyFindings(findings) {
  for (const f of findings || []) {
    if (f.severity === "warning" || f.severity === "error") notifyPerson(`health:${f.kind}:${f.subject}`, `Iris health: ${f.summary}`, f.fix || "");
  }
}

document.addEventListener("click", () => {
  if ("Notification" in window && Notification.permission === "default") Notification.requestPermission();
}, { once: true });

// --- start -------------------------------------------------------------------------

window.addEventListener("hashchange", () => {
  const box = document.getElementById("flash");
  if (box) box.hidden = true;
  const { view, arg } = route();
  if (!(view === "tells" && arg)) state.open = null;
  renderView();
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && state.open) location.hash = "#/tells";
});

// The meter's width: CSP allows no style attribute, so it is set through the CSSOM.
new MutationObserver(() => {
  for (const fill of document.querySelectorAll("[data-fill]")) fill.style.width = `${fill.dataset.fill}%`;
}).observe(document.body, { childList: true, subtree: true });

setInterval(() => { if (state.connected && !document.hidden) renderTimes(); }, 15000);
// A running tell's "running for" counts up every second, in place (no render: focus and
// selection stay where they are).
setInterval(() => {
  for (const since of document.querySelectorAll("[data-running-since]")) {
    // The same words as at render: from submission, with the time it was queued.
    since.textContent = duration({ created_at: Number(since.dataset.created), started_at: Number(since.dataset.runningSince) });
  }
}, 1000);
function renderTimes() {
  // Only relative times change with the clock; a render keeps them fresh without any request.
  if (!document.activeElement || !document.getElementById("main").contains(document.activeElement)) renderView();
}

render();
connect();
