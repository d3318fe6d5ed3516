// Attachments as file chips: upload (pick or drop), live statuses from the context stream, remove, replace,
// the diff banner and the aggregate digest status of the session's context set.
import { api } from "./api.js";
import { $, bytes, h, icon } from "./dom.js";

// What a chip says, in a reader's words (the statuses are the spec's; "digest" is not a word users use).
const STATUS_TEXT = {
  uploading: "uploading",
  processing: "reading…",
  ready: "ready",
  failed: "could not be read",
};
const SUMMARY_TEXT = {
  stale: "summary waiting",
  parsing: "summarizing…",
  error: "summary failed",
};

/** The diff banner in the context-digest spec's words (§8.1), shown right after the user changed the files. */
export function bannerText(changes, parsing) {
  if (!changes.new && !changes.changed && !changes.deleted) return "No changes detected—using cached digest";
  const text = `+${changes.new} new, ~${changes.changed} changed, −${changes.deleted} deleted`;
  return parsing ? `${text}—parsing…` : text;
}

export class FileChips {
  constructor({ onError, onChange, onDigest }) {
    this.sessionId = null;
    this.changed = false; // the user changed the files in this view: the banner reports what that did
    this.manifest = null;
    this.pending = []; // {name, size}: uploads the server has not answered yet
    this.watching = null;
    this.onError = onError;
    this.onChange = onChange || (() => {});
    this.onDigest = onDigest || (() => {});
    this.list = $("chips");
    this.banner = $("diff-banner");
    this.summary = $("all-summary");
    this.summary.addEventListener("click", (event) =>
      this.onDigest("Summary of all files", () => api.aggregateDigest(this.sessionId), event.currentTarget));
    this.autoParse = $("auto-parse");
    this.parseNow = $("parse-now");
    this.autoParse.addEventListener("change", () => this.setAutoParse(this.autoParse.checked));
    this.parseNow.addEventListener("click", () => this.run(() => api.parseNow(this.sessionId)));
  }

  /** The spec's "Auto-parse on change": off, changed files wait for "Summarize now". */
  async setAutoParse(on) {
    await this.run(() => api.setAutoParse(this.sessionId, on));
  }

  /** A context-set call that answers the manifest; the chips follow what it started. */
  async run(call) {
    try {
      this.manifest = await call();
    } catch (error) {
      this.onError(error);
    }
    this.render();
    this.watch();
  }

  /** Hide the diff banner (a question was asked: the change is not news any more). */
  settle() {
    this.changed = false;
    this.render();
  }

  /** Show the files of `sessionId` (or none for a new chat) and follow them. */
  async open(sessionId, { known = true } = {}) {
    this.stop();
    this.sessionId = sessionId;
    this.manifest = null;
    this.pending = [];
    this.changed = false;
    this.render();
    if (!known) return;
    try {
      this.manifest = await api.manifest(sessionId);
    } catch (error) {
      if (error.status !== 404) this.onError(error);
      return;
    }
    this.render();
    if (this.busy()) this.watch();
  }

  /** Filenames to attach to a turn: every file of the session. */
  names() {
    return (this.manifest?.files || []).map((file) => file.filename);
  }

  busy() {
    const files = this.manifest?.files || [];
    return this.manifest?.parsing || files.some((file) => file.status === "uploading" || file.status === "processing");
  }

  async add(files) {
    if (!files.length) return;
    const id = this.sessionId;
    this.changed = true;
    this.pending.push(...Array.from(files, (file) => ({ name: file.name, size: file.size })));
    this.render();
    try {
      await api.upload(id, files);
    } catch (error) {
      this.onError(error);
    } finally {
      this.pending = [];
    }
    if (id === this.sessionId) await this.refresh();
  }

  async replace(file, replacement) {
    this.changed = true;
    try {
      await api.replace(this.sessionId, file.file_id, replacement);
    } catch (error) {
      this.onError(error);
    }
    await this.refresh();
  }

  async remove(file) {
    this.changed = true;
    try {
      await api.removeFile(this.sessionId, file.file_id);
    } catch (error) {
      this.onError(error);
    }
    await this.refresh();
    $("question").focus();
  }

  /** Ask the server to make a failed summary again (the spec's "Retry parse"). */
  async retry(file) {
    try {
      await api.retryParse(this.sessionId, file.file_id);
    } catch (error) {
      this.onError(error);
    }
    await this.refresh();
  }

  async refresh() {
    try {
      this.manifest = await api.manifest(this.sessionId);
    } catch (error) {
      if (error.status !== 404) this.onError(error);
    }
    this.render();
    this.watch();
  }

  stop() {
    if (this.watching) this.watching.abort();
    this.watching = null;
  }

  /** Follow the context stream until nothing is processed or digested any more. */
  async watch() {
    this.stop();
    const controller = new AbortController();
    this.watching = controller;
    const id = this.sessionId;
    try {
      while (!controller.signal.aborted) {
        for await (const { event, data } of api.contextStream(id, controller.signal)) {
          if (event === "manifest" && id === this.sessionId) {
            this.manifest = data;
            this.render();
          }
        }
        if (controller.signal.aborted || id !== this.sessionId) break;
        // The stream reports changes after the state it started from: read the state it ended on.
        this.manifest = await api.manifest(id);
        this.render();
        if (!this.busy()) break;
        // Text extraction can outlast the stream (which follows digests): look again shortly.
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    } catch (error) {
      if (error.name !== "AbortError") this.onError(error);
    } finally {
      if (this.watching === controller) this.watching = null;
    }
  }

  render() {
    const files = this.manifest?.files || [];
    const chips = files.map((file) => this.chip(file));
    for (const upload of this.pending) {
      chips.push(
        h(
          "li",
          { class: "chip status-uploading", dataset: { status: "uploading", filename: upload.name } },
          h("span", { class: "chip-name" }, upload.name),
          h("span", { class: "chip-status" }, `uploading · ${bytes(upload.size)}`),
        ),
      );
    }
    this.list.replaceChildren(...chips);
    const changes = this.manifest?.changes;
    this.banner.hidden = !this.changed || !changes;
    this.banner.textContent = changes ? bannerText(changes, this.manifest.parsing) : "";
    this.summary.hidden = !(files.length && this.manifest.aggregate_digest_status === "ready");
    const autoParse = this.manifest?.auto_parse ?? true;
    this.autoParse.checked = autoParse;
    const waiting = files.some((file) => file.status === "ready" && file.digest_status === "stale");
    this.parseNow.hidden = autoParse || !waiting;
    this.onChange(files);
  }

  chip(file) {
    const details = [STATUS_TEXT[file.status] || file.status];
    if (file.status === "failed" && file.status_reason) details.push(file.status_reason);
    if (file.status === "ready" && SUMMARY_TEXT[file.digest_status]) details.push(SUMMARY_TEXT[file.digest_status]);
    const picker = h("input", {
      type: "file",
      class: "visually-hidden",
      tabindex: "-1",
      "aria-hidden": "true",
      onchange: (event) => event.target.files[0] && this.replace(file, event.target.files[0]),
    });
    const hidden = (text) => h("span", { class: "visually-hidden" }, text);
    const summary = file.digest_status === "ready"
      ? h("button", {
        type: "button",
        class: "chip-action chip-summary",
        title: "Summary",
        onclick: (event) => this.onDigest(file.filename,
          () => api.fileDigest(this.sessionId, file.file_id), event.currentTarget),
      }, icon("summary"), hidden(`Summary of ${file.filename}`))
      : null;
    const retry = file.digest_status === "error" && file.status === "ready"
      ? h("button", { type: "button", class: "chip-action chip-retry", title: "Try again",
        onclick: () => this.retry(file) }, icon("retry"), hidden(`Try again to summarize ${file.filename}`))
      : null;
    return h(
      "li",
      {
        class: `chip status-${file.status}`,
        dataset: { status: file.status, digest: file.digest_status, filename: file.filename },
      },
      h("span", { class: "chip-name", title: file.filename }, file.filename),
      h("span", { class: "chip-status" }, details.join(" · ")),
      summary,
      retry,
      picker,
      h("button", { type: "button", class: "chip-action", onclick: () => picker.click() }, "Replace",
        hidden(` ${file.filename}`)),
      h("button", { type: "button", class: "chip-action", title: "Remove", onclick: () => this.remove(file) },
        icon("close"), hidden(`Remove ${file.filename}`)),
    );
  }
}
