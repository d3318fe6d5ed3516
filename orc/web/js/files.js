// Attachments as file chips: upload (pick or drop), live statuses from the context stream, remove, replace,
// the diff banner and the aggregate digest status of the session's context set.
import { api } from "./api.js";
import { $, bytes, h } from "./dom.js";

const STATUS_TEXT = {
  uploading: "uploading",
  processing: "processing",
  ready: "ready",
  failed: "failed",
};
const DIGEST_TEXT = {
  none: "no digest",
  stale: "digest pending",
  parsing: "digest being made",
  ready: "digest ready",
  error: "digest failed",
};

export class FileChips {
  constructor({ onError, onChange }) {
    this.sessionId = null;
    this.manifest = null;
    this.pending = []; // {name, size}: uploads the server has not answered yet
    this.watching = null;
    this.onError = onError;
    this.onChange = onChange || (() => {});
    this.list = $("chips");
    this.banner = $("diff-banner");
    this.digest = $("digest-status");
  }

  /** Show the files of `sessionId` (or none for a new chat) and follow them. */
  async open(sessionId, { known = true } = {}) {
    this.stop();
    this.sessionId = sessionId;
    this.manifest = null;
    this.pending = [];
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
    try {
      await api.replace(this.sessionId, file.file_id, replacement);
    } catch (error) {
      this.onError(error);
    }
    await this.refresh();
  }

  async remove(file) {
    try {
      await api.removeFile(this.sessionId, file.file_id);
    } catch (error) {
      this.onError(error);
    }
    await this.refresh();
    $("question").focus();
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
    this.banner.hidden = !changes || changes.text === "no changes" || !files.length;
    this.banner.textContent = changes ? `Revision ${this.manifest.revision}: ${changes.text}` : "";
    if (files.length) {
      const status = this.manifest.aggregate_digest_status;
      const error = this.manifest.aggregate_digest_error;
      this.digest.textContent = `Summary of all files: ${DIGEST_TEXT[status] || status}${error ? ` (${error})` : ""}`;
    } else {
      this.digest.textContent = "";
    }
    this.onChange(files);
  }

  chip(file) {
    const status = STATUS_TEXT[file.status] || file.status;
    const details = [status];
    if (file.status === "failed" && file.status_reason) details.push(file.status_reason);
    if (file.status === "ready") details.push(DIGEST_TEXT[file.digest_status] || file.digest_status);
    if (file.digest_status === "error" && file.digest_error) details.push(file.digest_error);
    const picker = h("input", {
      type: "file",
      class: "visually-hidden",
      tabindex: "-1",
      "aria-hidden": "true",
      onchange: (event) => event.target.files[0] && this.replace(file, event.target.files[0]),
    });
    return h(
      "li",
      {
        class: `chip status-${file.status}`,
        dataset: { status: file.status, digest: file.digest_status, filename: file.filename },
      },
      h("span", { class: "chip-name", title: file.filename }, file.filename),
      h("span", { class: "chip-status" }, details.join(" · ")),
      picker,
      h("button", { type: "button", class: "chip-action", onclick: () => picker.click() }, "Replace",
        h("span", { class: "visually-hidden" }, ` ${file.filename}`)),
      h("button", { type: "button", class: "chip-action", onclick: () => this.remove(file) }, "✕",
        h("span", { class: "visually-hidden" }, ` Remove ${file.filename}`)),
    );
  }
}
