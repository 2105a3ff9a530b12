// The Health view.

import { bytes, clock, h, pill, seconds } from "../dom.js";
import { api } from "../api.js";
import { act, section } from "../page.js";
import { claudeRunning, state } from "../state.js";

export function healthView() {
  const s = state.status;
  const live = claudeRunning(s.processes);
  const rows = [
    ["version", s.daemon_version],
    ["pid", String(s.pid)],
    ["up for", seconds(Date.now() / 1000 - s.started_at)],
    s.memory_rss ? ["memory (irisd)", bytes(s.memory_rss)] : null,
    s.children_rss ? ["memory (claude processes)", bytes(s.children_rss)] : null,
    ["approvals waiting", String(s.pending_approvals || 0)],
    ["questions waiting", String(state.questions.size)],
    ["claude", s.claude_version ? `${s.claude_version}${s.claude_version === s.claude_tested ? " (the version Iris is tested with)" : ` (Iris is tested with ${s.claude_tested})`}` : `none found (Iris is tested with ${s.claude_tested})`],
    ["socket", s.socket_path],
    ["config", s.config_path],
  ].filter(Boolean);
  const errors = s.recent_errors || [];
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Health"), pill(state.connected ? "live" : "away"),
      h("span", { class: "spacer" }),
      h("button", { type: "button", "data-action": "reload", title: "Read config.yaml again, without a restart",
        onclick: (e) => act(e.currentTarget, () => api("POST", "/api/reload", {}), (r) => r.changes.join("; ")) }, "Reload config")),
    s.config_problem ? h("p", { class: "note warn", "data-config-problem": "" }, `config.yaml was not reloaded: ${s.config_problem}`) : null,
    h("p", { class: "meter-label", id: "meter-label" }, `claude processes running: ${live} of ${s.max_processes} (maxProcesses)`),
    h("div", { class: "meter", role: "meter", "aria-valuemin": 0, "aria-valuemax": s.max_processes, "aria-valuenow": live, "aria-labelledby": "meter-label" },
      h("span", { class: "fill", "data-fill": String(Math.round((100 * live) / Math.max(1, s.max_processes))) })),
    h("dl", { class: "facts wide" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    healthFindings(s),
    section("Recent errors in the log",
      errors.length ? h("ul", { class: "log" }, errors.map((e) => h("li", { class: `lvl-${e.level}` },
        h("span", { class: "muted" }, clock(e.at)), " ", h("strong", {}, e.level), " ", e.message)))
        : h("p", { class: "muted" }, "None since irisd started.")));
}

// The health monitor's findings (irisd/health): each with its evidence and the command that fixes it,
// and what irisd did itself (settings.health.recover).
function healthFindings(s) {
  const findings = s.findings || [];
  const recoveries = s.recoveries || [];
  return h("div", { "data-health": "" },
    section("Findings",
      findings.length ? h("ul", { class: "log" }, findings.map((f) => h("li", { class: `lvl-${f.severity}`, "data-finding": f.kind },
        h("strong", {}, f.severity), " ", f.summary,
        f.evidence ? h("div", { class: "muted" }, f.evidence) : null,
        f.fix ? h("div", {}, "fix: ", h("code", {}, f.fix)) : null)))
        : h("p", { class: "muted" }, "Nothing is wrong that irisd can see.")),
    recoveries.length ? section("What irisd did itself",
      h("ul", { class: "log" }, recoveries.map((r) => h("li", {},
        h("span", { class: "muted" }, clock(r.at)), " ", r.action.replace("_", " "), " ", h("strong", {}, r.subject), ": ", r.outcome,
        h("div", { class: "muted" }, r.reason))))) : null);
}
