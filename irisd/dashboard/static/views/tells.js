// The Tells view: send, filter, list.

import { ago, duration, firstLine, h, money, pairLabel, pill, teamColor } from "../dom.js";
import { api, loadNotifications, loadTells, soon } from "../api.js";
import { act, flash, renderView } from "../page.js";
import { FINAL, state, STATUSES, tellInfo } from "../state.js";

export function tellsView() {
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
