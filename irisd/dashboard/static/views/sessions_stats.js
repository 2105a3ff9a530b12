// The Sessions view: each pair's conversation over its life (GET /api/sessions/stats), a
// chart of tells and cost per day, and a map of who talks to whom.
//
// How it works: the figures are read when the view opens and again (at most every
// 300 ms) after a tell ends. The pictures are inline SVG built through the DOM (never
// markup, no library, no CDN): the page works offline and under its CSP. The map's teams
// sit on a circle; a pair is an arrow from the asking team to the answering one, as thick
// as its share of the tells, and lit while a tell runs on it (the page's live state: the
// tells and processes the events keep up to date). Remote teams (an A2A agent, a team on
// another irisd) are drawn dashed.
//
// The page gives this module what it shares (setup): its API call, its action helpers and
// its render; the view reads the page's `state` for teams, sessions, tells and processes.

import { ago, clock, h, money, pairLabel, seconds, who } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const MAX_DAYS = 60; // the chart shows the most recent days, at most this many
const RUNNING = new Set(["running", "awaiting_approval"]);
const FINAL = new Set(["completed", "timed_out", "interrupted", "failed"]);

const stats = { reply: null, loading: false, error: "", timer: null };
let page = { api: null, act: null, confirmButton: null, renderView: () => {} };

/** The page's helpers: { api, act, confirmButton, renderView }. */
export function setup(helpers) {
  page = { ...page, ...helpers };
}

async function load() {
  stats.loading = true;
  try {
    stats.reply = await page.api("GET", "/api/sessions/stats");
    stats.error = "";
  } catch (error) {
    stats.error = error.message;
  } finally {
    stats.loading = false;
  }
}

const shown = () => /^#\/sessions(\?|\/|$)/.test(location.hash);

// Read while shown only; the figures are read again each time the view opens.
function reloadSoon() {
  if (stats.timer || !shown()) return;
  stats.timer = setTimeout(async () => {
    stats.timer = null;
    await load();
    if (shown()) page.renderView();
  }, 300);
}

window.addEventListener("hashchange", () => {
  if (shown()) load().then(() => { if (shown()) page.renderView(); });
});

/** A live event: a tell that ended changed its pair's figures. */
export function onEvent(event) {
  if (event.type === "tell_state" && FINAL.has(event.status)) reloadSoon();
  else if (event.type === "session_event") reloadSoon();
}

// --- SVG, built safely -----------------------------------------------------------

const SVG_ATTRS = /^(class|viewBox|x|y|x1|y1|x2|y2|cx|cy|r|d|width|height|rx|role|text-anchor|dominant-baseline|stroke-width|marker-end|markerWidth|markerHeight|refX|refY|orient|markerUnits|id|aria-[a-z-]+|data-[a-z-]+)$/;

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (!SVG_ATTRS.test(key)) throw new Error(`attribute ${key} is not allowed`);
    el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// --- the figures ---------------------------------------------------------------------

/** Every day from the first to the last with figures (the last MAX_DAYS), summed over pairs. */
export function perDay(days) {
  const sums = new Map();
  for (const d of days) {
    const sum = sums.get(d.day) || { tells: 0, cost: 0 };
    sum.tells += d.tells || 0;
    sum.cost += d.cost_usd || 0;
    sums.set(d.day, sum);
  }
  if (!sums.size) return [];
  const keys = [...sums.keys()].sort();
  const [y, m, d] = keys[keys.length - 1].split("-").map(Number);
  const last = new Date(y, m - 1, d);
  const [fy, fm, fd] = keys[0].split("-").map(Number);
  const first = new Date(fy, fm - 1, fd);
  const out = [];
  for (let at = new Date(last); at >= first && out.length < MAX_DAYS; at.setDate(at.getDate() - 1)) {
    const key = `${at.getFullYear()}-${String(at.getMonth() + 1).padStart(2, "0")}-${String(at.getDate()).padStart(2, "0")}`;
    out.unshift({ day: key, ...(sums.get(key) || { tells: 0, cost: 0 }) });
  }
  return out;
}

function barChart(title, days, value, label, kind) {
  const width = 640, height = 150, top = 18, bottom = 22;
  const most = Math.max(...days.map(value), 0);
  const step = width / Math.max(days.length, 1);
  const bars = days.map((d, i) => {
    const v = value(d);
    const tall = most ? Math.max(v ? 2 : 0, ((height - top - bottom) * v) / most) : 0;
    return s("rect", {
      class: "bar", x: (i * step + step * 0.15).toFixed(2), y: (height - bottom - tall).toFixed(2),
      width: Math.max(step * 0.7, 1).toFixed(2), height: tall.toFixed(2), "data-day": d.day, [`data-${kind}`]: String(v),
    }, s("title", {}, `${d.day}: ${label(v)}`));
  });
  const ends = days.length ? [
    s("text", { class: "axis", x: 0, y: height - 6 }, days[0].day),
    days.length > 1 ? s("text", { class: "axis", x: width, y: height - 6, "text-anchor": "end" }, days[days.length - 1].day) : null,
  ] : [];
  return h("figure", { class: "chart", "data-chart": kind },
    h("figcaption", {}, title, h("span", { class: "muted small" }, most ? ` · most ${label(most)} a day` : "")),
    s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title },
      s("line", { class: "baseline", x1: 0, y1: height - bottom, x2: width, y2: height - bottom }),
      s("text", { class: "axis", x: 0, y: 12 }, label(most)), bars, ends));
}

// --- the map ---------------------------------------------------------------------------

function teamMap(pairs, state) {
  const kinds = new Map(state.status.teams.map((t) => [t.name, t.kind || ""]));
  const names = [...new Set([...state.status.teams.map((t) => t.name), ...pairs.flatMap((p) => [who(p.from_team), p.to_team])])];
  if (pairs.some((p) => p.from_team === null || p.from_team === undefined)) {
    names.splice(names.indexOf("you"), 1);
    names.unshift("you"); // the person, at the top
  }
  const size = 420, middle = size / 2, ring = names.length > 1 ? size / 2 - 60 : 0;
  const at = new Map(names.map((name, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / names.length;
    return [name, { x: middle + ring * Math.cos(angle), y: middle + ring * Math.sin(angle) }];
  }));
  const busy = running(state);
  const most = Math.max(...pairs.map((p) => p.tells || 0), 1);
  const edges = pairs.filter((p) => p.from_team !== p.to_team).map((p) => {
    const from = at.get(who(p.from_team)), to = at.get(p.to_team);
    const label = pairLabel(p.from_team, p.to_team);
    const lit = busy.has(label);
    // A gentle curve, to the right of the way it goes: A→B and B→A stay apart.
    const dx = to.x - from.x, dy = to.y - from.y, length = Math.hypot(dx, dy) || 1;
    const bend = 0.15 * length, cx = (from.x + to.x) / 2 - (dy / length) * bend, cy = (from.y + to.y) / 2 + (dx / length) * bend;
    const r = 22; // stop at the node's edge
    const ex = to.x - ((to.x - cx) / Math.hypot(to.x - cx, to.y - cy)) * r, ey = to.y - ((to.y - cy) / Math.hypot(to.x - cx, to.y - cy)) * r;
    return s("path", {
      class: lit ? "edge lit" : "edge", d: `M ${from.x.toFixed(1)} ${from.y.toFixed(1)} Q ${cx.toFixed(1)} ${cy.toFixed(1)} ${ex.toFixed(1)} ${ey.toFixed(1)}`,
      "stroke-width": (1.5 + (6 * (p.tells || 0)) / most).toFixed(2), "marker-end": "url(#arrow)",
      "data-edge": label, "data-tells": String(p.tells || 0), "data-lit": lit ? "true" : "false",
    }, s("title", {}, `${label}: ${p.tells || 0} tell${p.tells === 1 ? "" : "s"}, ${money(p.cost_usd || 0) || "$0.00"}${lit ? " — a tell runs now" : ""}`));
  });
  const nodes = names.map((name) => {
    const { x, y } = at.get(name);
    const kind = name === "you" ? "person" : kinds.get(name) || "";
    const remote = kind === "a2a" || kind === "mesh";
    return s("g", { class: `node${remote ? " remote" : ""}${name === "you" ? " person" : ""}`, "data-node": name, "data-kind": kind },
      s("circle", { cx: x.toFixed(1), cy: y.toFixed(1), r: 20 }),
      s("text", { x: x.toFixed(1), y: (y + 36).toFixed(1), "text-anchor": "middle" }, remote ? `${name} (${kind === "a2a" ? "A2A" : "mesh"})` : name),
      s("title", {}, remote ? `${name}: ${kind === "a2a" ? "an A2A agent" : "a team on another irisd"}` : name === "you" ? "you (the person)" : name));
  });
  return h("figure", { class: "chart map", "data-chart": "map" },
    h("figcaption", {}, "Who talks to whom", h("span", { class: "muted small" }, " · arrows as thick as their tells; lit while a tell runs; dashed: remote")),
    s("svg", { viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": "Who talks to whom" },
      s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 12, markerHeight: 12, markerUnits: "userSpaceOnUse", orient: "auto" },
        s("path", { class: "arrowhead", d: "M 0 0 L 10 5 L 0 10 z" }))),
      edges, nodes));
}

/** The pairs a tell runs on now ("you → backend"), from the page's live state. */
function running(state) {
  const busy = new Set();
  for (const t of state.tells.values()) if (RUNNING.has(t.status)) busy.add(pairLabel(t.from_team, t.to_team));
  for (const p of state.status.processes) if (p.state === "processing") busy.add(pairLabel(p.from_team, p.to_team));
  return busy;
}

// --- the view --------------------------------------------------------------------------

function archiveButton(p, session) {
  if (!session || !page.act) return null;
  const base = `/api/teams/${encodeURIComponent(p.to_team)}/session`;
  const from = p.from_team ? { from_team: p.from_team } : {};
  const label = pairLabel(p.from_team, p.to_team);
  if (session.status === "archived") {
    return h("button", { type: "button", "data-restore": label,
      onclick: (e) => page.act(e.currentTarget, () => page.api("POST", `${base}/restore`, from), () => `${label} is restored`) }, "Restore");
  }
  return page.confirmButton("Archive", "Archive it?",
    (b) => page.act(b, () => page.api("POST", `${base}/archive`, from), () => `${label} is archived`), { "data-archive": label });
}

export function sessionsView(state) {
  if (!stats.reply && !stats.loading && !stats.error) load().then(page.renderView);
  const reply = stats.reply;
  const head = h("div", { class: "view-head" }, h("h1", {}, "Sessions"),
    h("span", { class: "muted" }, "each pair's conversation over its life, from the cost ledger"));
  if (!reply) return h("div", {}, head, stats.error ? h("p", { class: "error" }, stats.error) : h("p", { class: "muted" }, "Loading…"));
  const days = perDay(reply.days);
  const sessions = state.sessions || new Map();
  const columns = ["pair", "tells", "msgs", "cost", "input", "output", "first used", "last used", "lifetime", "compactions", "mean", "p95", ""];
  const rows = reply.pairs.map((p) => {
    const session = sessions.get(pairLabel(p.from_team, p.to_team));
    const status = (session && session.status) || p.status || "";
    return h("tr", { "data-stats-pair": pairLabel(p.from_team, p.to_team) },
      h("td", {}, pairLabel(p.from_team, p.to_team), status && status !== "active" ? h("div", { class: "muted small", "data-stats-status": status }, status) : null),
      h("td", { class: "num", "data-tells": String(p.tells || 0) }, String(p.tells || 0)),
      h("td", { class: "num" }, String(p.messages || 0)),
      h("td", { class: "num", "data-cost-usd": String(p.cost_usd || 0) }, money(p.cost_usd || 0)),
      h("td", { class: "num" }, (p.input_tokens || 0).toLocaleString()),
      h("td", { class: "num" }, (p.output_tokens || 0).toLocaleString()),
      h("td", { title: clock(p.first_used_at) }, ago(p.first_used_at)),
      h("td", { title: clock(p.last_used_at) }, ago(p.last_used_at)),
      h("td", { class: "num" }, p.first_used_at ? seconds(p.lifetime_s || 0) || "0 ms" : "–"),
      h("td", { class: "num" }, String(p.compactions || 0)),
      h("td", { class: "num" }, p.tells ? seconds((p.mean_tell_ms || 0) / 1000) : "–"),
      h("td", { class: "num" }, p.tells ? seconds((p.p95_tell_ms || 0) / 1000) : "–"),
      h("td", { class: "actions" }, archiveButton(p, session)));
  });
  return h("div", {}, head,
    stats.error ? h("p", { class: "error" }, stats.error) : null,
    !reply.pairs.length ? h("p", { class: "muted" }, "No conversations yet: the first tell of a pair starts one.") : [
      h("div", { class: "charts" },
        barChart("Tells per day", days, (d) => d.tells, (v) => `${v} tell${v === 1 ? "" : "s"}`, "tells"),
        barChart("Cost per day", days, (d) => d.cost, (v) => money(v) || "$0.00", "cost"),
        teamMap(reply.pairs, state)),
      h("section", { class: "panel" }, h("h2", {}, "Pairs, the most active first"),
        h("div", { class: "table-scroll" }, h("table", { class: "list stats" },
          h("thead", {}, h("tr", {}, columns.map((c, i) => h("th", { class: i && i < 12 && ![6, 7].includes(i) ? "num" : null }, c)))),
          h("tbody", {}, rows)))),
    ]);
}
