// The messages of a conversation: questions, answers as sanitized markdown, citation chips, the "how this answer
// was made" panel, and a streaming answer that shows tokens as they arrive. Later additions (follow-up
// suggestions, feedback, context requests) hang off `AnswerView` as extra sections of the article.
import { $, h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

function contextName(context) {
  return context ? `${context.type} ${context.id}` : "";
}

/** "Focused on folder legal; earlier contexts: usecase nda." from an answer's metadata. */
export function contextStatement(focus, historical = []) {
  const parts = [focus ? `Focused on ${contextName(focus)}` : "No focus context"];
  if (historical.length) parts.push(`earlier contexts: ${historical.map(contextName).join(", ")}`);
  return `${parts.join("; ")}.`;
}

function stepText(event) {
  if (event.type === "tool") {
    const took = event.duration_ms ? ` (${Math.round(event.duration_ms)} ms)` : "";
    const error = event.error ? `: ${event.error}` : "";
    return `Tool ${event.name} — ${event.status}${took}${error}`;
  }
  return event.message || event.step;
}

export class AnswerView {
  constructor({ onCitation }) {
    this.onCitation = onCitation;
    this.citations = [];
    this.text = "";
    this.steps = h("ol", { class: "steps" });
    this.how = h(
      "details",
      { class: "how" },
      h("summary", {}, "How this answer was made"),
      this.steps,
    );
    this.body = h("div", { class: "answer-body streaming", "aria-busy": "true" });
    this.chips = h("ul", { class: "citations", "aria-label": "Sources" });
    this.context = h("p", { class: "context-statement muted" });
    this.element = h("article", { class: "message assistant", "aria-label": "Answer" }, this.how, this.body,
      this.chips, this.context);
  }

  step(event) {
    this.steps.append(h("li", { class: `step step-${event.type}` }, stepText(event)));
  }

  /** A token goes straight into a text node: the answer is readable while it streams. */
  token(text) {
    this.text += text;
    if (!this.live) {
      this.live = document.createTextNode("");
      this.body.replaceChildren(this.live);
    }
    this.live.data = this.text;
  }

  citation(citation) {
    if (this.citations.some((known) => known.ref === citation.ref)) return;
    this.citations.push(citation);
    const number = this.citations.length;
    const label = citation.page ? `${citation.document}, p. ${citation.page}` : citation.document;
    const chip = h(
      "button",
      {
        type: "button",
        class: "citation-chip",
        title: citation.quote,
        dataset: { ref: citation.ref },
        onclick: (event) => this.onCitation(citation, event.currentTarget),
      },
      h("span", { class: "citation-number" }, String(number)),
      ` ${label}`,
    );
    this.chips.append(h("li", {}, chip));
  }

  error(message) {
    this.body.classList.remove("streaming");
    this.body.removeAttribute("aria-busy");
    this.body.append(h("p", { class: "error", role: "alert" }, message));
  }

  /** The final answer: markdown (sanitized), refs in the text turned into citation buttons. */
  finish(answer, metadata) {
    this.text = answer;
    this.body.classList.remove("streaming");
    this.body.removeAttribute("aria-busy");
    const fragment = renderMarkdown(answer);
    this.linkRefs(fragment);
    this.body.replaceChildren(fragment);
    if (metadata) this.context.textContent = contextStatement(metadata.focus_context, metadata.historical_contexts);
    if (!this.steps.children.length) this.how.hidden = true;
  }

  /** Follow-up questions the documents can answer, as chips that ask them. */
  suggest(suggestions, onAsk) {
    this.element.querySelector(".suggestions")?.remove();
    if (!suggestions?.length) return;
    const chips = suggestions.map((text) =>
      h("li", {}, h("button", { type: "button", class: "suggestion", onclick: () => onAsk(text) }, text)));
    this.element.append(h("ul", { class: "suggestions", "aria-label": "Suggested follow-up questions" }, ...chips));
  }

  /** Thumbs up and down for a stored answer; ``rated`` is the rating given before (reopened conversations). */
  rate(messageId, rated, onRate) {
    if (!messageId) return;
    this.element.querySelector(".feedback")?.remove();
    const buttons = [["up", "👍", "Helpful"], ["down", "👎", "Not helpful"]].map(([rating, icon, label]) =>
      h("button", {
        type: "button",
        class: `feedback-${rating}`,
        "aria-pressed": String(rated === rating),
        "aria-label": label,
        onclick: async (event) => {
          const pressed = event.currentTarget;
          await onRate(messageId, rating);
          for (const button of box.querySelectorAll("button")) button.setAttribute("aria-pressed", "false");
          pressed.setAttribute("aria-pressed", "true");
        },
      }, icon));
    const box = h("div", { class: "feedback", role: "group", "aria-label": "Rate this answer" }, ...buttons);
    this.element.append(box);
  }

  /** A context request card under this (paused) answer. */
  request(card) {
    this.body.classList.remove("streaming");
    this.body.removeAttribute("aria-busy");
    this.element.append(card.element);
  }

  /** Replace "[report.pdf::S3]" in text nodes by a button that opens that citation. */
  linkRefs(fragment) {
    if (!this.citations.length) return;
    const byRef = new Map(this.citations.map((citation, index) => [citation.ref, [citation, index + 1]]));
    const walker = document.createTreeWalker(fragment, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (const node of nodes) {
      const parts = node.data.split(/\[([^\]\n]+::S\d+)\]/);
      if (parts.length === 1) continue;
      const replaced = parts.map((part, index) => {
        if (index % 2 === 0 || !byRef.has(part)) return index % 2 === 0 ? part : `[${part}]`;
        const [citation, number] = byRef.get(part);
        return h(
          "button",
          {
            type: "button",
            class: "citation-inline",
            "aria-label": `Source ${number}: ${citation.document}`,
            onclick: (event) => this.onCitation(citation, event.currentTarget),
          },
          String(number),
        );
      });
      node.replaceWith(...replaced);
    }
  }
}

export class Messages {
  constructor({ onCitation, onRate }) {
    this.onCitation = onCitation;
    this.onRate = onRate;
    this.list = $("messages");
  }

  clear() {
    this.list.replaceChildren();
  }

  question(text, files = []) {
    const element = h(
      "article",
      { class: "message user", "aria-label": "Question" },
      h("p", {}, text),
      files.length ? h("p", { class: "muted files" }, `Files: ${files.join(", ")}`) : null,
    );
    this.list.append(element);
    element.scrollIntoView({ block: "end" });
  }

  answer() {
    const view = new AnswerView({ onCitation: this.onCitation });
    this.list.append(view.element);
    return view;
  }

  notice(text) {
    this.list.append(h("p", { class: "notice", role: "status" }, text));
  }

  /** A stored conversation: each user message then its answer. */
  history(messages) {
    this.clear();
    for (const message of messages) {
      if (message.role === "user") {
        this.question(message.content, message.blob_names);
        continue;
      }
      const view = this.answer();
      for (const call of message.tool_calls || []) view.step({ type: "tool", ...call });
      for (const citation of message.citations || []) view.citation(citation);
      view.finish(message.content, { focus_context: message.focus_context, historical_contexts: [] });
      if (this.onRate) view.rate(message.message_id, message.feedback?.rating, this.onRate);
    }
    this.list.lastElementChild?.scrollIntoView({ block: "end" });
  }
}
