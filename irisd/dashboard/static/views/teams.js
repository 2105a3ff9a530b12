// The Teams view: every team, its pairs and their conversations.

import { ago, clock, firstLine, h, money, pairLabel, pill, shortId, teamColor, who } from "../dom.js";
import { api } from "../api.js";
import { act, confirmButton, scrolls } from "../page.js";
import { claudeRunning, state } from "../state.js";

// Each pair's conversation: how full it is, its compactions, whether it is archived.

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

export function teamsView() {
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
