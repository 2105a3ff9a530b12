// The API and the live events: every fetch through /api, and /api/events pushing what changed.
//
// When the socket opens (first time or after irisd restarted) everything is fetched
// again, since events may have been missed meanwhile. Nothing polls.

import { sessionKey } from "./dom.js";
import { notifyFindings, notifyPerson } from "./notify.js";
import { flash, render, renderChrome, renderView, setLoggedOut } from "./page.js";
import { FINAL, state, TELL_LIMIT, tellInfo } from "./state.js";
import * as sessionsStats from "./views/sessions_stats.js";

// --- the API ---------------------------------------------------------------------

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export async function api(method, path, body) {
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
    state.sessions = new Map([...active.sessions, ...archived.sessions].map((s) => [sessionKey(s), s]));
  } catch (err) {
    state.sessions = state.sessions || new Map();  // a reader may not list them: the pairs show without
  }
}

export async function loadTells() {
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

export async function loadApprovals() {
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

export const SINCE = { all: "all time", today: "today", "7d": "the last 7 days", "30d": "the last 30 days" };

function sinceEpoch(since) {
  if (since === "today") return new Date().setHours(0, 0, 0, 0) / 1000; // local midnight, as 'iris costs --since today'
  const days = { "7d": 7, "30d": 30 }[since];
  return days ? Date.now() / 1000 - days * 86400 : 0;
}

export async function loadCosts() {
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

export async function loadNotifications() {
  const reply = await api("GET", `/api/notifications${q({ all: "true" })}`);
  state.notifications = reply.notifications;
}

export async function loadOpen() {
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
export function soon(what, load) {
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

export function connect() {
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
  sessionsStats.onEvent(event);
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
        notifyPerson(`approval:${approval.id}`, approvalTitle(approval), `iris approve ${approval.id} (or deny it in the Inbox)`);
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

// What a pending approval asks, in a line (irisd/notify/gate.py says the same for the notifier).
function approvalTitle(a) {
  switch (a.kind) {
    case "agent": return `iris-agent proposes to ${a.summary}`;
    case "input": return `${a.to_team}'s MCP server ${a.tool_name} asks for your input`;
    case "budget": return `a chain through ${a.to_team} reached its budget`;
    default: return `${a.to_team} asks to use ${a.tool_name}`;
  }
}
