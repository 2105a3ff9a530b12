// Ask Iris: a conversation with iris-agent (it reads Iris's data; what it would change it proposes).

import { h, money } from "../dom.js";
import { api } from "../api.js";
import { renderView } from "../page.js";
import { state } from "../state.js";
import { agentStatsPanel } from "./agent.js";

export function askView() {
  const ask = state.ask;
  const submit = async (event) => {
    event.preventDefault();
    const field = event.currentTarget.querySelector("textarea");
    const question = field.value.trim();
    if (!question || ask.thinking) return;
    ask.turns.push({ who: "you", text: question });
    ask.thinking = true;
    field.value = "";
    renderView();
    try {
      const reply = await api("POST", "/api/ask", { question, new_session: ask.fresh });
      ask.fresh = false;
      ask.session = reply.session_id || ask.session;
      ask.turns.push({ who: "iris", text: reply.text, tools: [...new Set(reply.tools || [])], cost: reply.cost_usd, error: Boolean(reply.is_error) });
    } catch (error) {
      ask.turns.push({ who: "iris", text: error.message, error: true });
    } finally {
      ask.thinking = false;
      renderView();
    }
  };
  const restart = () => {
    state.ask = { turns: [], thinking: false, session: "", fresh: true };
    renderView();
  };
  return h("div", { class: "conversation ask", "data-ask": ask.thinking ? "thinking" : "idle" },
    h("div", { class: "view-head" }, h("h1", {}, "Ask Iris"), h("span", { class: "spacer" }),
      ask.turns.length && !ask.thinking ? h("button", { type: "button", onclick: restart }, "New conversation") : null),
    h("p", { class: "muted" }, "iris-agent answers from Iris's own data: teams, tells, approvals, questions, costs. What it would change (tell, wake, sleep, cancel, answer) it proposes: an approval in your inbox. It keeps one conversation with you, the same as 'iris ask'."),
    ask.turns.map((turn) => turn.who === "you"
      ? h("div", { class: "msg question" }, h("div", { class: "who" }, "you"), h("div", { class: "text" }, turn.text))
      : h("div", { class: `msg answer${turn.error ? " failed" : ""}`, "data-ask-answer": "" },
        h("div", { class: "who" }, "Iris", turn.error ? h("span", { class: "error" }, "error") : null),
        h("div", { class: "text" }, turn.text),
        turn.tools && turn.tools.length ? h("div", { class: "muted small", "data-ask-tools": "" }, `looked at: ${turn.tools.join(", ")}`) : null,
        turn.cost ? h("div", { class: "muted small" }, money(turn.cost)) : null)),
    ask.thinking ? h("div", { class: "msg answer live" }, h("div", { class: "who" }, "Iris", h("span", { class: "thinking-now", role: "status" }, "thinking…"))) : null,
    h("form", { class: "send panel", autocomplete: "off", onsubmit: submit },
      h("textarea", {
        name: "question", rows: 2, placeholder: "Which teams are busy? What did backend last say? (Ctrl+Enter asks)", "aria-label": "Question for Iris", "data-keep": "ask",
        onkeydown: (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.currentTarget.form.requestSubmit(); } },
      }),
      h("div", { class: "row end" }, h("button", { type: "submit", class: "primary", disabled: ask.thinking }, ask.thinking ? "Thinking…" : "Ask"))),
    agentStatsPanel(api, renderView));
}
