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

  async open(sessionId, citation, opener) {
    this.opener = opener || null;
    this.panel.hidden = false;
    document.body.classList.add("viewer-open");
    $("viewer-title").textContent = citation.document;
    $("viewer-where").textContent = "Loading…";
    this.body.replaceChildren();
    this.panel.focus();
    let view;
    try {
      view = await api.source(sessionId, citation.ref);
    } catch (error) {
      $("viewer-where").textContent = error.message;
      return;
    }
    this.downloadUrl = view.content_url;
    this.filename = view.filename;
    $("viewer-title").textContent = view.filename;
    $("viewer-where").textContent = view.page
      ? `Page ${view.page} of ${view.page_count} · ${view.span_id}`
      : `Passage ${view.span_id}`;
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
