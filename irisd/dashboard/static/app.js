// The Iris dashboard: one page, live over /api/events, every action through /api.
//
// How it works: `state` (state.js) holds what the daemon told us (status, tells, approvals,
// ...). The WebSocket (api.js) pushes events; each one updates `state` and re-renders the
// visible view (a few events also refetch one listing, e.g. the pairs after a tell changes
// state). Each view is a module of views/; this one routes, renders and starts the page.

import { clear, duration, h } from "./dom.js";
import { api, connect } from "./api.js";
import { act, confirmButton, renderChrome, setRenderer } from "./page.js";
import { state } from "./state.js";
import { askView } from "./views/ask.js";
import { conversationView } from "./views/conversation.js";
import { costsView } from "./views/costs.js";
import { healthView } from "./views/health.js";
import { inboxView } from "./views/inbox.js";
import { notificationsView } from "./views/notifications.js";
import * as sessionsStats from "./views/sessions_stats.js";
import { teamsView } from "./views/teams.js";
import { tellsView } from "./views/tells.js";

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
    const views = { teams: teamsView, tells: tellsView, approvals: inboxView, notifications: notificationsView, costs: costsView, ask: askView, health: healthView, sessions: () => sessionsStats.sessionsView(state) };
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

function loggedOutView() {
  return h("div", { class: "empty" },
    h("h1", {}, "Not logged in"),
    h("p", {}, "Open the dashboard with:"),
    h("pre", { class: "cmd" }, "iris dashboard"),
    h("p", { class: "muted" }, "It opens this page with a login link (or prints it with --print)."));
}

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

setRenderer({ render, renderView });
sessionsStats.setup({ api, act, confirmButton, renderView });
render();
connect();
