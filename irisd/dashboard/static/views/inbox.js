// The Inbox: approvals and pending questions.

import { ago, clock, firstLine, h, money, pairLabel, pill, teamColor, who } from "../dom.js";
import { toolInput } from "../transcript.js";
import { agentProposal, agentVerdict } from "./agent.js";
import { inputCard } from "./input_form.js";
import { api, loadApprovals } from "../api.js";
import { act, confirmButton, flash, render, renderView, scrolls, section, waitingLabel } from "../page.js";
import { state, tellInfo } from "../state.js";

export function decisionText(a) {
  const by = a.decided_by ? ` by ${a.decided_by}` : "";
  const reason = a.reason ? `: ${a.reason}` : "";
  return `${a.status}${a.remembered ? " and remembered" : ""}${by}${reason}`;
}

export function inboxView() {
  const waiting = [...state.approvals.values()].sort((a, b) => a.created_at - b.created_at);
  const asked = [...state.questions.values()].sort((a, b) => a.created_at - b.created_at);
  const label = waitingLabel(waiting.length, asked.length);
  return h("div", {},
    h("div", { class: "view-head" }, h("h1", {}, "Inbox"), h("span", { class: "muted", "data-inbox-label": "" }, label ? `${label} waiting` : "nothing waits")),
    h("h2", {}, "Approvals"),
    waiting.length ? h("div", { class: "approvals" }, waiting.map((a) => approvalCard(a))) : h("p", { class: "muted" }, "No tool use waits for your decision."),
    h("h2", { class: "gap" }, "Questions"),
    asked.length ? h("div", { class: "approvals" }, asked.map(questionCard))
      : h("p", { class: "muted" }, "No team waits for an answer. (A question appears here when a team's answer asks something and nobody was waiting for it.)"),
    state.closedQuestions.length ? section("Recently closed questions", h("ul", { class: "decided" }, state.closedQuestions.map(closedQuestion))) : null,
    rulesSection(),
    state.decided.length ? section("Recently decided", h("ul", { class: "decided" }, state.decided.map((a) =>
      h("li", {}, pill(a.status), " ", h("strong", {}, a.tool_name), " ", pairLabel(a.from_team, a.to_team), " ",
        h("span", { class: "muted" }, `${decisionText(a)} · ${ago(a.decided_at)}`))))) : null);
}

export function approvalCard(a, { compact = false } = {}) {
  const reasonId = `reason-${a.id}`;
  const decide = (verb, body, done) => (e) => act(e.currentTarget, () => api("POST", `/api/approvals/${encodeURIComponent(a.id)}/${verb}`, body), () => done);
  const color = (state.status.teams.find((t) => t.name === a.to_team) || {}).color;
  if (a.kind === "input") return teamColor(inputCard(a, decide, { compact }), color);
  if (a.kind === "budget") return teamColor(budgetCard(a, decide, { compact }), color);
  // In a conversation the tool call above already shows what it wants to run.
  return teamColor(h("article", { class: `card approval${compact ? " compact" : ""}`, "data-approval": a.id },
    compact ? null : h("header", {},
      h("h3", {}, a.tool_name),
      h("span", {}, pairLabel(a.from_team, a.to_team)),
      h("span", { class: "muted", title: `denied by itself at ${clock(a.expires_at)} if nobody decides` }, `asked ${ago(a.created_at)}`)),
    compact ? null : a.kind === "agent" ? agentProposal(a) : toolInput(a.tool_name, a.input),
    compact || a.kind === "agent" ? null : h("p", { class: "small" }, h("a", { href: `#/tells/${a.tell_id}` }, "the tell that asks")),
    h("div", { class: "decide" },
      h("button", { type: "button", class: "primary", "data-action": "approve", onclick: decide("approve", {}, "approved") }, "Approve"),
      a.kind === "agent" ? null : h("button", { type: "button", "data-action": "remember", title: "Allow this request of this pair from now on", onclick: decide("approve", { remember: true }, "approved and remembered") }, "Approve & remember"),
      h("input", { id: reasonId, type: "text", placeholder: "reason (optional)", "aria-label": "Reason for denying", "data-keep": reasonId }),
      h("button", { type: "button", class: "danger", "data-action": "deny", onclick: (e) => decide("deny", { reason: document.getElementById(reasonId).value }, "denied")(e) }, "Deny"))),
    (state.status.teams.find((t) => t.name === a.to_team) || {}).color);
}

// A chain of nested tells reached settings.budget.chainUsd (askToExceed): may it go on? Said in
// words (how much more, for which next tell); decided once, never remembered.
function budgetCard(a, decide, { compact = false } = {}) {
  const more = a.input && typeof a.input.more_usd === "number" ? money(a.input.more_usd) : "more";
  const next = a.input && a.input.next_team ? ` (its next tell goes to ${a.input.next_team})` : "";
  return h("article", { class: `card approval budget${compact ? " compact" : ""}`, "data-approval": a.id },
    h("header", {},
      h("h3", {}, "A chain reached its budget"),
      compact ? null : h("span", {}, pairLabel(a.from_team, a.to_team)),
      h("span", { class: "muted", title: `stopped by itself at ${clock(a.expires_at)} if nobody decides` }, `asked ${ago(a.created_at)}`)),
    h("div", { class: "msg question-text" }, h("div", { class: "text", "data-budget-message": "" }, a.message)),
    h("p", { class: "small", "data-budget-allows": "" },
      `Continue lets the chain spend up to ${more} more${next}; Stop refuses its next tell.`),
    compact ? null : h("p", { class: "small" }, h("a", { href: `#/tells/${a.tell_id}` }, "the tell that asks")),
    h("div", { class: "decide" },
      h("button", { type: "button", class: "primary", "data-action": "approve", onclick: decide("approve", {}, "the chain goes on") }, "Continue"),
      h("button", { type: "button", class: "danger", "data-action": "deny", onclick: decide("deny", {}, "the chain stops") }, "Stop")));
}

function questionCard(x) {
  const fieldId = `answer-${x.id}`;
  const answer = async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const text = form.querySelector("textarea").value;
    if (!text.trim()) {
      flash("Write the answer first.");
      return;
    }
    const reply = await act(form.querySelector("[data-action=answer]"),
      () => api("POST", `/api/questions/${encodeURIComponent(x.id)}/answer`, { text, timeout_ms: -1 }),
      (r) => `answered: ${r.question.to_team} goes on in the same conversation`);
    if (!reply) return;
    form.querySelector("textarea").value = "";
    state.questions.delete(x.id);
    state.closedQuestions = [reply.question, ...state.closedQuestions.filter((c) => c.id !== x.id)].slice(0, 20);
    state.tells.set(reply.tell.id, tellInfo(reply.tell));
    state.touched.add(reply.tell.id);
    render();
  };
  const dismiss = (e) => act(e.currentTarget, async () => {
    const reply = await api("POST", `/api/questions/${encodeURIComponent(x.id)}/dismiss`, {});
    state.questions.delete(x.id);
    state.closedQuestions = [reply.question, ...state.closedQuestions.filter((c) => c.id !== x.id)].slice(0, 20);
    render();
  }, () => "dismissed");
  return teamColor(h("form", { class: "card approval question-card", "data-question": x.id, autocomplete: "off", onsubmit: answer },
    h("header", {},
      h("h3", {}, `${x.to_team} asks ${who(x.from_team)}`),
      h("span", { class: "muted", title: `expires ${clock(x.expires_at)}` }, `asked ${ago(x.created_at)}`)),
    h("div", { class: "msg question-text" }, h("div", { class: "text" }, x.question)),
    agentVerdict(x),
    x.context && x.context !== x.question ? h("details", { class: "tool-result" }, h("summary", {}, "the end of the answer"), h("pre", {}, x.context)) : null,
    h("p", { class: "small" }, h("a", { href: `#/tells/${x.tell_id}` }, "the tell that asked"),
      h("span", { class: "muted" }, ` · your answer is the next tell of ${pairLabel(x.from_team, x.to_team)}, in the same conversation`)),
    h("textarea", {
      id: fieldId, name: "text", rows: 2, placeholder: "Your answer… (Ctrl+Enter sends)", "aria-label": "Answer", "data-keep": fieldId,
      onkeydown: (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); e.currentTarget.form.requestSubmit(); } },
    }),
    h("div", { class: "decide" },
      h("button", { type: "submit", class: "primary", "data-action": "answer" }, "Answer"),
      h("button", { type: "button", "data-action": "dismiss", title: "Close it without answering", onclick: dismiss }, "Dismiss"))),
    (state.status.teams.find((t) => t.name === x.to_team) || {}).color);
}

function closedQuestion(x) {
  return h("li", { "data-closed-question": x.id }, pill(x.status), " ", h("strong", {}, `${x.to_team} asked ${who(x.from_team)}`), " ",
    firstLine(x.question, 80), " ",
    h("span", { class: "muted" }, [x.closed_by ? `by ${x.closed_by}` : "", ago(x.closed_at)].filter(Boolean).join(" · ")),
    x.answer_tell_id ? [" ", h("a", { href: `#/tells/${x.answer_tell_id}`, "data-answer-tell": x.answer_tell_id }, "the answer's tell")] : null);
}

function rulesSection() {
  if (!state.rules) return null;
  if (!state.rules.length) return section("Remembered rules", h("p", { class: "muted" }, "None: 'Approve & remember' adds one."));
  return section("Remembered rules", scrolls(h("table", { class: "rules" },
    h("thead", {}, h("tr", {}, ["pair", "tool", "rule", "since", ""].map((c) => h("th", {}, c)))),
    h("tbody", {}, state.rules.map((r) => h("tr", { "data-rule": r.id },
      h("td", {}, pairLabel(r.from_team, r.to_team)), h("td", {}, r.tool_name || ""), h("td", {}, h("code", {}, r.rule || r.pattern || JSON.stringify(r.input || {}))),
      h("td", {}, ago(r.created_at)),
      h("td", {}, confirmButton("Forget", "Forget it?", (b) => act(b, async () => {
        await api("POST", `/api/approvals/rules/${encodeURIComponent(r.id)}/forget`, {});
        await loadApprovals();
        renderView();
      }, () => "forgotten")))))))));
}
