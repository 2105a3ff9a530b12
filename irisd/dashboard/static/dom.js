// Building DOM safely: every string becomes a text node or an attribute value, never
// markup. Nothing in the dashboard assigns innerHTML.

const SAFE_ATTRS = /^(class|id|href|title|type|name|value|placeholder|for|role|tabindex|rows|min|max|step|disabled|checked|selected|hidden|open|autocomplete|aria-[a-z-]+|data-[a-z-]+)$/;

/** h("div", {class: "x"}, "text", child, [more]) -> an element. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "href") {
      el.setAttribute("href", safeHref(String(value)));
    } else if (SAFE_ATTRS.test(key)) {
      el.setAttribute(key, value === true ? "" : String(value));
    } else {
      throw new Error(`attribute ${key} is not allowed`);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Only links inside the page (#/...): never javascript: or another origin. */
function safeHref(value) {
  return value.startsWith("#/") ? value : "#/";
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** A team's configured color, if it is one (it goes through CSSOM, never markup). */
export function teamColor(el, color) {
  if (color && /^[#a-zA-Z0-9(),.% -]{1,40}$/.test(color) && CSS.supports("color", color)) {
    el.style.setProperty("--team", color);
  }
  return el;
}

// --- formatting -------------------------------------------------------------------

export function who(team) {
  return team || "you";
}

export function pairLabel(from, to) {
  return `${who(from)} → ${to}`;
}

// A conversation of a pair: each thread has its own ("" the pair's default one).
export const sessionKey = (x) => `${pairLabel(x.from_team, x.to_team)}#${x.thread || ""}`;

// A pair's label with its thread, if it is not the default one.
export const threadLabel = (x) => pairLabel(x.from_team, x.to_team) + (x.thread ? ` #${x.thread}` : "");

export function ago(ts, now = Date.now() / 1000) {
  if (!ts) return "never";
  const s = Math.max(0, now - ts);
  if (s < 5) return "just now";
  if (s < 60) return `${Math.floor(s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function clock(ts) {
  if (!ts) return "";
  return new Date(ts * 1000).toLocaleString();
}

export function seconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function money(usd) {
  if (usd === null || usd === undefined) return "";
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function bytes(n) {
  if (!n) return "";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function firstLine(text, limit = 120) {
  const line = (text || "").trim().split("\n", 1)[0];
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

export function shortId(id) {
  return (id || "").slice(0, 8);
}

// How long a tell took (or has taken), from its submission, and how much of it queued.
export function duration(tell) {
  if (!tell.created_at) return "";
  const end = tell.finished_at || Date.now() / 1000;
  const took = seconds(end - tell.created_at);
  if (!tell.started_at) return `${took} queued`;
  const waited = tell.started_at - tell.created_at;
  return waited >= 1 ? `${took}, ${seconds(waited)} queued` : took;
}

const STATUS_WORDS = {
  awaiting_approval: "awaiting approval",
  timed_out: "timed out",
  in_progress: "in progress",
};

export function pill(status) {
  return h("span", { class: `pill s-${status}` }, STATUS_WORDS[status] || status);
}
