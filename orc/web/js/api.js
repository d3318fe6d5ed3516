// The HTTP API as the page uses it: credentials, problem+json errors and the two stream formats.
// The API key lives in sessionStorage only (never in a URL); cookie sign-in needs nothing here.

import { plain } from "./dom.js";

const KEY_STORAGE = "orc.apiKey";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const auth = {
  mode: "none",
  onUnauthenticated: null,
  get key() {
    return sessionStorage.getItem(KEY_STORAGE);
  },
  set key(value) {
    if (value) sessionStorage.setItem(KEY_STORAGE, value);
    else sessionStorage.removeItem(KEY_STORAGE);
  },
};

function headers(extra = {}) {
  const all = { ...extra };
  if (auth.mode === "api-key" && auth.key) all["X-API-Key"] = auth.key;
  return all;
}

function problem(status, text, fallback) {
  let code = "http_" + status;
  let message = fallback || "the request failed";
  let limit;
  try {
    const body = JSON.parse(text);
    code = body.code || code;
    // Shown as text: undo the server's escaping of what would open markup ("<document>::<span_id>").
    message = plain(body.detail || body.title || message);
    limit = body.limit;
  } catch {
    // Not JSON: keep the status line.
  }
  if (status === 401 && auth.onUnauthenticated) auth.onUnauthenticated(message);
  const error = new ApiError(status, code, message);
  error.limit = limit;
  return error;
}

const UNREACHABLE = "The server could not be reached: check your connection and that orc is still running, then try again.";

/** A request that never got an answer (the server stopped, the network dropped), in words instead of the
 * browser's "Failed to fetch"; a request the page cancelled stays an AbortError. */
function unreachable(error) {
  return error?.name === "AbortError" ? error : new ApiError(0, "network_error", UNREACHABLE);
}

async function failure(response) {
  return problem(response.status, await response.text().catch(() => ""), response.statusText);
}

/** A multipart upload with its progress (fetch cannot report an upload's progress): onProgress(loaded, total). */
function sendForm(method, path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    for (const [name, value] of Object.entries(headers())) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) => onProgress?.(event.loaded, event.total);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(JSON.parse(xhr.responseText));
      else reject(problem(xhr.status, xhr.responseText, xhr.statusText));
    };
    xhr.onerror = () => reject(unreachable(null));
    xhr.send(form);
  });
}

/** fetch() with credentials; throws ApiError for any non-2xx answer. */
export async function request(path, { method = "GET", body, json, accept, signal } = {}) {
  const extra = {};
  if (json !== undefined) {
    extra["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  if (accept) extra.Accept = accept;
  let response;
  try {
    response = await fetch(path, { method, body, signal, headers: headers(extra), credentials: "same-origin" });
  } catch (error) {
    throw unreachable(error);
  }
  if (!response.ok) throw await failure(response);
  return response;
}

export async function getJson(path, options) {
  return (await request(path, options)).json();
}

/** Lines of a streamed body as they arrive (NDJSON). */
async function* lines(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    let value;
    let done;
    try {
      ({ value, done } = await reader.read());
    } catch (error) {
      throw unreachable(error); // the connection dropped in the middle of the stream
    }
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
    }
  }
  buffer += decoder.decode();
  if (buffer) yield buffer;
}

/** The parsed objects of an NDJSON body, as they arrive. */
export async function* ndjson(response) {
  for await (const line of lines(response)) {
    if (line.trim()) yield JSON.parse(line);
  }
}

/** The events of one turn (POST /api/orc, NDJSON), each a parsed object with a `type`. */
export async function* askStream(turn, signal) {
  yield* ndjson(await request("/api/orc", { method: "POST", json: turn, accept: "application/x-ndjson", signal }));
}

/** The events of a resumed turn (supply or run-without, NDJSON). */
async function* resumeStream(path, options) {
  yield* ndjson(await request(path, { method: "POST", accept: "application/x-ndjson", ...options }));
}

/** Server-sent events read with fetch (EventSource cannot send the API key header): {event, data}. */
export async function* serverEvents(path, signal) {
  const response = await request(path, { accept: "text/event-stream", signal });
  let event = "message";
  let data = [];
  for await (const raw of lines(response)) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line === "") {
      if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
      event = "message";
      data = [];
    } else if (line.startsWith("event:")) {
      event = line.slice(6).trim();
    } else if (line.startsWith("data:")) {
      data.push(line.slice(5).trimStart());
    }
  }
}

export const api = {
  uiConfig: () => getJson("/api/ui-config"),
  me: () => getJson("/api/me"),
  sessions: () => getJson("/api/sessions"),
  session: (id) => getJson(`/api/sessions/${encodeURIComponent(id)}`),
  deleteSession: (id) => request(`/api/sessions/${encodeURIComponent(id)}`, { method: "DELETE" }),
  manifest: (id) => getJson(`/api/sessions/${encodeURIComponent(id)}/context`),
  contextStream: (id, signal) => serverEvents(`/api/sessions/${encodeURIComponent(id)}/context/stream`, signal),
  upload(id, files, onProgress) {
    const form = new FormData();
    for (const file of files) form.append("files", file, file.name);
    return sendForm("POST", `/api/sessions/${encodeURIComponent(id)}/context/files`, form, onProgress);
  },
  replace(id, fileId, file, onProgress) {
    const form = new FormData();
    form.append("files", file, file.name);
    const path = `/api/sessions/${encodeURIComponent(id)}/context/files/${encodeURIComponent(fileId)}`;
    return sendForm("PUT", path, form, onProgress);
  },
  removeFile: (id, fileId) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}/context/files/${encodeURIComponent(fileId)}`, {
      method: "DELETE",
    }),
  fileDigest: (id, fileId) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}/context/files/${encodeURIComponent(fileId)}/digest`),
  aggregateDigest: (id) => getJson(`/api/sessions/${encodeURIComponent(id)}/context/digest`),
  retryParse: (id, fileId) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}/context/files/${encodeURIComponent(fileId)}/retry-parse`, {
      method: "POST",
    }),
  retryAggregate: (id) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}/context/digest/retry-parse`, { method: "POST" }),
  /** Where a session file's bytes are (its file id is its document id). */
  fileContent: (id, fileId) =>
    `/api/sessions/${encodeURIComponent(id)}/documents/${encodeURIComponent(fileId)}/content`,
  setAutoParse: (id, on) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}/context`, { method: "PATCH", json: { auto_parse: on } }),
  parseNow: (id) => getJson(`/api/sessions/${encodeURIComponent(id)}/context/parse`, { method: "POST" }),
  context: (type, id) => getJson(`/api/contexts/${encodeURIComponent(type)}/${encodeURIComponent(id)}`),
  source: (id, ref) => getJson(`/api/sessions/${encodeURIComponent(id)}/sources?ref=${encodeURIComponent(ref)}`),
  rename: (id, title) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}`, { method: "PATCH", json: { title } }),
  /** An export as a Blob (the API key cannot ride on a plain link) and the name the server gave it. */
  async exportSession(id, format) {
    const response = await request(`/api/sessions/${encodeURIComponent(id)}/export?format=${format}`);
    const disposition = response.headers.get("content-disposition") || "";
    const name = /filename="([^"]+)"/.exec(disposition)?.[1] || `conversation.${format}`;
    return { blob: await response.blob(), name };
  },
  feedback: (id, messageId, rating) =>
    getJson(`/api/sessions/${encodeURIComponent(id)}/messages/${encodeURIComponent(messageId)}/feedback`, {
      method: "POST",
      json: { rating },
    }),
  supply: (id, requestId, payloads) =>
    resumeStream(`${requestPath(id, requestId)}/supply`, { json: { payloads } }),
  supplyFiles(id, requestId, slot, files) {
    const form = new FormData();
    form.append("slot", slot);
    for (const file of files) form.append("files", file, file.name);
    return resumeStream(`${requestPath(id, requestId)}/supply`, { body: form });
  },
  runWithout: (id, requestId) => resumeStream(`${requestPath(id, requestId)}/run-without`),
  cancelRequest: (id, requestId) => getJson(`${requestPath(id, requestId)}/cancel`, { method: "POST" }),
  /** Save a document under `filename` (a plain link could not carry the API key). */
  async download(url, filename) {
    const data = await api.content(`${url}?download=true`);
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([data]));
    link.download = filename;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  },
  /** The document's bytes (pdf.js needs them as data: it cannot send the API key itself). */
  async content(url) {
    return new Uint8Array(await (await request(url)).arrayBuffer());
  },
};

function requestPath(id, requestId) {
  return `/api/sessions/${encodeURIComponent(id)}/context-requests/${encodeURIComponent(requestId)}`;
}
