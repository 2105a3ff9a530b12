// One tell's conversation.

import { clock, duration, h, money, pairLabel, pill, who } from "../dom.js";
import { renderSteps } from "../transcript.js";
import { api, loadOpen } from "../api.js";
import { act, confirmButton, renderView } from "../page.js";
import { FINAL, state } from "../state.js";
import { approvalCard, decisionText } from "./inbox.js";

export function conversationView(id) {
  if (!state.open || state.open.id !== id) {
    state.open = { id, tell: state.tells.get(id) || null, steps: [], text: "", pending: "", loading: true, error: "" };
    loadOpen().then(renderView);
  }
  const open = state.open;
  const tell = open.tell;
  const back = h("a", { class: "back", href: "#/tells" }, "← all tells");
  if (!tell) {
    return h("div", {}, back, h("p", { class: open.error ? "error" : "muted" }, open.error || "Loading…"));
  }
  const running = !FINAL.has(tell.status);
  const facts = [
    ["id", tell.id],
    ["created", clock(tell.created_at)],
    tell.started_at ? [running ? "running for" : "took", running ? h("span", { "data-running-since": String(tell.started_at), "data-created": String(tell.created_at) }, duration(tell)) : duration(tell)] : null,
    running && tell.phase && tell.phase.text ? ["waits for", tell.phase.text] : null,
    tell.cost_usd !== undefined && tell.cost_usd !== null ? ["cost", money(tell.cost_usd)] : null,
    tell.session_id ? ["session", tell.session_id] : null,
    tell.hops ? ["hops", String(tell.hops)] : null,
    tell.kind && tell.kind !== "tell" ? ["kind", tell.kind] : null,
  ].filter(Boolean);
  const notices = state.notices.get(id) || [];
  const steps = renderSteps(tell, open.steps, { withText: !running, approvalFor: approvalFor });
  return h("div", { class: "conversation", "data-tell": tell.id, "data-status": tell.status },
    back,
    h("div", { class: "view-head" },
      h("h1", {}, pairLabel(tell.from_team, tell.to_team)), pill(tell.status),
      h("span", { class: "spacer" }),
      running ? confirmButton("Cancel tell", "Really cancel?", (b) => act(b, () => api("POST", `/api/tells/${encodeURIComponent(tell.id)}/cancel`, {}), () => "cancelled"), { class: "danger" }) : null),
    h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("div", { class: "msg question" }, h("div", { class: "who" }, who(tell.from_team)), h("div", { class: "text" }, tell.message)),
    steps,
    notices.map((n) => h("div", { class: "note warn" }, n)),
    running ? h("div", { class: "msg answer live" }, h("div", { class: "who" }, tell.to_team,
      tell.status === "awaiting_approval"
        ? h("span", { class: "waiting-approval", "data-waiting-approval": "" }, "waiting for your approval")
        : h("span", { class: "typing", "aria-hidden": "true" })),
      h("div", { class: "text", "data-live-answer": "", "aria-live": "polite" }, open.text || "")) : null,
    !running && !open.steps.length && tell.text ? h("div", { class: "msg answer" }, h("div", { class: "who" }, tell.to_team), h("div", { class: "text" }, tell.text)) : null,
    tell.error ? h("div", { class: "note warn" }, tell.error) : null,
    open.error ? h("p", { class: "error" }, open.error) : null);
}

function approvalFor(tellId) {
  const waiting = [...state.approvals.values()].filter((a) => a.tell_id === tellId);
  if (waiting.length) return waiting.map((a) => approvalCard(a, { compact: true }));
  const decided = state.decided.find((a) => a.tell_id === tellId);
  return decided ? h("div", { class: "muted small" }, decisionText(decided)) : null;
}
