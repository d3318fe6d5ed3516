// The messages of a conversation: questions, answers as sanitized markdown, citation chips, the "how this answer
// was made" panel, and a streaming answer that shows tokens as they arrive. Later additions (follow-up
// suggestions, feedback, context requests) hang off `AnswerView` as extra sections of the article.
import { $, h, icon, plain } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

// The names the user gave the contexts (from the "Also search" tree), keyed "type:id": a statement names a
// context as the picker does, not by its id. A context the page has no name for is named by its id.
const contextNames = new Map();
/** A context's type as a user says it ("use case", not the API's "usecase"). */
export const CONTEXT_KINDS = { organization: "organization", folder: "folder", usecase: "use case" };

function contextName(context) {
  if (!context) return "";
  const name = contextNames.get(`${context.type}:${context.id}`) || context.id;
  return `the ${CONTEXT_KINDS[context.type] || context.type} “${plain(name)}”`;
}

/** Learn the contexts' names (`[["folder:legal", "Legal"], …]`) and rename the statements already shown: the
 * tree arrives after a reopened conversation's answers are drawn. */
export function nameContexts(names) {
  for (const [key, name] of names) contextNames.set(key, name);
  for (const element of document.querySelectorAll(".context-statement")) {
    if (element.contexts) element.textContent = contextStatement(...element.contexts);
  }
}

/** "Also searched the folder “Legal”; earlier: the use case “NDA”." — empty when the answer used only the
 * chat's files (a statement under every answer saying "nothing" is noise). */
export function contextStatement(focus, historical = []) {
  const parts = [];
  if (focus) parts.push(`Also searched ${contextName(focus)}`);
  if (historical.length) parts.push(`earlier: ${historical.map(contextName).join(", ")}`);
  return parts.length ? `${parts.join("; ")}.` : "";
}

// A citation marker as the answer text carries it: "[lease.pdf::S3]", "[supplied::evidence-1]", or several
// refs in one bracket ("[a.pdf::S1; b.pdf::S4]"). The grammar is the server's (orc/graph/citations.py).
const MARKER = /\[([^[\]\n]*?::[^[\]\n]*?)\]/g;
const SPLIT_REFS = /\s*[;,]\s*(?=[^;,]*::)/;
// An unfinished marker at the end of streamed text ("… euros [lease.p"): hidden until it closes.
const OPEN_MARKER = /\[[^[\]\n]*$/;
const SUPPLIED = "supplied";
const squash = (text) => text.replace(/\s+/g, " ").trim();

/** The streamed text as a reader should see it: markers (finished or not) removed. */
export function withoutMarkers(text) {
  return text.replace(MARKER, "").replace(OPEN_MARKER, "");
}

/**
 * For each marker of `answer`, in order, the indexes of the citations it points at. Two sentences quoting one
 * span are two citations (one per quote): a marker takes the citation whose quote its sentence holds, else the
 * first of that span not taken yet.
 */
export function markerCitations(answer, citations) {
  const taken = new Set();
  const result = [];
  let last = 0;
  for (const match of answer.matchAll(MARKER)) {
    const claim = squash(answer.slice(last, match.index));
    last = match.index + match[0].length;
    const indexes = [];
    for (const ref of match[1].trim().split(SPLIT_REFS)) {
      const candidates = citations.map((c, i) => [c, i]).filter(([c]) => c.ref === ref.trim());
      const found = candidates.find(([c]) => claim.includes(squash(c.quote)))
        || candidates.find(([, i]) => !taken.has(i)) || candidates[0];
      if (found && !indexes.includes(found[1])) {
        indexes.push(found[1]);
        taken.add(found[1]);
      }
    }
    result.push(indexes);
  }
  return result;
}

/** "lease.pdf, p. 2", or what a supplied passage is to its reader. */
export function citationLabel(citation) {
  if (citation.document === SUPPLIED) return "Your supplied text";
  return citation.page ? `${citation.document}, p. ${citation.page}` : citation.document;
}

// What each document tool does, in a reader's words (the dotted and underscore names alike).
const TOOL_WORDS = {
  document_chat: "Reading the attached files",
  list: "Listing the documents",
  analyze: "Summarizing a document",
  get_content: "Reading a document",
  get_summary: "Reading a document's summary",
  search: "Searching the documents",
  get_page: "Reading a page",
  get_span: "Reading a passage",
  attach_document: "Attaching a document",
  list_documents: "Listing this chat's files",
  remove_document: "Removing a document",
};

function stepText(event) {
  if (event.type === "tool") {
    const name = event.name === "contexts.list" || event.name === "contexts_list" ? "Looking at your folders"
      : TOOL_WORDS[event.name.replace(/^(documents|session)(\.|__?)/, "")] || event.name;
    const took = event.duration_ms ? ` (${Math.round(event.duration_ms)} ms)` : "";
    if (event.status === "running") return `${name}…`;
    return event.status === "ok" ? `${name}: done${took}` : `${name}: failed${event.error ? ` (${event.error})` : ""}`;
  }
  return event.message || event.step;
}

/** The answer as plain text, for the clipboard: markers out, no space left before punctuation. */
export function plainText(answer) {
  // The clipboard takes text, not markup: "path &lt;string&gt;" is pasted as the document wrote it.
  return plain(withoutMarkers(answer)).replace(/[ \t]+([.,;:!?])/g, "$1").trim();
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (a page served over plain HTTP to another machine): the older way still works there.
    const area = h("textarea", { class: "visually-hidden", "aria-hidden": "true" }, text);
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

export class AnswerView {
  /** `onStop` stops the answer while it streams; `onRegenerate` asks its question again (a new turn). */
  constructor({ onCitation, follow, onStop, onRegenerate }) {
    this.onCitation = onCitation;
    this.follow = follow || (() => {});
    this.onRegenerate = onRegenerate;
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
    this.stop = onStop
      ? h("button", { type: "button", class: "answer-stop", onclick: onStop }, icon("stop"), "Stop")
      : null;
    this.actions = h("div", { class: "answer-actions", role: "group", "aria-label": "Answer actions" }, this.stop);
    this.element = h("article", { class: "message assistant", "aria-label": "Answer" }, this.how, this.body,
      this.chips, this.context, this.actions);
  }

  /** Copy and Regenerate, once the answer is no longer streaming. */
  settled() {
    this.stop?.remove();
    this.body.classList.remove("streaming");
    this.body.removeAttribute("aria-busy");
    if (this.actions.querySelector(".answer-copy, .answer-regenerate")) return;
    const copy = h("button", {
      type: "button",
      class: "answer-copy",
      onclick: async () => {
        await copyText(plainText(this.text));
        copy.lastChild.data = "Copied";
        setTimeout(() => { copy.lastChild.data = "Copy"; }, 2000);
      },
    }, icon("copy"), "Copy");
    const again = this.onRegenerate
      ? h("button", { type: "button", class: "answer-regenerate", onclick: this.onRegenerate }, icon("retry"),
        "Regenerate")
      : null;
    this.actions.prepend(copy, again || "");
  }

  /** The reader stopped the answer: what came is kept on the page, and it can be asked again. */
  stopped() {
    this.settled();
    this.body.append(h("p", { class: "notice", role: "status" }, "Stopped. This answer was not saved."));
    this.element.dataset.stopped = "true";
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
    this.live.data = plain(withoutMarkers(this.text));
    this.follow(this.element, { streaming: true });
  }

  /** One chip per quote: two sentences quoting one span are two sources to check. */
  citation(citation) {
    if (this.citations.some((known) => known.ref === citation.ref && known.quote === citation.quote)) return;
    this.citations.push(citation);
    const number = this.citations.length;
    const label = citationLabel(citation);
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
    this.stop?.remove();
    this.body.classList.remove("streaming");
    this.body.removeAttribute("aria-busy");
    this.body.append(h("p", { class: "error", role: "alert" }, message));
  }

  /** The final answer: markdown (sanitized), refs in the text turned into citation buttons. */
  finish(answer, metadata) {
    this.text = answer;
    this.settled();
    const fragment = renderMarkdown(answer);
    this.linkRefs(fragment, markerCitations(answer, this.citations));
    this.body.replaceChildren(fragment);
    if (metadata) {
      this.context.contexts = [metadata.focus_context, metadata.historical_contexts || []];
      this.context.textContent = contextStatement(...this.context.contexts);
    }
    this.context.hidden = !this.context.textContent;
    if (!this.steps.children.length) this.how.hidden = true;
    this.element.dataset.final = "true";
    this.follow(this.element);
  }

  /** Follow-up questions the documents can answer, as chips that ask them. */
  suggest(suggestions, onAsk) {
    this.element.querySelector(".suggestions")?.remove();
    if (!suggestions?.length) return;
    const chips = suggestions.map((text) =>
      // Asked as shown: a question is the user's words, not the output policy's escapes ("&lt;string&gt;").
      h("li", {}, h("button", { type: "button", class: "suggestion", onclick: () => onAsk(plain(text)) }, text)));
    this.element.append(h("ul", { class: "suggestions", "aria-label": "Suggested questions" }, ...chips));
  }

  /** Under a decline, the passages that came closest: places to read, not sources the answer claims. */
  places(places) {
    this.element.querySelector(".places")?.remove();
    if (!places?.length) return;
    const items = places.map((place) => {
      const where = [citationLabel(place), place.section].filter(Boolean).join(" · ");
      const open = (event) => this.onCitation({ ...place, quote: place.excerpt || "" }, event.currentTarget);
      return h("li", {}, h("button", { type: "button", class: "link-button place-open", onclick: open }, where),
        place.excerpt ? h("span", { class: "muted" }, ` “${place.excerpt}”`) : null);
    });
    this.body.after(h("div", { class: "places" }, h("p", { class: "places-title" }, "Places to look:"),
      h("ul", {}, ...items)));
  }

  /** Thumbs up and down for a stored answer; ``rated`` is the rating given before (reopened conversations). */
  rate(messageId, rated, onRate) {
    if (!messageId) return;
    this.element.querySelector(".feedback")?.remove();
    const buttons = [["up", "Helpful"], ["down", "Not helpful"]].map(([rating, label]) =>
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
      }, icon(rating)));
    const box = h("div", { class: "feedback", role: "group", "aria-label": "Rate this answer" }, ...buttons);
    this.actions.append(box);
  }

  /** A context request card under this (paused) answer. */
  request(card) {
    this.stop?.remove();
    this.body.classList.remove("streaming");
    this.body.removeAttribute("aria-busy");
    this.element.append(card.element);
    this.follow(card.element);
  }

  /** Replace every marker in text nodes by numbered buttons that open its citations; a marker that names
   * nothing cited disappears (a raw "[x::y]" is never shown). `targets` is markerCitations() of the text. */
  linkRefs(fragment, targets) {
    const walker = document.createTreeWalker(fragment, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    let next = 0;
    for (const node of nodes) {
      const parts = node.data.split(MARKER);
      if (parts.length === 1) continue;
      const replaced = parts.flatMap((part, index) => {
        if (index % 2 === 0) return part ? [part] : [];
        return (targets[next++] || []).map((at) => {
          const citation = this.citations[at];
          return h(
            "button",
            {
              type: "button",
              class: "citation-inline",
              "aria-label": `Source ${at + 1}: ${citationLabel(citation)}`,
              onclick: (event) => this.onCitation(citation, event.currentTarget),
            },
            String(at + 1),
          );
        });
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
    this.empty = $("empty-state");
    this.pinned = true;
    // The page follows the conversation unless the reader scrolled up to read something earlier.
    this.list.addEventListener("scroll", () => {
      const { scrollTop, scrollHeight, clientHeight } = this.list;
      this.pinned = scrollHeight - scrollTop - clientHeight < 80;
    }, { passive: true });
    // The list shrinks when the file rows above it load (or a phone's keyboard opens): a reader at the end stays
    // there, instead of losing the end of the last answer below the fold.
    new ResizeObserver(() => {
      if (this.pinned) this.list.scrollTop = this.list.scrollHeight;
    }).observe(this.list);
  }

  /** Show the end of the conversation (a new answer, its card); while streaming, only if the reader is at the
   * end. Only the list scrolls: scrollIntoView would move the whole page. */
  follow(element, { streaming = false } = {}) {
    if (streaming && !this.pinned) return;
    this.list.scrollTop = this.list.scrollHeight;
    this.pinned = true;
  }

  clear() {
    this.list.replaceChildren();
    this.empty.hidden = false;
  }

  question(text, files = []) {
    const element = h(
      "article",
      { class: "message user", "aria-label": "Question" },
      h("p", {}, text),
      files.length ? h("p", { class: "muted files" }, `Files: ${files.join(", ")}`) : null,
    );
    this.empty.hidden = true;
    this.list.append(element);
    this.follow(element);
  }

  answer(actions = {}) {
    const follow = (element, options) => this.follow(element, options);
    const view = new AnswerView({ onCitation: this.onCitation, follow, ...actions });
    this.list.append(view.element);
    this.follow(view.element);
    return view;
  }

  /** The last source cited in the conversation (the `c` shortcut opens it). */
  lastCitation() {
    const buttons = this.list.querySelectorAll(".citation-chip");
    return buttons[buttons.length - 1] || null;
  }

  notice(text) {
    this.list.append(h("p", { class: "notice", role: "status" }, text));
  }

  /** A stored conversation: each user message then its answer; `regenerate(question, files)` asks again. */
  history(messages, regenerate) {
    this.clear();
    let asked = null;
    for (const message of messages) {
      // A question waiting on its context request is shown with the request's card (app.js), not here.
      if (message.status === "waiting_context") continue;
      if (message.role === "user") {
        this.question(message.content, message.blob_names);
        asked = message;
        continue;
      }
      const question = asked;
      const view = this.answer({
        onRegenerate: question ? () => regenerate(question.content, question.blob_names || []) : null,
      });
      for (const call of message.tool_calls || []) view.step({ type: "tool", ...call });
      for (const citation of message.citations || []) view.citation(citation);
      view.finish(message.content, { focus_context: message.focus_context, historical_contexts: [] });
      view.places(message.places_to_look);
      if (this.onRate) view.rate(message.message_id, message.feedback?.rating, this.onRate);
    }
    this.follow();
  }
}
