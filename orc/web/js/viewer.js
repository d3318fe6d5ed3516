// The side panel a citation opens: the document at the cited span with the quote highlighted. PDFs show the
// page itself through pdf.js, imported only when a PDF citation is opened (it is most of the page's weight).
import { api } from "./api.js";
import { $, h, plain } from "./dom.js";

const PDFJS = "/web/vendor/pdfjs/";
let pdfjs = null;

async function loadPdfJs() {
  if (!pdfjs) {
    pdfjs = await import(`${PDFJS}pdf.min.mjs`);
    pdfjs.GlobalWorkerOptions.workerSrc = `${PDFJS}pdf.worker.min.mjs`;
  }
  return pdfjs;
}

/** Indexes of the text items that hold `quote`, matched with white space ignored (layouts break lines freely). */
export function itemsCovering(items, quote) {
  const chars = [];
  const owners = [];
  items.forEach((text, index) => {
    for (const char of text) {
      if (!/\s/.test(char)) {
        chars.push(char);
        owners.push(index);
      }
    }
  });
  const haystack = chars.join("");
  const needle = quote.replace(/\s+/g, "");
  for (const length of [needle.length, 120, 40]) {
    const part = needle.slice(0, length);
    const at = part ? haystack.indexOf(part) : -1;
    if (at >= 0) return new Set(owners.slice(at, at + (length === needle.length ? needle.length : part.length)));
  }
  return new Set();
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * [start, end) of the quoted sentence in `text`, white space ignored, preferring a match inside the span
 * [spanStart, spanEnd); the whole span when the quote is not found (a quote in the model's own words).
 */
export function quoteRange(text, quote, spanStart, spanEnd) {
  const words = (quote || "").replace(/…$/, "").split(/\s+/).filter(Boolean);
  if (words.length) {
    const pattern = new RegExp(words.map(escapeRegExp).join("\\s+"), "g");
    let first = null;
    for (const match of text.matchAll(pattern)) {
      const range = [match.index, match.index + match[0].length];
      if (range[0] >= spanStart && range[1] <= spanEnd) return range;
      first ||= range;
    }
    if (first) return first;
  }
  return [spanStart, spanEnd];
}

export class SourceViewer {
  constructor({ onError }) {
    this.onError = onError;
    this.panel = $("viewer");
    this.body = $("viewer-body");
    this.opener = null;
    this.downloadUrl = null;
    this.filename = "";
    $("viewer-close").addEventListener("click", () => this.close());
    $("viewer-download").addEventListener("click", (event) => {
      event.preventDefault();
      if (this.downloadUrl) api.download(this.downloadUrl, this.filename).catch(this.onError);
    });
    this.panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
    });
  }

  /** Show the panel with a title; `opener` gets the focus back on close. */
  show(title, opener) {
    this.opener = opener || null;
    this.downloadUrl = null;
    $("viewer-download").hidden = true;
    this.panel.hidden = false;
    document.body.classList.add("viewer-open");
    $("viewer-title").textContent = title;
    $("viewer-where").textContent = "Loading…";
    this.body.replaceChildren();
    // The panel takes the focus without scrolling anything: the page itself never moves.
    this.panel.focus({ preventScroll: true });
  }

  /** Open `citation` at its span; `back` (from a summary's source) returns to what was shown before. */
  async open(sessionId, citation, opener, back) {
    this.show(citation.document, opener);
    const backButton = back
      ? h("button", { type: "button", class: "link-button viewer-back", onclick: back }, "← Back to the summary")
      : "";
    if (citation.document === "supplied") {
      // Text the user pasted into a context request: it is the quote itself, there is no document to open.
      $("viewer-title").textContent = "Your supplied text";
      $("viewer-where").textContent = "";
      this.body.replaceChildren(h("div", { class: "excerpt" }, h("mark", { class: "quote" }, citation.quote)));
      return;
    }
    let view;
    try {
      view = await api.source(sessionId, citation.ref);
    } catch (error) {
      $("viewer-where").textContent = error.message;
      this.body.replaceChildren(backButton);
      return;
    }
    this.downloadUrl = view.content_url;
    $("viewer-download").hidden = false;
    this.filename = view.filename;
    // The sentence the answer quotes, not the whole span it sits in.
    view.quote = citation.quote || view.quote;
    [view.highlight_start, view.highlight_end] = quoteRange(view.text, view.quote, view.highlight_start,
      view.highlight_end);
    $("viewer-title").textContent = plain(view.filename);
    $("viewer-where").textContent = view.page
      ? `Page ${view.page} of ${view.page_count}`
      : "Quoted passage";
    const excerpt = this.excerpt(view);
    if (view.media_type === "application/pdf" && view.page) {
      const holder = h("div", { class: "pdf-page", "aria-hidden": "true" });
      this.body.replaceChildren(backButton, holder, h("h3", { class: "visually-hidden" }, "Text of the page"), excerpt);
      try {
        await this.renderPdfPage(holder, view);
        this.reveal(holder.querySelector(".highlight"));
      } catch (error) {
        holder.replaceChildren(h("p", { class: "error" }, `The page could not be drawn: ${error.message}`));
      }
    } else {
      this.body.replaceChildren(backButton, excerpt);
      this.reveal(excerpt.querySelector("mark"));
    }
  }

  /** Scroll the panel's body (and nothing else: scrollIntoView would move the page too) to show `element`. */
  reveal(element) {
    if (!element) return;
    const box = this.body.getBoundingClientRect();
    const at = element.getBoundingClientRect();
    this.body.scrollTop += at.top - box.top - Math.max(0, (box.height - at.height) / 3);
  }

  /** The extracted text around the span, the quote in a <mark>: text nodes only. */
  excerpt(view) {
    const text = view.text;
    return h(
      "div",
      { class: "excerpt" },
      text.slice(0, view.highlight_start),
      h("mark", { class: "quote" }, text.slice(view.highlight_start, view.highlight_end)),
      text.slice(view.highlight_end),
    );
  }

  async renderPdfPage(holder, view) {
    const lib = await loadPdfJs();
    const data = await api.content(view.content_url);
    const pdf = await lib.getDocument({ data, isEvalSupported: false, standardFontDataUrl: `${PDFJS}standard_fonts/` })
      .promise;
    const page = await pdf.getPage(view.page);
    const padding = getComputedStyle(this.body);
    const inner = this.body.clientWidth - parseFloat(padding.paddingLeft) - parseFloat(padding.paddingRight);
    const width = Math.max(240, inner - 2);
    const scale = width / page.getViewport({ scale: 1 }).width;
    const viewport = page.getViewport({ scale });
    const ratio = window.devicePixelRatio || 1;
    const canvas = h("canvas", { class: "pdf-canvas" });
    canvas.width = Math.floor(viewport.width * ratio);
    canvas.height = Math.floor(viewport.height * ratio);
    canvas.style.width = `${Math.floor(viewport.width)}px`;
    canvas.style.height = `${Math.floor(viewport.height)}px`;
    const layer = h("div", { class: "textLayer", dataset: { page: String(view.page) } });
    holder.style.width = `${Math.floor(viewport.width)}px`;
    holder.style.height = `${Math.floor(viewport.height)}px`;
    holder.style.setProperty("--scale-factor", String(scale));
    holder.style.setProperty("--total-scale-factor", String(scale));
    holder.replaceChildren(canvas, layer);
    const transform = ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : null;
    await page.render({ canvas, canvasContext: canvas.getContext("2d"), viewport, transform }).promise;
    const textLayer = new lib.TextLayer({ textContentSource: await page.getTextContent(), container: layer, viewport });
    await textLayer.render();
    const hits = itemsCovering(textLayer.textContentItemsStr, plain(view.quote));
    textLayer.textDivs.forEach((div, index) => {
      if (hits.has(index)) div.classList.add("highlight");
    });
    holder.dataset.rendered = "true";
  }

  /** A file's summary (or the summary of all files) and its key points, each with the passages it comes from:
   * a passage opens at its span, with a way back to the summary. */
  async digest(title, load, opener, sessionId) {
    this.show(title, opener);
    let digest;
    try {
      digest = await load();
    } catch (error) {
      $("viewer-where").textContent = error.message;
      return;
    }
    $("viewer-where").textContent = "Summary";
    const again = () => this.digest(title, load, opener, sessionId);
    const source = (ref, claim) => {
      const { filename, spanId, hint } = splitSourceRef(ref);
      const label = hint ? `${filename}, ${hint}` : filename;
      if (!spanId) return label;
      // The point's own words mark where it is said (the whole passage when it is put otherwise).
      const citation = { ref: `${filename}::${spanId}`, document: filename, quote: claim };
      return h("button", { type: "button", class: "link-button fact-source",
        onclick: () => this.open(sessionId, citation, opener, again) }, label);
    };
    const facts = (digest.facts || []).map((fact) => h("li", {}, fact.claim, " ", h("span", { class: "muted" },
      "(", ...(fact.sources || []).flatMap((ref, index) => [index ? ", " : "", source(ref, fact.claim)]), ")")));
    this.body.replaceChildren(
      h("div", { class: "digest" },
        h("p", { class: "digest-summary" }, digest.summary || "No summary."),
        facts.length ? h("h3", {}, "Key points") : null,
        facts.length ? h("ul", { class: "digest-facts" }, ...facts) : null),
    );
  }

  close() {
    this.panel.hidden = true;
    document.body.classList.remove("viewer-open");
    this.body.replaceChildren();
    this.opener?.focus();
  }
}

/** The parts of a SourceRef "lease.pdf::S3::p. 2": the file, its span id and the readable hint after it (a
 * filename may itself hold "::", so the span id is the last part that looks like one). */
export function splitSourceRef(ref) {
  const parts = String(ref).split("::");
  const at = parts.findLastIndex((part, index) => index > 0 && /^S\d+$/.test(part));
  if (at < 0) return { filename: parts[0], spanId: null, hint: parts.slice(1).join(" ") };
  return { filename: parts.slice(0, at).join("::"), spanId: parts[at], hint: parts.slice(at + 1).join(" ") };
}
