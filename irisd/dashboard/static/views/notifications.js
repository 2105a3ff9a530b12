// The Notifications view: tells stored to be delivered later.

import { ago, clock, firstLine, h, pairLabel, pill, shortId } from "../dom.js";
import { scrolls } from "../page.js";
import { state } from "../state.js";

export function notificationsView() {
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
