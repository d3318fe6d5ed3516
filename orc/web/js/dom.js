// Small DOM helpers. Text always goes in as text nodes; only markdown.js produces HTML, and it sanitizes it.

/**
 * Server text as a reader sees it when it is shown as text. The server escapes whatever would open markup
 * (``path <string>`` arrives as ``path &lt;string&gt;``) for clients that render Markdown or HTML; a text node never
 * parses markup, so it shows the characters themselves. Only what the server's output policy writes is undone.
 */
export function plain(text) {
  return String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">");
}

/** h("button", {class: "x", onclick: f}, "label", child) — attributes, listeners (on*) and children. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : name === "title" ? plain(value) : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(plain(child)));
  }
  return element;
}

export const $ = (id) => document.getElementById(id);

/** "3 min ago", "yesterday", or a date: a short relative time for lists. */
export function when(iso) {
  const then = new Date(iso);
  if (Number.isNaN(then.getTime())) return "";
  const seconds = (Date.now() - then.getTime()) / 1000;
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return then.toLocaleDateString();
}

export function bytes(size) {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(0)} KB`;
  return `${(size / 1024 / 1024).toFixed(1)} MB`;
}

// Icons are inline SVG paths (24×24, stroked): emoji and symbol glyphs are empty boxes without an emoji font.
const ICONS = {
  menu: "M4 6h16M4 12h16M4 18h16",
  close: "M6 6l12 12M18 6L6 18",
  edit: "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4",
  up: "M7 11v9H4v-9h3zm0 0l4-7a2 2 0 0 1 3 2l-1 4h5a2 2 0 0 1 2 2l-2 7a2 2 0 0 1-2 1H7",
  down: "M7 13V4H4v9h3zm0 0l4 7a2 2 0 0 0 3-2l-1-4h5a2 2 0 0 0 2-2l-2-7a2 2 0 0 0-2-1H7",
  retry: "M4 12a8 8 0 1 0 3-6.2M4 4v5h5",
  summary: "M5 4h14v16H5zM8 8h8M8 12h8M8 16h5",
  download: "M12 4v11M7 10l5 5 5-5M5 20h14",
  replace: "M4 8h13l-3-3M20 16H7l3 3",
  copy: "M9 9h11v11H9zM5 15H4V4h11v1",
  stop: "M7 7h10v10H7z",
};

/** An inline SVG icon, hidden from assistive technology (its button carries the words). */
export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  for (const [key, value] of Object.entries({
    viewBox: "0 0 24 24", width: "18", height: "18", fill: "none", stroke: "currentColor", "stroke-width": "2",
    "stroke-linecap": "round", "stroke-linejoin": "round", "aria-hidden": "true", class: `icon icon-${name}`,
  })) svg.setAttribute(key, value);
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}

/** "26 Nov 2026, 14:05": a readable local date and time. */
export function stamp(iso) {
  const then = new Date(iso);
  if (Number.isNaN(then.getTime())) return "";
  return then.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** Text for a reader: "[lease.pdf::S2]" markers dropped, a bare SourceRef "lease.pdf::S2" shown as "lease.pdf". */
export function readable(text) {
  return String(text)
    .replace(/\s*\[[^[\]\n]*?::[^[\]\n]*?\]/g, "")
    .replace(/([^\s:]+(?:\.[^\s:]+)?)::[^\s:,;]+/g, "$1");
}
