// iris-agent's part of the dashboard: what it proposes (an approval of kind "agent"), what its
// watcher made of a pending question, and its analytics (GET /api/agent/stats) under Ask.
import { h, money } from "../dom.js";

// An action iris-agent proposes: exactly what irisd will do once the person approves it.
export function agentProposal(a) {
  return h("div", { class: "agent-proposal", "data-agent-proposal": a.id },
    h("p", {}, "iris-agent proposes to ", h("strong", {}, a.summary)),
    h("p", { class: "muted small" }, "Nothing happens unless you approve it; denied, nothing is done."));
}

// What the watcher classified a pending question as (settings.agent.watch), if it looked.
export function agentVerdict(x) {
  const v = x.agent;
  if (!v) return null;
  const pct = `${Math.round((v.confidence || 0) * 100)}%`;
  const words = { person: "a question for you", team: `one ${x.from_team || "you"} can answer`, none: "not a question" };
  return h("p", { class: "small agent-verdict", "data-agent-verdict": v.classification },
    h("strong", {}, "iris-agent: "), `${words[v.classification] || v.classification} (${pct})`,
    v.reason ? ` · ${v.reason}` : "",
    v.suggestion ? h("span", {}, " · suggests: ", h("q", {}, v.suggestion), v.approval_id ? ` (approval ${v.approval_id} in the inbox)` : "") : null,
    v.said ? h("details", { class: "tool-result" }, h("summary", {}, "what iris-agent said"), h("pre", {}, v.said)) : null);
}

const usd = (value) => (value ? money(value) : "$0");
const stats = { reply: null, loading: false, error: "", at: 0 };
const FRESH_MS = 30_000;

// The analytics panel: detection, the watcher's verdicts against what became of the questions,
// the actions proposed and decided, and what iris-agent cost. Loads itself, then re-renders.
export function agentStatsPanel(api, rerender) {
  if (!stats.loading && Date.now() - stats.at > FRESH_MS) {
    stats.loading = true;
    api("GET", "/api/agent/stats")
      .then((reply) => { stats.reply = reply; stats.error = ""; })
      .catch((error) => { stats.error = error.message; })
      .finally(() => { stats.loading = false; stats.at = Date.now(); rerender(); });
  }
  const r = stats.reply;
  const table = (head, rows) => h("table", { class: "list" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, row.map((c) => h("td", {}, String(c)))))));
  return h("section", { class: "panel agent-stats", "data-agent-stats": r ? "loaded" : "loading" },
    h("h2", {}, "What iris-agent did"),
    stats.error ? h("p", { class: "error" }, stats.error) : null,
    !r ? h("p", { class: "muted" }, "loading…") : [
      h("p", { "data-detection": "" }, `${r.questions || 0} questions in ${r.tells_completed || 0} completed tells`,
        r.tells_completed ? ` (${Math.round((100 * (r.questions || 0)) / r.tells_completed)}%)` : ""),
      (r.classified || []).length
        ? table(["classified", "questions", "confidence", "answered", "dismissed", "expired", "pending"],
          r.classified.map((c) => [c.classification || "(no verdict)", c.count, `${Math.round(c.confidence * 100)}%`, c.answered, c.dismissed, c.expired, c.pending]))
        : h("p", { class: "muted" }, "The watcher has classified nothing (settings.agent.watch)."),
      (r.actions || []).length
        ? table(["action", "proposed", "allowed", "denied", "expired", "pending", "allowed by settings"],
          r.actions.map((a) => [a.tool, a.proposed, a.allowed, a.denied, a.expired, a.pending, a.automatic]))
        : h("p", { class: "muted" }, "No actions proposed yet."),
      h("p", { class: "muted small", "data-agent-cost": "" },
        `cost: ${usd(r.ask_usd)} for ${r.asks || 0} asks · ${usd(r.watch_usd)} watching · ${usd(r.tells_usd)} for its tells`),
    ]);
}
