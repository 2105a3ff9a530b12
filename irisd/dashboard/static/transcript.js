// A tell's steps rendered for people: the answer, tool calls with their inputs and results,
// approvals, notices, timings, cost. irisd reads claude's stream-json lines into steps
// (protocol/transcript.py, GET /api/tells/{id}/transcript?steps=true): the same steps that
// `iris cache read` and the MCP tool team_cache_read render, so this file never parses a line.

import { h, money, seconds } from "./dom.js";

/** A tool's input, readable: a command, a diff, a file, else the JSON. */
export function toolInput(tool, input) {
  input = input || {};
  if (typeof input.command === "string") {
    return h("div", { class: "tool-input" },
      input.description ? h("div", { class: "muted" }, input.description) : null,
      h("pre", { class: "cmd" }, `$ ${input.command}`));
  }
  if (typeof input.old_string === "string" || Array.isArray(input.edits)) {
    const edits = Array.isArray(input.edits) ? input.edits : [input];
    return h("div", { class: "tool-input" },
      h("div", { class: "file" }, input.file_path || ""),
      edits.map((edit) => diff(edit.old_string || "", edit.new_string || "")));
  }
  if (typeof input.content === "string" && typeof input.file_path === "string") {
    return h("div", { class: "tool-input" },
      h("div", { class: "file" }, `${input.file_path} (new content)`),
      diff("", input.content));
  }
  if (typeof input.file_path === "string" && Object.keys(input).length === 1) {
    return h("div", { class: "tool-input" }, h("div", { class: "file" }, input.file_path));
  }
  return h("div", { class: "tool-input" }, h("pre", { class: "json" }, JSON.stringify(input, null, 2)));
}

/** Lines removed, then lines added: what an edit changes, shown as a diff. */
export function diff(before, after) {
  const lines = [];
  const old = before ? before.split("\n") : [];
  const now = after ? after.split("\n") : [];
  // Drop the common head and tail so that only what changed stands out.
  let head = 0;
  while (head < old.length && head < now.length && old[head] === now[head]) head += 1;
  let tail = 0;
  while (tail < old.length - head && tail < now.length - head &&
         old[old.length - 1 - tail] === now[now.length - 1 - tail]) tail += 1;
  for (const line of old.slice(Math.max(0, head - 2), head)) lines.push(h("span", { class: "ctx" }, `  ${line}\n`));
  for (const line of old.slice(head, old.length - tail)) lines.push(h("span", { class: "del" }, `- ${line}\n`));
  for (const line of now.slice(head, now.length - tail)) lines.push(h("span", { class: "add" }, `+ ${line}\n`));
  for (const line of old.slice(old.length - tail, old.length - tail + 2)) lines.push(h("span", { class: "ctx" }, `  ${line}\n`));
  return h("pre", { class: "diff" }, lines);
}

function stamp(at, start) {
  return start && at ? h("span", { class: "at", title: new Date(at * 1000).toLocaleString() }, `+${seconds(Math.max(0, at - start))}`) : null;
}

/**
 * The steps of a tell, as elements. With ``withText`` false the assistant's text is
 * left out (a running tell shows its answer in one streaming bubble instead).
 * ``approvalFor(tellId, toolName, input)`` may return an element to show with a
 * permission request (the inbox card, with its buttons, while it waits).
 */
export function renderSteps(tell, steps, { withText = true, approvalFor = () => null } = {}) {
  const out = [];
  const tools = new Map();
  const start = tell.started_at || tell.created_at;
  for (const step of steps) {
    const at = stamp(step.at, start);
    if (step.kind === "text") {
      if (withText) out.push(h("div", { class: "msg answer" }, h("div", { class: "who" }, tell.to_team, at), h("div", { class: "text" }, step.text)));
    } else if (step.kind === "thinking") {
      out.push(h("details", { class: "step thinking" }, h("summary", {}, "thinking", at), h("div", { class: "text" }, step.text)));
    } else if (step.kind === "tool") {
      const result = h("div", { class: "tool-result pending" }, "running…");
      const card = h("div", { class: "step tool", "data-tool": step.tool || "" },
        h("div", { class: "step-head" }, h("span", { class: "tool-name" }, step.tool || "tool"), at),
        toolInput(step.tool, step.input),
        result);
      tools.set(step.tool_id || `#${tools.size}`, { card, result, name: step.tool, at: step.at, done: false });
      out.push(card);
    } else if (step.kind === "result") {
      const tool = tools.get(step.tool_id);
      const took = tool && tool.at ? ` after ${seconds(step.at - tool.at)}` : "";
      const text = step.text || "";
      const body = h("details", { class: `tool-result${step.is_error ? " error" : ""}`, open: text.length < 400 },
        h("summary", {}, `${step.is_error ? "failed" : "result"}${took}`), h("pre", {}, text || "(no output)"));
      if (tool) {
        tool.result.replaceWith(body);
        tool.done = true;
      } else {
        out.push(h("div", { class: "step tool" }, body));
      }
    } else if (step.kind === "approval") {
      // Shown in the card of the tool call it is about, before the call's result.
      const waiting = [...tools.values()].filter((t) => !t.done && t.name === step.tool);
      const tool = tools.get(step.tool_id) || waiting[waiting.length - 1];
      const asked = h("div", { class: "approval-step" },
        h("div", { class: "step-head" }, h("span", {}, `asked permission to use ${step.tool || "a tool"}`), at),
        approvalFor(tell.id, step.tool, step.input));
      if (tool) tool.card.insertBefore(asked, tool.result);
      else out.push(h("div", { class: "step approval" }, asked));
    } else if (step.kind === "start") {
      out.push(h("div", { class: "note" }, step.text, at));
    } else if (step.kind === "notice") {
      out.push(h("div", { class: "note warn" }, step.text, at));
    } else if (step.kind === "end") {
      const parts = [];
      if (step.duration_s !== undefined) parts.push(seconds(step.duration_s));
      if (step.turns !== undefined) parts.push(`${step.turns} turn${step.turns === 1 ? "" : "s"}`);
      if (step.cost_usd !== undefined) parts.push(money(step.cost_usd));
      if (step.input_tokens !== undefined) parts.push(`${step.input_tokens} in / ${step.output_tokens ?? 0} out tokens`);
      out.push(h("div", { class: `note result${step.is_error ? " warn" : ""}` },
        step.is_error ? `ended with an error: ${step.answer || step.subtype}` : "done", parts.length ? ` · ${parts.join(" · ")}` : "", at));
    }
    // "other" steps (a line Iris does not know) are for `iris cache read`, not this page.
  }
  return out;
}
