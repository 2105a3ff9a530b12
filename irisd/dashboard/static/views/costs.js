// The Costs view: the ledger, summed.

import { h, money, seconds } from "../dom.js";
import { loadCosts, SINCE } from "../api.js";
import { renderView, scrolls } from "../page.js";
import { state } from "../state.js";

export function costsView() {
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
