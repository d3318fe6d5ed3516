// The chat's files as rows (context-digest spec §8.1): name, size, when it was updated, a status chip and actions
// (summary, download, replace, remove, try again); uploads with their progress; files the server refused, each
// with a short reason; the change banner and the summary of all files (with its failure and a retry).
import { api } from "./api.js";
import { $, bytes, h, icon, stamp, when } from "./dom.js";

// What a row says, in a reader's words (the statuses are the spec's; "digest" and "parse" are not users' words).
const STATUS_TEXT = { uploading: "Uploading", processing: "Reading…", failed: "Could not be read" };
const SUMMARY_TEXT = { ready: "Ready", stale: "Summary waiting", parsing: "Summarizing…", error: "Summary failed" };
// Digest errors that the same content always meets again (too long to summarize, no text): not a failure to retry.
const PERMANENT = new Set(["too_long", "not_extracted"]);

/** Why a file was not added, in a few words (the server's message may list every supported type). */
export function refusalText(code, limit) {
  const reasons = {
    unsupported_media_type: "orc can't read this kind of file",
    empty_file: "the file is empty",
    payload_too_large: limit ? `larger than the ${bytes(limit)} limit` : "too large",
    invalid_name: "its name can't be used",
    duplicate_filename: "picked twice",
    network_error: "the server could not be reached",
  };
  return reasons[code] || "it could not be added";
}

const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** The change banner (spec §8.1) in plain words, shown right after the user changed the files. */
export function bannerText(changes, parsing, refused = 0) {
  const notAdded = refused ? `${plural(refused, "file")} not added` : "";
  if (!changes.new && !changes.changed && !changes.deleted) {
    return notAdded ? `${notAdded[0].toUpperCase()}${notAdded.slice(1)}.` : "No changes: these files were already here.";
  }
  const parts = [
    changes.new && `added ${plural(changes.new, "file")}`,
    changes.changed && `replaced ${plural(changes.changed, "file")}`,
    changes.deleted && `removed ${plural(changes.deleted, "file")}`,
  ].filter(Boolean).join(", ");
  const text = parts[0].toUpperCase() + parts.slice(1) + (notAdded ? `; ${notAdded}` : "");
  return parsing ? `${text}. Summarizing…` : `${text}.`;
}

export class FileChips {
  constructor({ onError, onChange, onDigest, onFilesChanged, maxUploadBytes }) {
    this.sessionId = null;
    this.changed = false; // the user changed the files in this view: the banner reports what that did
    this.manifest = null;
    this.pending = []; // {name, size, loaded}: uploads the server has not answered yet
    this.refused = []; // {name, reason}: files of the last uploads that were not added
    this.diffs = {}; // file_id → what the user's last change did to it ("unchanged" shows as such)
    this.watching = null;
    this.maxUploadBytes = maxUploadBytes || Infinity;
    this.onError = onError;
    this.onChange = onChange || (() => {});
    this.onDigest = onDigest || (() => {});
    // The user added, replaced or removed files: a chat with files and no question yet is a conversation too.
    this.onFilesChanged = onFilesChanged || (() => {});
    this.list = $("chips");
    this.banner = $("diff-banner");
    this.summary = $("all-summary");
    this.aggregate = $("all-summary-status");
    this.summary.addEventListener("click", (event) =>
      this.onDigest("Summary of all files", () => api.aggregateDigest(this.sessionId), event.currentTarget));
    this.autoParse = $("auto-parse");
    this.parseNow = $("parse-now");
    this.autoParse.addEventListener("change", () => this.run(() => api.setAutoParse(this.sessionId,
      this.autoParse.checked)));
    this.parseNow.addEventListener("click", () => this.run(() => api.parseNow(this.sessionId)));
  }

  /** A context-set call that answers the manifest; the rows follow what it started. */
  async run(call) {
    try {
      this.manifest = await call();
    } catch (error) {
      this.onError(error);
    }
    this.render();
    this.watch();
  }

  /** Hide the banner and "Unchanged" (a question was asked: the change is not news any more). */
  settle() {
    this.changed = false;
    this.diffs = {};
    this.refused = [];
    this.render();
  }

  /** Show the files of `sessionId` (or none for a new chat) and follow them. */
  async open(sessionId, { known = true } = {}) {
    this.stop();
    this.sessionId = sessionId;
    this.manifest = null;
    this.pending = [];
    this.refused = [];
    this.diffs = {};
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

  /** Upload `files` in one request (one change, one summary pass), each row showing its share of the progress. */
  async add(files) {
    if (!files.length) return;
    const id = this.sessionId;
    this.refused = [];
    // What the page can tell without sending: the server would refuse these anyway.
    const sending = [];
    for (const file of files) {
      if (!file.size) this.refused.push({ name: file.name, reason: refusalText("empty_file") });
      else if (file.size > this.maxUploadBytes) {
        this.refused.push({ name: file.name, reason: refusalText("payload_too_large", this.maxUploadBytes) });
      } else sending.push(file);
    }
    // A file with a known name replaces that file: its row shows the upload instead.
    const known = Object.fromEntries((this.manifest?.files || []).map((file) => [file.filename, file.file_id]));
    this.pending = sending.map((file) => ({ name: file.name, size: file.size, loaded: 0, replacing: known[file.name] }));
    this.render();
    if (!sending.length) return;
    this.changed = true;
    try {
      const mutation = await api.upload(id, sending, (loaded, total) => this.progress(loaded, total));
      this.noteDiffs(mutation);
      for (const refused of mutation.refused || []) {
        this.refused.push({ name: refused.filename, reason: refusalText(refused.code) });
      }
    } catch (error) {
      if (!this.refuse(error, sending)) this.onError(error);
      // Nothing was added: the banner would report an earlier change as this one's (the rows say why).
      this.changed = false;
    } finally {
      this.pending = [];
    }
    if (id === this.sessionId) await this.refresh();
    if (this.changed) this.onFilesChanged();
  }

  /** Spread one request's progress over its files, in the order the body carries them. */
  progress(loaded, total) {
    const size = this.pending.reduce((sum, upload) => sum + upload.size, 0);
    const overhead = Math.max(0, total - size) / (this.pending.length || 1);
    let start = 0;
    for (const upload of this.pending) {
      start += overhead;
      upload.loaded = Math.min(upload.size, Math.max(0, loaded - start));
      start += upload.size;
    }
    for (const row of this.list.querySelectorAll("li[data-status=uploading] progress")) {
      const upload = this.pending.find((item) => item.name === row.dataset.name);
      if (upload) row.value = upload.loaded;
    }
  }

  /** A whole upload refused for what its files are: each file listed with the reason. Only when every file of
   * a batch is refused does the server refuse the request, with the first file's reason; the page screened out
   * empty and oversized files, so the others are refused for the same kind of reason. An upload that never
   * reached the server lists its files the same way. */
  refuse(error, files) {
    const perFile = ["unsupported_media_type", "empty_file", "payload_too_large", "invalid_name", "network_error"];
    if (!perFile.includes(error.code)) return false;
    for (const file of files) this.refused.push({ name: file.name, reason: refusalText(error.code, error.limit) });
    return true;
  }

  noteDiffs(mutation) {
    for (const change of mutation.files || []) this.diffs[change.file_id] = change.diff;
  }

  async replace(file, replacement) {
    this.changed = true;
    this.pending = [{ name: file.filename, size: replacement.size, loaded: 0, replacing: file.file_id }];
    this.render();
    try {
      this.noteDiffs(await api.replace(this.sessionId, file.file_id, replacement,
        (loaded, total) => this.progress(loaded, total)));
    } catch (error) {
      this.onError(error);
    } finally {
      this.pending = [];
    }
    await this.refresh();
    this.onFilesChanged();
  }

  async remove(file) {
    this.changed = true;
    try {
      await api.removeFile(this.sessionId, file.file_id);
    } catch (error) {
      this.onError(error);
    }
    await this.refresh();
    this.onFilesChanged();
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

  /** Follow the context stream until nothing is processed or summarized any more. */
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
        // Text extraction can outlast the stream (which follows summaries): look again shortly.
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
    const replacing = new Set(this.pending.map((upload) => upload.replacing));
    const rows = files.filter((file) => !replacing.has(file.file_id)).map((file) => this.row(file));
    for (const upload of this.pending) {
      rows.push(line({ status: "uploading", filename: upload.name }, [bytes(upload.size)], [
        h("span", { class: "state state-uploading" }, "Uploading"),
        h("progress", { max: String(upload.size), value: String(upload.loaded), dataset: { name: upload.name },
          "aria-label": `Uploading ${upload.name}` })]));
    }
    // Files not added come first: in a long list they would sit below its fold, unseen.
    const refusedRows = this.refused.map((refused) => {
      const dismiss = () => {
        this.refused = this.refused.filter((item) => item !== refused);
        this.render();
      };
      return line({ status: "refused", filename: refused.name }, [],
        [action("dismiss", "Dismiss", dismiss, `Dismiss ${refused.name}`, icon("close"))],
        `Not added: ${refused.reason}`);
    });
    this.list.replaceChildren(...refusedRows, ...rows);
    const changes = this.manifest?.changes;
    this.banner.hidden = !this.changed || !changes;
    this.banner.textContent = changes ? bannerText(changes, this.manifest.parsing, this.refused.length) : "";
    this.renderAggregate(files);
    const autoParse = this.manifest?.auto_parse ?? true;
    this.autoParse.checked = autoParse;
    const waiting = files.some((file) => file.status === "ready" && file.digest_status === "stale");
    this.parseNow.hidden = autoParse || !waiting;
    this.onChange(files);
  }

  /** "Summary of all files" when it is ready; its progress, or its failure with the reason and a retry. */
  renderAggregate(files) {
    const status = files.length ? this.manifest.aggregate_digest_status : null;
    // Made of no file's summary (each too long, say), it would say nothing: there is none to offer.
    this.summary.hidden = status !== "ready" || !files.some((file) => file.digest_status === "ready");
    this.aggregate.dataset.status = status || "";
    if (status === "error") {
      this.aggregate.replaceChildren(
        h("span", { class: "error" }, `The summary of all files failed: ${this.manifest.aggregate_digest_error
          || "no reason given"}. `),
        h("button", { type: "button", class: "link-button summary-link", onclick: () =>
          this.run(() => api.retryAggregate(this.sessionId)) }, "Try again"));
    } else {
      this.aggregate.replaceChildren(status === "parsing" ? "Summarizing all files…" : "");
    }
  }

  row(file) {
    let state = file.status === "ready" ? file.digest_status : file.status;
    let text = STATUS_TEXT[file.status] || SUMMARY_TEXT[file.digest_status] || file.digest_status;
    if (file.status === "ready" && this.diffs[file.file_id] === "unchanged" && file.digest_status === "ready") {
      [state, text] = ["unchanged", "Unchanged"];
    }
    const permanent = file.digest_status === "error" && PERMANENT.has(file.digest_error_code);
    if (file.status === "ready" && permanent) [state, text] = ["no-summary", "No summary"];
    const reason = file.status === "failed" ? file.status_reason
      : file.digest_status === "error" ? file.digest_error : null;
    const picker = h("input", {
      type: "file",
      class: "visually-hidden",
      tabindex: "-1",
      "aria-hidden": "true",
      onchange: (event) => event.target.files[0] && this.replace(file, event.target.files[0]),
    });
    const name = file.filename;
    const changed = file.uploaded_at || file.updated_at;
    const ready = file.status === "ready";
    return line({ status: file.status, digest: file.digest_status, filename: name },
      [bytes(file.size_bytes), h("time", { datetime: changed, title: stamp(changed) }, when(changed))], [
        h("span", { class: `state state-${state}` }, text),
        ready && file.digest_status === "ready" ? action("summary", "Summary", (event) => this.onDigest(name,
          () => api.fileDigest(this.sessionId, file.file_id), event.currentTarget), `Summary of ${name}`,
        icon("summary")) : null,
        ready && file.digest_status === "error" && !permanent ? action("retry", "Try again", () => this.retry(file),
          `Try again to summarize ${name}`, icon("retry")) : null,
        action("download", "Download", () => api.download(api.fileContent(this.sessionId, file.file_id), name)
          .catch(this.onError), `Download ${name}`, icon("download")),
        picker,
        action("replace", "Replace", () => picker.click(), `Replace ${name}`, icon("replace")),
        action("remove", "Remove", () => this.remove(file), `Remove ${name}`, icon("close")),
      ], reason);
  }
}

/** One row: the name and its details, then its status and actions, and a reason on a line of its own. */
function line(data, details, tools, reason) {
  return h("li", { class: `chip status-${data.status}`, dataset: data },
    h("div", { class: "chip-main" }, h("span", { class: "chip-name", title: data.filename }, data.filename),
      details.length ? h("span", { class: "chip-meta" }, ...details.flatMap((d, i) => (i ? [" · ", d] : [d])))
        : null),
    h("div", { class: "chip-tools" }, ...tools),
    reason ? h("span", { class: "chip-reason" }, reason) : null);
}

function action(name, title, onclick, label, ...content) {
  return h("button", { type: "button", class: `chip-action chip-${name}`, title, onclick }, ...content,
    h("span", { class: "visually-hidden" }, label));
}
