// A paused turn's context request as a card under its answer: the slots the answer needs, one-click suggestions,
// paste or upload to supply, "Answer without it" and "Cancel". Supplying continues the same turn in place: the
// resumed answer streams into the same message. Text from the server is set as text, never as HTML.
import { h, readable } from "./dom.js";

export class RequestCard {
  /**
   * @param {object} event the `context_required` event (or JSON answer)
   * @param {{supply: Function, runWithout: Function, cancel: Function}} actions each returns a promise
   */
  constructor(event, actions) {
    this.event = event;
    this.actions = actions;
    this.status = h("p", { class: "muted request-status", role: "status" });
    const slots = event.required.map((slot, index) => this.slot(slot, index));
    this.element = h(
      "section",
      { class: "context-request", "aria-label": "More information needed" },
      h("h3", {}, "To answer, I need a little more"),
      ...slots,
      h(
        "div",
        { class: "request-actions" },
        h("button", { type: "button", class: "run-without", onclick: () => this.run(() => actions.runWithout()) },
          "Answer without it"),
        h("button", { type: "button", class: "cancel-request", onclick: () => this.run(() => actions.cancel()) },
          "Cancel"),
      ),
      this.status,
    );
  }

  slot(slot, index) {
    const id = `slot-${this.event.request_id}-${index}`;
    const text = h("textarea", { id, class: "supply-text", rows: "3", placeholder: "Paste the passage here" });
    // The browser's own file button ("Choose File / No file chosen") cannot be styled: a label opens it instead.
    const chosen = h("span", { class: "supply-chosen muted" });
    const file = h("input", {
      type: "file",
      id: `${id}-file`,
      class: "supply-file visually-hidden",
      onchange: () => { chosen.textContent = Array.from(file.files, (f) => f.name).join(", "); },
    });
    const picker = h("span", { class: "supply-picker" },
      h("label", { for: `${id}-file`, class: "button-like" }, "Choose a file",
        h("span", { class: "visually-hidden" }, ` for: ${slot.description}`)),
      file, chosen);
    const suggestions = slot.suggestions.map((suggestion) =>
      h("li", {}, h("button", {
        type: "button",
        class: "suggestion-supply",
        onclick: () => this.run(() => this.actions.supply([{ slot: slot.slot, ...clean(suggestion.supply) }])),
      }, readable(suggestion.label))),
    );
    return h(
      "fieldset",
      { class: "request-slot", dataset: { slot: slot.slot } },
      h("legend", {}, readable(slot.description)),
      suggestions.length ? h("ul", { class: "request-suggestions", "aria-label": "Suggestions" }, ...suggestions) : null,
      h("label", { for: id, class: "visually-hidden" }, `Context for: ${slot.description}`),
      text,
      picker,
      h("button", {
        type: "button",
        class: "supply",
        onclick: () => {
          if (file.files.length) return this.run(() => this.actions.upload(slot.slot, file.files));
          const value = text.value.trim();
          if (!value) { this.status.textContent = "Paste a passage, choose a file or a suggestion first."; return; }
          return this.run(() => this.actions.supply([{ slot: slot.slot, text: value }]));
        },
      }, "Use this"),
    );
  }

  async run(action) {
    for (const button of this.element.querySelectorAll("button")) button.disabled = true;
    this.status.textContent = "Sending…";
    try {
      const outcome = await action();
      if (outcome === "partial") {
        this.status.textContent = "Received; the answer still needs the other parts.";
        for (const button of this.element.querySelectorAll("button")) button.disabled = false;
        return;
      }
      this.element.remove();
    } catch (error) {
      this.status.textContent = error.message;
      for (const button of this.element.querySelectorAll("button")) button.disabled = false;
    }
  }
}

function clean(supply) {
  return Object.fromEntries(Object.entries(supply).filter(([, value]) => value !== null && value !== undefined));
}
