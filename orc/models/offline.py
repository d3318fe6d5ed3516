"""orc's built-in offline extractive model: the default model, deterministic and free of network access.

It is a real LangChain chat model, so the graph treats it like any other (``ainvoke``, ``astream``,
``bind_tools``). It recognises its task from the message structure orc's prompts define:

- tools bound → tool planning that follows the tool access rules (:mod:`orc.models.planning`);
- a ``<sources>`` block in the system prompt → an extractive answer with citations (:mod:`orc.models.answering`),
  or, for a question about which documents exist, the listing a ``…list`` tool returned. Earlier
  ``HumanMessage``s are the conversation's history: an elliptical follow-up ("and the notice period?") is made
  standalone from them (:func:`orc.models.rewriting.rewrite_follow_up`) inside the same call, and one that counts
  into the previous answer ("and the second one?") is answered with that item (:mod:`orc.models.ordinals`);
- a ``TASK: PER_FILE_DIGEST`` or ``TASK: AGGREGATE_DIGEST`` envelope → a valid, extractive context digest
  (:mod:`orc.models.digesting`);
- a request for what files are about ("Summarize lease.md") with their digests in the prompt → each file's
  summary and first facts, citing their spans (:mod:`orc.models.summaries`);
- a message that only greets, thanks or says goodbye → a person's reply, and no tool (:mod:`orc.models.small_talk`);
- anything else → a short, honest statement of what it cannot do.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from orc.models.answering import Source, answer_question, find_sources
from orc.models.choice import ModelCapabilities
from orc.models.digesting import digest_reply
from orc.models.messages import Reply, ToolSchemaChatModel, offered_tools
from orc.models.ordinals import ordinal_index, pick_item
from orc.models.planning import plan_tool_calls, wants_document_list
from orc.models.rewriting import rewrite_follow_up
from orc.models.small_talk import small_talk_reply
from orc.models.summaries import summary_answer

__all__ = ["OFFLINE_MODEL_NAME", "UNSUPPORTED_REPLY", "OfflineExtractiveModel"]

OFFLINE_MODEL_NAME = "orc-offline-extractive"
UNSUPPORTED_REPLY = (
    "I am orc's offline extractive model: I can only answer questions by quoting and citing the passages of "
    "your documents that match them, so I cannot help with this request. Configure a language model "
    "(ORC_MODEL) for anything else."
)


_LIST_ANSWER = re.compile(r'<tool_answer tool="[^"]*\.list"\s*>\n?(.*?)\n?</tool_answer>', re.DOTALL)


def listed_documents(system_text: str) -> str | None:
    """The text of the last document listing a ``…list`` tool returned in this turn, if any."""
    found = _LIST_ANSWER.findall(system_text)
    if not found:
        return None
    return html.unescape(found[-1]).strip() or None


# A line of documents.list's text ("- lease.pdf [ready] (folder legal) id=doc-…, ~1200 tokens") and the context
# block's line for a turn with attached files ("- session (attached to this question): lease.pdf, annex.docx").
_LISTED_LINE = re.compile(r"^- (?P<name>.+?) \[(?P<status>[^\]]+)\](?: \((?P<where>[^)]*)\))?", re.MULTILINE)
_ATTACHED_LINE = re.compile(r"^- session \(attached to this (?:question|conversation)\): (?P<names>.+)$", re.MULTILINE)


def documents_answer(system_text: str) -> str | None:
    """ "Which documents do I have?" answered for a person: the files attached to the conversation, else those the
    listing tool returned — names, where they are and whether they are ready, never ids or token counts."""
    attached = _ATTACHED_LINE.search(system_text)
    if attached is not None:
        names = [name.strip() for name in attached.group("names").split(", ") if name.strip()]
        return "The files attached to this conversation:\n" + "\n".join(f"- {name}" for name in names)
    listing = listed_documents(system_text)
    if listing is None:
        return None
    lines = []
    for match in _LISTED_LINE.finditer(listing):
        where = match.group("where")
        details = ["this conversation" if where == "session" else where] if where else []
        if match.group("status") != "ready":
            details.append(match.group("status"))
        lines.append(f"- {match.group('name')}" + (f" ({', '.join(details)})" if details else ""))
    if not lines:
        return "There are no documents here yet."
    return f"You have {len(lines)} document{'s' if len(lines) > 1 else ''}:\n" + "\n".join(lines)


class OfflineExtractiveModel(ToolSchemaChatModel):
    """A deterministic chat model that answers from the sources in its prompt and plans tools by rule."""

    model_name: str = OFFLINE_MODEL_NAME
    orc_capabilities: ClassVar[ModelCapabilities] = ModelCapabilities(
        cites_by_construction=True, titles_conversations=False, asks_for_context=False, counted_with_tiktoken=False
    )

    @property
    def _llm_type(self) -> str:
        return "orc-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def _reply(self, messages: list[BaseMessage], kwargs: Mapping[str, Any], *, streamed: bool) -> Reply:
        return self.respond(messages, **kwargs)

    def respond(self, messages: Sequence[BaseMessage], **kwargs: Any) -> Reply:
        """Decide the reply to ``messages`` (the model's whole logic, without LangChain plumbing)."""
        digest = digest_reply(messages)
        if digest is not None:
            return Reply(text=digest)
        system_text = "\n".join(message.text for message in messages if isinstance(message, SystemMessage))
        asked = [message.text for message in messages if isinstance(message, HumanMessage)]
        question = asked[-1] if asked else ""
        sources = find_sources(system_text)
        talk = small_talk_reply(question)
        if talk is not None:
            # "Hello, thanks!" is answered as a person would; there is nothing to look up for it.
            planning = bool(offered_tools(kwargs)) and sources is None
            return Reply(text="" if planning else talk)
        answered = [message.text for message in messages if isinstance(message, AIMessage) and message.text]
        position = ordinal_index(question) if answered and sources is not None else None
        if position is not None and sources is not None:
            # "And the second one?" in an answer request: the second cited sentence of the previous answer, again.
            item = pick_item(answered[-1], position, {source.ref for source in sources})
            if item is not None:
                return Reply(text=item)
        if len(asked) > 1:
            # History arrives as Human/AI pairs before the question: resolve a follow-up against it.
            question = rewrite_follow_up(question, [("user", text) for text in asked[:-1]])
        tools = offered_tools(kwargs)
        if tools:
            calls = plan_tool_calls(question, messages, tools)
            if calls:
                return Reply(tool_calls=calls)
            if sources is None:
                # A planning prompt has no sources: an empty reply means "no more tools, go and answer".
                return Reply(text="")
        if sources is not None:
            # The answer request may offer the tools again: the listing a tool returned still answers
            # "which documents do I have?".
            listing = documents_answer(system_text) if wants_document_list(question) else None
            summary = summary_answer(question, system_text) if listing is None else None
            return Reply(text=listing or summary or self.answer(question, sources))
        return Reply(text=UNSUPPORTED_REPLY)

    def answer(self, question: str, sources: Sequence[Source]) -> str:
        """The extractive answer to ``question``, made standalone, from ``sources``: where
        ``bench.offline_decision_cases`` records what the answerer was asked and given."""
        return answer_question(question, sources)
