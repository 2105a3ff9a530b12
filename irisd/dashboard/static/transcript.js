// A tell's transcript (the raw stream-json lines claude printed) rendered for people:
// the answer, tool calls with their inputs and results, approvals, notices, timings, cost.

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

function parse(raw) {
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

function resultText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (part && part.type === "text" ? part.text : part && part.type ? `[${part.type}]` : "")).join("\n");
  }
  return content === undefined ? "" : JSON.stringify(content);
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
export function renderEntries(tell, entries, { withText = true, approvalFor = () => null } = {}) {
  const out = [];
  const tools = new Map();
  const start = tell.started_at || tell.created_at;
  for (const entry of entries) {
    const line = parse(entry.raw);
    if (!line || typeof line !== "object") continue;
    const type = line.type;
    if (type === "assistant") {
      for (const block of (line.message && line.message.content) || []) {
        if (block.type === "text" && withText && block.text) {
          out.push(h("div", { class: "msg answer" }, h("div", { class: "who" }, tell.to_team, stamp(entry.at, start)), h("div", { class: "text" }, block.text)));
        } else if (block.type === "thinking" && block.thinking) {
          out.push(h("details", { class: "step thinking" }, h("summary", {}, "thinking", stamp(entry.at, start)), h("div", { class: "text" }, block.thinking)));
        } else if (block.type === "tool_use") {
          const result = h("div", { class: "tool-result pending" }, "running…");
          const card = h("div", { class: "step tool", "data-tool": block.name || "" },
            h("div", { class: "step-head" }, h("span", { class: "tool-name" }, block.name || "tool"), stamp(entry.at, start)),
            toolInput(block.name, block.input),
            result);
          tools.set(block.id, { card, result, name: block.name, at: entry.at, done: false });
          out.push(card);
        }
      }
    } else if (type === "user") {
      const content = line.message && line.message.content;
      for (const block of Array.isArray(content) ? content : []) {
        if (block.type !== "tool_result") continue;
        const text = resultText(block.content);
        const tool = tools.get(block.tool_use_id);
        const took = tool && tool.at ? ` after ${seconds(entry.at - tool.at)}` : "";
        const body = h("details", { class: `tool-result${block.is_error ? " error" : ""}`, open: text.length < 400 },
          h("summary", {}, `${block.is_error ? "failed" : "result"}${took}`), h("pre", {}, text || "(no output)"));
        if (tool) {
          tool.result.replaceWith(body);
          tool.done = true;
        } else {
          out.push(h("div", { class: "step tool" }, body));
        }
      }
    } else if (type === "control_request" && line.request && line.request.subtype === "can_use_tool") {
      // Shown in the card of the tool call it is about, before the call's result.
      const req = line.request;
      const waiting = [...tools.values()].filter((t) => !t.done && t.name === req.tool_name);
      const tool = tools.get(req.tool_use_id) || waiting[waiting.length - 1];
      const step = h("div", { class: "approval-step" },
        h("div", { class: "step-head" }, h("span", {}, `asked permission to use ${req.tool_name || "a tool"}`), stamp(entry.at, start)),
        approvalFor(tell.id, req.tool_name, req.input));
      if (tool) tool.card.insertBefore(step, tool.result);
      else out.push(h("div", { class: "step approval" }, step));
    } else if (type === "system") {
      if (line.subtype === "init") {
        out.push(h("div", { class: "note" }, `claude ${line.claude_code_version || ""} started`.replace("  ", " "),
          line.model ? ` · model ${line.model}` : "", stamp(entry.at, start)));
      } else if (line.subtype === "api_retry") {
        const cause = line.error_status ? `HTTP ${line.error_status}` : String(line.error || "an error");
        out.push(h("div", { class: "note warn" }, `claude retries the Anthropic API after ${cause} (attempt ${line.attempt ?? "?"})`, stamp(entry.at, start)));
      }
    } else if (type === "result") {
      const parts = [];
      if (line.duration_ms !== undefined) parts.push(seconds(line.duration_ms / 1000));
      if (line.num_turns !== undefined) parts.push(`${line.num_turns} turn${line.num_turns === 1 ? "" : "s"}`);
      if (line.total_cost_usd !== undefined) parts.push(money(line.total_cost_usd));
      const usage = line.usage || {};
      if (usage.input_tokens !== undefined) parts.push(`${usage.input_tokens} in / ${usage.output_tokens ?? 0} out tokens`);
      out.push(h("div", { class: `note result${line.is_error ? " warn" : ""}` },
        line.is_error ? `ended with an error: ${line.result || line.subtype}` : "done", parts.length ? ` · ${parts.join(" · ")}` : "", stamp(entry.at, start)));
    }
  }
  return out;
}
