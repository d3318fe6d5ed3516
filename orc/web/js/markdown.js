// Markdown to DOM, safely: marked renders, DOMPurify sanitizes, and the result is a fragment (never a string
// handed to innerHTML). Model and document text reach the page only through here or as text nodes.
import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => text.replace(/[&<>"']/g, (char) => ESCAPES[char]);

// Raw HTML in an answer (often quoted from a document) is shown as the text it is, never parsed as markup: the
// sanitizer would drop it anyway, but even parsing it makes the browser weigh its event handlers.
const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html(token) {
      return escapeHtml(token.text);
    },
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  // Links from an answer open elsewhere and never get the page's window.
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const OPTIONS = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "iframe", "object", "embed"],
  FORBID_ATTR: ["style", "class", "id"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
};

/** A sanitized DocumentFragment of `text` rendered as markdown. */
export function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text || ""), OPTIONS);
}
