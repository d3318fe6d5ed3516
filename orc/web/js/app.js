// The chat page: sign-in as the server is configured, conversations, focus context, the composer and the turn
// stream. Everything the model or a document says is rendered by chat.js (sanitized) or as text.
import { api, askStream, auth } from "./api.js";
import { CONTEXT_KINDS, Messages, nameContexts } from "./chat.js";
import { RequestCard } from "./handoff.js";
import { decorate, placeRequests } from "./requests.js";
import { $, h, icon, plain, when } from "./dom.js";
import { FileChips } from "./files.js";
import { SourceViewer } from "./viewer.js";

const state = {
  config: null,
  sessionId: null,
  asking: null,
};

function newSessionId() {
  const random = crypto.getRandomValues(new Uint32Array(2));
  return `c${Date.now().toString(36)}${random[0].toString(36)}${random[1].toString(36)}`;
}

function showError(error) {
  const box = $("composer-error");
  box.textContent = error.message || String(error);
  box.hidden = false;
}

function clearError() {
  $("composer-error").hidden = true;
}

const viewer = new SourceViewer({ onError: showError });
const messages = new Messages({
  onCitation: (citation, opener) => viewer.open(state.sessionId, citation, opener),
  onRate: (messageId, rating) => api.feedback(state.sessionId, messageId, rating).catch(showError),
});
const chips = new FileChips({
  onError: showError,
  onDigest: (title, load, opener) => viewer.digest(title, load, opener, state.sessionId),
  onFilesChanged: () => loadConversations().catch(showError),
});

// -- sign-in -----------------------------------------------------------------------------------------------

function askForKey(reason) {
  const dialog = $("sign-in");
  $("sign-in-error").hidden = !reason;
  $("sign-in-error").textContent = reason || "";
  if (!dialog.open) dialog.showModal();
  return new Promise((resolve) => {
    $("sign-in-form").addEventListener(
      "submit",
      () => {
        auth.key = $("api-key").value.trim();
        $("api-key").value = "";
        resolve();
      },
      { once: true },
    );
  });
}

async function signIn(config) {
  auth.mode = config.auth;
  if (config.auth === "api-key") {
    auth.onUnauthenticated = () => {
      auth.key = null;
    };
    if (!auth.key) await askForKey();
    for (;;) {
      try {
        await api.me();
        return;
      } catch (error) {
        if (error.status !== 401) throw error;
        await askForKey("That key was not accepted.");
      }
    }
  }
  if (config.auth === "easyauth") {
    auth.onUnauthenticated = () => window.location.assign(config.sign_in_url);
  }
}

// -- conversations -----------------------------------------------------------------------------------------

async function loadConversations() {
  const list = $("conversations");
  const { sessions } = await api.sessions();
  list.replaceChildren(
    ...sessions.map((session) => {
      const current = session.conversation_id === state.sessionId;
      return h(
        "li",
        { class: current ? "conversation current" : "conversation", dataset: { id: session.conversation_id } },
        h(
          "button",
          {
            type: "button",
            class: "conversation-open",
            "aria-current": current ? "page" : null,
            onclick: () => openConversation(session.conversation_id),
          },
          h("span", { class: "conversation-title" }, session.title || "Untitled"),
          h("time", { class: "muted", datetime: session.updated_at }, when(session.updated_at)),
        ),
        h(
          "button",
          {
            type: "button",
            class: "icon-button conversation-rename",
            onclick: (event) => renameConversation(session, event.currentTarget.closest("li")),
          },
          icon("edit"),
          h("span", { class: "visually-hidden" }, ` Rename “${session.title || "Untitled"}”`),
        ),
        h(
          "button",
          { type: "button", class: "icon-button conversation-delete", onclick: () => deleteConversation(session) },
          icon("close"),
          h("span", { class: "visually-hidden" }, ` Delete “${session.title || "Untitled"}”`),
        ),
      );
    }),
  );
  list.removeAttribute("aria-busy");
  $("conversations-empty").hidden = sessions.length > 0;
  // The header follows the title the server gave the conversation (from its first question, or a rename).
  const current = sessions.find((session) => session.conversation_id === state.sessionId);
  if (current?.title) $("chat-title").textContent = plain(current.title);
}

function closeSidebarOnSmallScreens() {
  if (window.matchMedia("(max-width: 760px)").matches) setSidebar(false);
}

function setSidebar(open) {
  document.body.classList.toggle("sidebar-open", open);
  $("toggle-sidebar").setAttribute("aria-expanded", String(open));
}

/** The open conversation in the address (``#c=ID``), so a reload or a bookmark comes back to it. Replaced, not
 * pushed: Back still leaves the page rather than stepping through every chat opened. */
function showInAddress(id) {
  history.replaceState(null, "", id ? `#c=${encodeURIComponent(id)}` : location.pathname + location.search);
}

function linkedConversation() {
  const match = /^#c=(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

function newChat() {
  state.asking?.abort();
  showInAddress(null);
  state.sessionId = newSessionId();
  messages.clear();
  viewer.close();
  $("chat-title").textContent = "New chat";
  chips.open(state.sessionId, { known: false });
  loadConversations().catch(showError);
  closeSidebarOnSmallScreens();
  $("question").focus();
}

async function openConversation(id) {
  state.asking?.abort();
  clearError();
  state.sessionId = id;
  showInAddress(id);
  viewer.close();
  closeSidebarOnSmallScreens();
  try {
    const conversation = await api.session(id);
    $("chat-title").textContent = plain(conversation.title || "Untitled");
    messages.history(conversation.messages, (question, files) => ask(question, files));
    placeRequests(messages.list, conversation.context_requests || []);
    // A question still waiting for context shows its card again, so it can be answered later.
    for (const pending of (conversation.context_requests || []).filter((r) => r.status === "pending")) {
      messages.question(pending.question, pending.blob_names);
      const view = messages.answer();
      view.request(requestCard(view, { ...pending, conversation_id: id }));
    }
  } catch (error) {
    // A link to a conversation deleted since (or never made) starts a new chat instead.
    if (error.status === 404) return newChat();
    showError(error);
  }
  chips.open(id);
  loadConversations().catch(showError);
  $("question").focus();
}

async function deleteConversation(session) {
  if (!window.confirm(`Delete “${plain(session.title || "Untitled")}” and its files?`)) return;
  try {
    await api.deleteSession(session.conversation_id);
  } catch (error) {
    showError(error);
    return;
  }
  if (session.conversation_id === state.sessionId) newChat();
  else await loadConversations();
  $("new-chat").focus();
}

// -- focus context -----------------------------------------------------------------------------------------

/** The organization, its folders and their usecases as options (indented by depth). */
async function loadFocusContexts() {
  const select = $("focus");
  let me;
  try {
    me = await api.me();
  } catch {
    return;
  }
  const options = [];
  const names = [];
  async function visit(type, id, depth) {
    let node;
    try {
      node = await api.context(type, id);
    } catch {
      return;
    }
    const name = plain(node.name || node.id);
    names.push([`${node.type}:${node.id}`, name]);
    const label = `${"\u00a0\u00a0".repeat(depth)}${name}`;
    const kind = CONTEXT_KINDS[node.type] || node.type;
    options.push(h("option", { value: `${node.type}:${node.id}` }, `${label} (${kind})`));
    for (const child of node.children) await visit(child.type, child.id, depth + 1);
  }
  await visit("organization", me.organization, 0);
  select.append(...options);
  nameContexts(names);
}

function focusContext() {
  const value = $("focus").value;
  if (!value) return null;
  const at = value.indexOf(":");
  return { type: value.slice(0, at), id: value.slice(at + 1) };
}

// -- asking ------------------------------------------------------------------------------------------------

/** One turn, streamed into a new answer. Regenerate asks the same question again through here, with the files it
 * was asked with: the same turn, a new answer (both stay in the conversation). */
async function ask(question, asked) {
  if (state.asking) return;
  const controller = new AbortController();
  state.asking = controller;
  const sessionId = state.sessionId;
  // The server takes at most max_blob_names files per turn.
  const files = asked || chips.names().slice(0, state.config.max_blob_names);
  showInAddress(sessionId);
  chips.settle();
  messages.question(question, files);
  let stopped = false;
  const view = messages.answer({
    // Closing the stream stops the turn on the server: it is cancelled there and nothing is stored.
    onStop: () => { stopped = true; controller.abort(); },
    onRegenerate: () => ask(question, files),
  });
  $("send").disabled = true;
  // The page can show a context request, so a turn that lacks context may pause and ask for it.
  const turn = { question, conversation_id: sessionId, blob_names: files, context_requests: "allow" };
  const context = focusContext();
  if (context) turn.context = context;
  // The question box is free again once the turn has said its last word, not when its stream closes: a
  // question sent (or a suggestion clicked) as the answer appears was dropped while the connection wound down.
  const release = () => {
    if (state.asking !== controller) return;
    state.asking = null;
    $("send").disabled = false;
  };
  try {
    for await (const event of askStream(turn, controller.signal)) {
      handle(view, event);
      if (event.type === "final" || event.type === "context_required") release();
    }
  } catch (error) {
    if (stopped) view.stopped();
    else if (error.name !== "AbortError") view.error(error.message);
  } finally {
    release();
  }
  if (sessionId === state.sessionId) await loadConversations().catch(showError);
}

let firstToken = true;

function handle(view, event) {
  switch (event.type) {
    case "progress":
    case "tool":
      view.step(event);
      break;
    case "token":
      view.token(event.text);
      if (firstToken) {
        firstToken = false;
        performance.mark("orc:first-token");
      }
      break;
    case "citation":
      view.citation(event);
      break;
    case "final":
      view.finish(event.answer, event.metadata);
      view.suggest(event.suggestions, (text) => ask(text));
      view.places(event.places_to_look);
      view.rate(event.message_id, null, (messageId, rating) => api.feedback(state.sessionId, messageId, rating));
      view.follow(view.element); // the suggestions and buttons under the answer are part of what to see
      break;
    case "context_required":
      view.request(requestCard(view, event));
      break;
    case "context_update":
    case "context_resolved":
      view.step({ type: "progress", message: event.type === "context_update"
        ? "Received: the answer still needs the rest" : "Received: the answer goes on" });
      break;
    case "error":
      view.error(event.message || "The answer failed.");
      break;
    default:
      break;
  }
}

/** The card of a paused turn: supplying (or running without) continues the same answer in place. */
function requestCard(view, event) {
  const sessionId = state.sessionId;
  const resume = async (events) => {
    let partial = false;
    view.body.classList.add("streaming");
    for await (const resumed of events) {
      if (resumed.type === "context_update") partial = true;
      handle(view, resumed);
    }
    if (partial) view.body.classList.remove("streaming");
    else await loadConversations().catch(showError);
    return partial ? "partial" : "done";
  };
  return decorate(new RequestCard(event, {
    supply: (payloads) => resume(api.supply(sessionId, event.request_id, payloads)),
    upload: (slot, files) => resume(api.supplyFiles(sessionId, event.request_id, slot, files)),
    runWithout: () => resume(api.runWithout(sessionId, event.request_id)),
    cancel: async () => {
      await api.cancelRequest(sessionId, event.request_id);
      view.error("Cancelled: this question was not answered.");
    },
  }), sessionId, event);
}

// -- conversations: rename and export -----------------------------------------------------------------------

function renameConversation(session, item) {
  const input = h("input", {
    class: "rename-input",
    value: plain(session.title || ""),
    "aria-label": "New title",
    maxlength: "200",
  });
  const save = async () => {
    const title = input.value.trim();
    if (title && title !== plain(session.title || "")) {
      try {
        await api.rename(session.conversation_id, title);
        if (session.conversation_id === state.sessionId) $("chat-title").textContent = title;
      } catch (error) {
        showError(error);
      }
    }
    await loadConversations().catch(showError);
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); input.blur(); }
    if (event.key === "Escape") { input.value = plain(session.title || ""); input.blur(); }
  });
  input.addEventListener("blur", save, { once: true });
  item.querySelector(".conversation-open").replaceWith(input);
  input.focus();
  input.select();
}

async function exportConversation(format) {
  $("export-menu").open = false;
  if (!state.sessionId) return;
  try {
    const { blob, name } = await api.exportSession(state.sessionId, format);
    const link = h("a", { href: URL.createObjectURL(blob), download: name, hidden: true });
    document.body.append(link);
    link.click();
    setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
  } catch (error) {
    showError(error.status === 404 ? new Error("Nothing to export yet: ask a question first.") : error);
  }
}

// -- keyboard shortcuts ------------------------------------------------------------------------------------

/** Single keys, as on GitHub or Gmail, only while no field has the focus (typing is never taken over). */
function shortcut(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
  const target = event.target;
  if (target.closest?.("input, textarea, select, [contenteditable], dialog")) return;
  const actions = {
    "?": () => $("shortcuts").showModal(),
    "/": () => $("question").focus(),
    n: newChat,
    c: () => messages.lastCitation()?.click(),
  };
  const action = actions[event.key];
  if (!action) return;
  event.preventDefault();
  action();
}

// -- wiring ------------------------------------------------------------------------------------------------

function wire() {
  for (const button of document.querySelectorAll("#export-menu button[data-format]")) {
    button.addEventListener("click", () => exportConversation(button.dataset.format));
  }
  $("new-chat").addEventListener("click", newChat);
  $("shortcuts-open").addEventListener("click", () => $("shortcuts").showModal());
  document.addEventListener("keydown", shortcut);
  $("toggle-sidebar").addEventListener("click", () => setSidebar(!document.body.classList.contains("sidebar-open")));
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    clearError();
    const question = $("question").value.trim();
    if (!question || state.asking) return;
    $("question").value = "";
    ask(question);
  });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("file-input").addEventListener("change", (event) => {
    const files = Array.from(event.target.files);
    event.target.value = "";
    showInAddress(state.sessionId);
    chips.add(files);
  });
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  // Files dropped anywhere on the chat are attached: a browser opens a file dropped outside a drop target in
  // place of the page, and the conversation is gone from the tab.
  document.addEventListener("dragover", (event) => event.preventDefault());
  document.addEventListener("drop", (event) => {
    if (event.target.closest?.("input[type=file]")) return; // a request card's own file field takes it
    event.preventDefault();
    zone.classList.remove("dragging");
    const files = Array.from(event.dataTransfer?.files || []);
    if (!files.length || event.target.closest?.("dialog, .context-request")) return;
    showInAddress(state.sessionId);
    chips.add(files);
  });
}

async function start() {
  wire();
  state.config = await api.uiConfig();
  $("question").maxLength = state.config.max_question_chars;
  chips.maxUploadBytes = state.config.max_upload_bytes;
  await signIn(state.config);
  const linked = linkedConversation();
  if (linked) {
    await openConversation(linked);
  } else {
    state.sessionId = newSessionId();
    chips.open(state.sessionId, { known: false });
    await loadConversations();
  }
  document.body.dataset.ready = "true";
  performance.mark("orc:ready");
  loadFocusContexts();
}

start().catch(showError);
