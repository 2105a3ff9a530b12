// The page's chrome (connection, badge, title), its messages and buttons, and the render
// hooks the views call (app.js sets them: it knows the routes).

import { h } from "./dom.js";
import { state } from "./state.js";

// --- rendering: app.js knows the views, every module may ask for a render -----------

const renderer = { render: () => {}, renderView: () => {} };

/** app.js's: the chrome and the visible view (render), or only the view (renderView). */
export function setRenderer(functions) {
  Object.assign(renderer, functions);
}

export function render() {
  renderer.render();
}

export function renderView() {
  renderer.renderView();
}

// --- chrome: connection, badge, title ----------------------------------------------

export function setLoggedOut(value) {
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

export function renderChrome() {
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
export function waitingLabel(approvals, questions) {
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return [approvals ? plural(approvals, "approval") : "", questions ? plural(questions, "question") : ""].filter(Boolean).join(", ");
}

let flashTimer = null;
export function flash(text, kind = "error") {
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
export async function act(button, work, done) {
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
export function confirmButton(label, question, work, attrs = {}) {
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

export function section(title, ...children) {
  return h("section", { class: "panel" }, h("h2", {}, title), ...children);
}

// A table wider than its place scrolls inside it, never the page.
export function scrolls(table) {
  return h("div", { class: "table-scroll" }, table);
}
