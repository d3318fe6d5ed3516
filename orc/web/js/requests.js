// Context requests around their card and in the history: the artifacts drawer (search, page through, attach in
// one click, fed by GET …/artifacts), the request's timeline inline (asked, reminder, expiry, followed on
// GET …/context-requests/{id}/events) and resolved requests where they happened in a stored conversation.
// Everything from the server is set as text, never as HTML.
import { getJson, ndjson, request } from "./api.js";
import { h, readable, when } from "./dom.js";

const PAGE_SIZE = 20;

function sessionPath(sessionId) {
  return `/api/sessions/${encodeURIComponent(sessionId)}`;
}

function time(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** The NDJSON lines of a GET stream, parsed. */
async function* followed(path, signal) {
  yield* ndjson(await request(path, { accept: "application/x-ndjson", signal }));
}

/** A drawer listing the session's artifacts; `open(slots, attach)` shows it for one request. */
export class ArtifactsDrawer {
  constructor() {
    this.search = h("input", { type: "search", class: "artifacts-search", placeholder: "Search files and answers",
      "aria-label": "Search files and answers" });
    this.slot = h("select", { class: "artifacts-slot", "aria-label": "Attach to" });
    this.list = h("ul", { class: "artifacts-list", "aria-label": "Files and answers" });
    this.more = h("button", { type: "button", class: "artifacts-more", hidden: true, onclick: () => this.load() },
      "More");
    this.status = h("p", { class: "muted artifacts-status", role: "status" });
    this.element = h(
      "dialog",
      { class: "artifacts-drawer", "aria-label": "Pick from this chat" },
      h("header", {}, h("h2", {}, "Pick from this chat"),
        h("button", { type: "button", class: "artifacts-close", onclick: () => this.close() }, "Close")),
      this.search, this.slot, this.list, this.more, this.status,
    );
    let typing;
    this.search.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => this.reload(), 250);
    });
    document.body.append(this.element);
  }

  open(sessionId, slots, attach) {
    this.sessionId = sessionId;
    this.attach = attach;
    this.slot.replaceChildren(...slots.map((slot) => h("option", { value: slot.slot }, slot.description)));
    this.slot.hidden = slots.length < 2;
    this.search.value = "";
    if (!this.element.open) this.element.showModal();
    this.search.focus();
    return this.reload();
  }

  close() {
    if (this.element.open) this.element.close();
  }

  reload() {
    this.cursor = null;
    this.list.replaceChildren();
    return this.load();
  }

  async load() {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (this.cursor) query.set("cursor", this.cursor);
    if (this.search.value.trim()) query.set("q", this.search.value.trim());
    this.status.textContent = "Loading…";
    try {
      const page = await getJson(`${sessionPath(this.sessionId)}/artifacts?${query}`);
      this.list.append(...page.items.map((item) => this.item(item)));
      this.cursor = page.next_cursor;
      this.more.hidden = !page.next_cursor;
      const hidden = page.redactions ? ` (${page.redactions} hidden: they looked like passwords or keys)` : "";
      this.status.textContent = page.total ? `${this.list.children.length} of ${page.total}${hidden}` : "Nothing to attach yet.";
    } catch (error) {
      this.status.textContent = error.message;
    }
  }

  item(item) {
    return h(
      "li",
      { class: `artifact artifact-${item.kind}`, dataset: { id: item.id } },
      h("span", { class: "artifact-kind muted" }, KINDS[item.kind] || item.kind),
      h("span", { class: "artifact-title" }, item.title),
      item.detail ? h("span", { class: "artifact-detail muted" }, item.detail) : null,
      h("button", {
        type: "button",
        class: "artifact-attach",
        disabled: item.status && item.status !== "ready" ? true : null,
        onclick: () => {
          const supply = Object.fromEntries(Object.entries(item.supply).filter(([, value]) => value != null));
          this.close();
          this.attach([{ slot: this.slot.value, ...supply }]);
        },
      }, "Use this"),
    );
  }
}

let drawer = null;

/** Adds to a request card: its timeline (asked, reminder, expiry) and the "Pick from this chat" button. */
export function decorate(card, sessionId, event) {
  const timeline = h("ul", { class: "request-timeline muted", "aria-label": "Request timeline" });
  const note = (kind, text) => timeline.append(h("li", { class: `request-${kind}` }, text));
  if (event.expires_at) note("deadline", `Answers without it at ${time(event.expires_at)} if nothing comes.`);
  const browse = h("button", {
    type: "button",
    class: "browse-artifacts",
    onclick: () => {
      drawer ??= new ArtifactsDrawer();
      drawer.open(sessionId, event.required, (payloads) => card.run(() => card.actions.supply(payloads)));
    },
  }, "Pick from this chat");
  card.element.querySelector(".request-actions")?.prepend(browse);
  card.element.insertBefore(timeline, card.element.children[1] || null);
  const controller = new AbortController();
  const path = `${sessionPath(sessionId)}/context-requests/${encodeURIComponent(event.request_id)}/events`;
  (async () => {
    for await (const update of followed(path, controller.signal)) {
      if (update.status === "pending") note("asked", `Asked at ${time(update.at)}.`);
      else if (update.status === "reminder") note("reminder", `Reminder: ${update.note}`);
      else if (update.status === "expired") note("expired", `Expired at ${time(update.at)}: ${update.note}`);
    }
  })().catch(() => {}); // the card was answered or left: its timeline simply stops
  // The card leaves the page once answered: stop following then.
  new MutationObserver((_, observer) => {
    if (!card.element.isConnected) { controller.abort(); observer.disconnect(); }
  }).observe(document.body, { childList: true, subtree: true });
  return card;
}

const OUTCOMES = {
  supplied: "Answered with what you gave",
  run_without: "Answered without it, as you chose",
  expired: "Answered without it: nothing came in time",
  cancelled: "Cancelled: this question was not answered",
  superseded: "Replaced by a newer question",
};
const KINDS = { document: "File", fact: "From a summary", answer: "Earlier answer" };

/** A resolved (or cancelled) request as it happened: what was asked, reminders, supplies, how it ended. */
export function resolvedRequest(record) {
  const items = [
    ...record.required.map((slot) => h("li", {}, `Needed: ${slot.description}`)),
    ...(record.events || []).filter((e) => e.type === "reminder").map((e) => h("li", { class: "request-reminder" },
      `Reminder at ${time(e.at)}: ${e.note}`)),
    ...record.supplies.map((supply) => h("li", { class: "request-supply" },
      `Given by ${supply.supplied_by} ${when(supply.supplied_at)}: `,
      supply.text != null ? `“${supply.text.slice(0, 300)}”` : supply.document_id ? "a file"
        : `a passage of ${readable(supply.source_ref)}`)),
  ];
  return h(
    "details",
    { class: `request-history request-${record.status}`, dataset: { request: record.request_id } },
    h("summary", {}, `More information asked for · ${OUTCOMES[record.outcome] || record.status}`),
    h("p", { class: "muted" }, `Asked at ${time(record.created_at)}`),
    h("ul", {}, ...items),
  );
}

/** Place a stored conversation's ended requests where they happened in the already-rendered history. */
export function placeRequests(list, requests) {
  const questions = Array.from(list.querySelectorAll(".message.user"));
  for (const record of requests.filter((r) => r.status !== "pending")) {
    const seq = Number(/^msg-(\d+)-user(?:-|$)/.exec(record.user_message_id)?.[1] || 0);
    const answered = record.status === "resolved" || record.status === "expired";
    const question = questions[seq - 1];
    const block = resolvedRequest(record);
    if (answered && question) {
      question.after(block);
    } else {
      // A question never answered was never stored as a turn: show it, with its request, where it was asked.
      const asked = h("article", { class: "message user", "aria-label": "Question" }, h("p", {}, record.question));
      if (question) { question.before(asked); asked.after(block); } else { list.append(asked, block); }
    }
  }
}
