// An input request: one of a team's own MCP servers asks the person to fill in a form (MCP
// elicitation, passed on by the team's claude). The form is built from the server's
// requested_schema (a flat object of text, number, yes/no and choice fields); irisd checks
// the answer against it (protocol/forms.py), so a wrong one comes back as a flash and the
// form stays. Answer = POST .../approve {content}; Decline = POST .../deny. Every control has
// data-keep, so what the person typed survives the page's re-renders (app.js).

import { ago, clock, h, pairLabel } from "../dom.js";

/** The card of input request `a`; `decide(verb, body, done)` posts a decision (inbox.js). */
export function inputCard(a, decide, { compact = false } = {}) {
  const schema = a.schema || {};
  const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const names = Object.keys(properties);
  const fieldId = (name) => `input-${a.id}-${name}`;
  const submit = (event) => {
    event.preventDefault();
    const content = {};
    for (const name of names) {
      const value = readField(event.currentTarget, properties[name], fieldId(name));
      if (value !== undefined) content[name] = value;
    }
    decide("approve", { content }, "answered")({ currentTarget: event.currentTarget.querySelector("[data-action=answer]") });
  };
  return h("form", { class: `card approval input-request${compact ? " compact" : ""}`, "data-approval": a.id, autocomplete: "off", onsubmit: submit },
    h("header", {},
      h("h3", {}, `${a.tool_name} asks for your input`),
      compact ? null : h("span", {}, pairLabel(a.from_team, a.to_team)),
      h("span", { class: "muted", title: `declined by itself at ${clock(a.expires_at)} if nobody answers` }, `asked ${ago(a.created_at)}`)),
    h("div", { class: "msg question-text" }, h("div", { class: "text", "data-input-message": "" }, a.message || "(no message)")),
    names.map((name) => field(name, properties[name], required.has(name), fieldId(name))),
    compact ? null : h("p", { class: "small" }, h("a", { href: `#/tells/${a.tell_id}` }, "the tell that asks")),
    h("div", { class: "decide" },
      h("button", { type: "submit", class: "primary", "data-action": "answer" }, "Answer"),
      h("button", { type: "button", class: "danger", "data-action": "decline", onclick: decide("deny", {}, "declined") }, "Decline")));
}

function choices(spec) {
  if (Array.isArray(spec.enum)) return spec.enum.map(String);
  if (spec.items && Array.isArray(spec.items.enum)) return spec.items.enum.map(String);
  if (Array.isArray(spec.oneOf)) return spec.oneOf.map((c) => String(c.const));
  return [];
}

function field(name, spec, isRequired, id) {
  spec = spec && typeof spec === "object" ? spec : {};
  const label = `${spec.title || name}${isRequired ? " *" : ""}`;
  const hint = spec.description ? h("span", { class: "muted small" }, ` ${spec.description}`) : null;
  const options = choices(spec);
  let control;
  if (spec.type === "boolean") {
    control = h("input", { id, type: "checkbox", "data-field": name, "data-keep": id, checked: spec.default === true });
  } else if (spec.type === "array") {
    control = h("span", { id, "data-field": name }, options.map((option) =>
      h("label", { class: "choice" }, h("input", { type: "checkbox", value: option, "data-keep": `${id}-${option}` }), ` ${option} `)));
  } else if (options.length) {
    control = h("select", { id, "data-field": name, "data-keep": id },
      isRequired ? null : h("option", { value: "" }, "—"),
      options.map((option) => h("option", { value: option, selected: spec.default === option }, option)));
  } else {
    const numeric = spec.type === "number" || spec.type === "integer";
    control = h("input", {
      id, type: numeric ? "number" : "text", "data-field": name, "data-keep": id, step: spec.type === "integer" ? "1" : numeric ? "any" : undefined,
      min: spec.minimum, max: spec.maximum, value: spec.default,
    });
  }
  return h("p", { class: "input-field" }, h("label", { for: id }, label), " ", control, hint);
}

/** The field's value as the form's type; undefined when left empty (irisd says if it is required). */
function readField(form, spec, id) {
  spec = spec && typeof spec === "object" ? spec : {};
  const el = form.ownerDocument.getElementById(id);
  if (!el) return undefined;
  if (spec.type === "boolean") return el.checked;
  if (spec.type === "array") return [...el.querySelectorAll("input:checked")].map((box) => box.value);
  if (el.value === "") return undefined;
  if (spec.type === "number" || spec.type === "integer") return Number(el.value);
  return el.value;
}
