// The side panel a citation opens: the document at the cited span with the quote highlighted. PDFs show the
// page itself through pdf.js, imported only when a PDF citation is opened (it is most of the page's weight).
import { api } from "./api.js";
import { $, h } from "./dom.js";

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
      this.download();
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
    this.panel.focus();
  }

  async open(sessionId, citation, opener) {
    this.show(citation.document, opener);
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
      return;
    }
    this.downloadUrl = view.content_url;
    $("viewer-download").hidden = false;
    this.filename = view.filename;
    // The sentence the answer quotes, not the whole span it sits in.
    view.quote = citation.quote || view.quote;
    [view.highlight_start, view.highlight_end] = quoteRange(view.text, view.quote, view.highlight_start,
      view.highlight_end);
    $("viewer-title").textContent = view.filename;
    $("viewer-where").textContent = view.page
      ? `Page ${view.page} of ${view.page_count}`
      : "Quoted passage";
    const excerpt = this.excerpt(view);
    if (view.media_type === "application/pdf" && view.page) {
      const holder = h("div", { class: "pdf-page", "aria-hidden": "true" });
      this.body.replaceChildren(holder, h("h3", { class: "visually-hidden" }, "Text of the page"), excerpt);
      try {
        await this.renderPdfPage(holder, view);
      } catch (error) {
        holder.replaceChildren(h("p", { class: "error" }, `The page could not be drawn: ${error.message}`));
      }
    } else {
      this.body.replaceChildren(excerpt);
    }
    this.body.querySelector("mark")?.scrollIntoView({ block: "center" });
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
    const hits = itemsCovering(textLayer.textContentItemsStr, view.quote);
    textLayer.textDivs.forEach((div, index) => {
      if (hits.has(index)) div.classList.add("highlight");
    });
    holder.dataset.rendered = "true";
  }

  /** A file's digest (or the summary of all files): its summary and facts, each fact with where it comes from. */
  async digest(title, load, opener) {
    this.show(title, opener);
    let digest;
    try {
      digest = await load();
    } catch (error) {
      $("viewer-where").textContent = error.message;
      return;
    }
    $("viewer-where").textContent = "Summary";
    const facts = (digest.facts || []).map((fact) =>
      h("li", {}, fact.claim, " ", h("span", { class: "muted" }, `(${(fact.sources || []).map(sourceName).join(", ")})`)));
    this.body.replaceChildren(
      h("div", { class: "digest" },
        h("p", { class: "digest-summary" }, digest.summary || "No summary."),
        facts.length ? h("h3", {}, "Key points") : null,
        facts.length ? h("ul", { class: "digest-facts" }, ...facts) : null),
    );
  }

  async download() {
    if (!this.downloadUrl) return;
    try {
      const data = await api.content(`${this.downloadUrl}?download=true`);
      const url = URL.createObjectURL(new Blob([data]));
      const link = h("a", { href: url, download: this.filename });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      this.onError(error);
    }
  }

  close() {
    this.panel.hidden = true;
    document.body.classList.remove("viewer-open");
    this.body.replaceChildren();
    this.opener?.focus();
  }
}

/** "lease.pdf, p. 2" from a SourceRef "lease.pdf::S3::p. 2" (the span id means nothing to a reader). */
function sourceName(ref) {
  const parts = String(ref).split("::");
  return parts.length > 2 ? `${parts[0]}, ${parts.slice(2).join(" ")}` : parts[0];
}
