"""From a model's answer to claims and their citations: pure functions, no I/O.

:func:`extract_claims` splits an answer into sentences (the claims), finds every citation in it and
ties each citation to the claim(s) it supports. All ``start``/``end`` offsets it reports are
**UTF-8 byte offsets** into the answer as given (``answer.encode()[start:end]``).

The rules, in the order they are applied:

**Structure.** Fenced code blocks are neither claims nor citations. Inline code spans are part of
their sentence but never hold a citation. Headings (``#`` and setext), list items, table rows,
block quotes and blank-line-separated paragraphs are *blocks*; a sentence never crosses a block.
Inside a block, sentences come from ``sentencex`` with URLs, links and code masked out first, so
"Dr.", "et al.", "e.g.", "U.S.", decimals and URLs do not end a sentence. A fragment holding only
citations (``"[1][2]"`` after the full stop) joins the sentence before it.

**Citations.** Recognised outside code:

* inline markdown links ``[text](url)``, ``[text](url "title")``, ``[text](<url>)`` with an
  http(s) destination (balanced parentheses kept); images ``![alt](url)`` and links to other
  schemes are not citations;
* reference-style links ``[text][1]`` / ``[text][label]`` whose label is defined;
* autolinks ``<https://...>`` and bare ``http(s)://`` URLs (spans by linkify-it-py: balanced
  parentheses kept, trailing punctuation and emphasis markers excluded);
* numbered markers ``[1]``, ``[1, 3]`` (also ``;``), ranges ``[1-3]`` / ``[1–3]`` (expanded; at
  most 20 numbers), adjacent ``[1][2]``, caret forms ``^[1]`` and footnotes ``[^1]``/``[^note]``.
  Numbers have 1 to 3 digits (``[2019]`` is not a marker). A group such as ``[1, 3]`` gives one
  :class:`~guardrail.core.schema.CitationRef` per number, all sharing the group's span.

**Resolution of markers.** Against the answer's own references first: markdown definitions
``[1]: url "title"`` / ``[^1]: url`` anywhere, and a *reference section* at the end of the answer:
entries ``[1] url``, ``[1] Title - url``, ``[1]: url``, ``1. url``, ``1. [Title](url)``, ``- url``,
optionally under a heading such as ``Sources:``, ``**References**`` or ``## Sources`` (also one
line: ``Sources: url1, url2``). Without a heading, ``1.``-style entries count only when the body
has markers or the entry is nothing but a URL/link, so an ordinary numbered list ending an answer
stays a list of claims. Then, for a number ``n``, against ``sources[n - 1]``. A marker that
resolves nowhere (or to an entry naming no URL) is kept with ``url=None`` and reported by the
verifier as ``not_found`` / ``unresolved_citation``: never dropped. The reference section and the
definitions are not claims.

**Paragraph-end rule.** Citations that end a block (only whitespace, punctuation and other
citations follow them) - numbered markers, bare URLs, autolinks and marker-like links such as
``[1](url)`` - also cover every sentence of that block that has no citation of its own and needs
checking; those copies carry ``inherited=True``. Prose links (``[WHO](url)``) cover only their
own sentence.

**Sources without markers.** When the answer cites nothing at all (``cite_unmarked=None``, the
default) or when ``cite_unmarked=True``, every sentence that needs checking and has no citation
cites every source passed in, and every entry of an unmarked reference section
(``Sources:\\n- url``), as ``kind="source"`` citations with an empty span at the sentence's end.

**Which sentences assert nothing** (``grounding_check_required=False``, see
:func:`needs_grounding`): headings; sentences with no letters once citations and markup are
removed (a bare URL, ``[1]``); sentences ending in ``:`` (lead-ins such as "Sources:") or ``?``;
and short filler sentences matching :data:`NON_ASSERTIVE_PATTERNS` ("Here is what I found.",
"Let me know if you have other questions.", "I hope this helps!"). They are reported but never
judged; the verifier still fetches the links they carry and reports them when all are dead.

Streaming callers use :func:`stream_cut` to know how much of a growing answer is final.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from linkify_it import LinkifyIt
from pydantic import BaseModel, Field
from sentencex import segment

from guardrail.core.schema import AnswerClaim, CitationKind, CitationRef, Reference, SourceInfo

__all__ = [
    "NON_ASSERTIVE_PATTERNS",
    "ExtractedAnswer",
    "Source",
    "extract_claims",
    "needs_grounding",
    "normalize_sources",
    "stream_cut",
]

# --------------------------------------------------------------------------------------------
# Sources passed in
# --------------------------------------------------------------------------------------------

_URL_RE = re.compile(r"^https?://[^\s<>\"]+$", re.I)
_DEFAULT_URL_KEYS = ("url", "source")


@dataclass(frozen=True)
class Source:
    """One item of ``sources``, normalised: a URL to fetch, or text to check as a fact."""

    index: int
    url: str | None
    text: str | None
    title: str | None = None

    def info(self) -> SourceInfo:
        """The public description of this source (no text)."""
        return SourceInfo(index=self.index, kind="url" if self.url else "text", url=self.url, title=self.title)


def _looks_like_url(value: object) -> bool:
    return isinstance(value, str) and bool(_URL_RE.match(value.strip()))


def _url_from_metadata(meta: Mapping[str, Any], url_key: str | None, where: str) -> str | None:
    if url_key is not None:
        value = meta.get(url_key)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise TypeError(f"{where}: metadata[{url_key!r}] must be a string, not {type(value).__name__}")
        return value.strip()
    # Default: "url" whatever it holds (a bad URL becomes an invalid_url verdict, not a silent
    # fallback); "source" only when it looks like a URL, because LangChain loaders put file
    # paths there.
    value = meta.get("url")
    if isinstance(value, str) and value.strip():
        return value.strip()
    value = meta.get("source")
    if _looks_like_url(value):
        return str(value).strip()
    return None


def _title_from(meta: Mapping[str, Any]) -> str | None:
    title = meta.get("title")
    return title.strip() or None if isinstance(title, str) else None


def _one_source(i: int, item: object, url_key: str | None) -> Source:
    where = f"sources[{i}]"
    if isinstance(item, str):
        if not _looks_like_url(item):
            raise ValueError(f"{where}: a string source must be an http(s) URL, got {item[:80]!r}")
        return Source(index=i, url=item.strip(), text=None)
    if isinstance(item, Mapping):
        url: str | None = None
        key = url_key or "url"
        value = item.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"{where}: {key!r} must be a string, not {type(value).__name__}")
            url = value.strip() or None
        if url is None and url_key is None and _looks_like_url(item.get("source")):
            url = str(item["source"]).strip()
        text = None
        for key in ("text", "page_content", "content"):
            value = item.get(key)
            if value is not None:
                if not isinstance(value, str):
                    raise TypeError(f"{where}: {key!r} must be a string, not {type(value).__name__}")
                text = value
                break
        meta = item.get("metadata")
        if url is None and isinstance(meta, Mapping):
            url = _url_from_metadata(meta, url_key, where)
        title = item.get("title") if isinstance(item.get("title"), str) else None
        if url is None and not (text and text.strip()):
            raise ValueError(f"{where}: a dict source needs a non-empty 'url' or 'text'")
        return Source(index=i, url=url, text=text, title=title)
    # LlamaIndex NodeWithScore wraps the node.
    node = getattr(item, "node", None)
    if node is not None and hasattr(node, "metadata"):
        item = node
    meta = getattr(item, "metadata", None)
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(f"{where}: .metadata must be a mapping, not {type(meta).__name__}")
    text = None
    obj: Any = item
    if hasattr(obj, "page_content"):  # LangChain Document
        text = obj.page_content
    elif callable(getattr(obj, "get_content", None)):  # LlamaIndex node
        text = obj.get_content()
    elif isinstance(getattr(obj, "text", None), str):
        text = obj.text
    elif meta is None:
        raise TypeError(
            f"{where}: unsupported source type {type(item).__name__}; expected a URL string, a dict "
            "with 'url'/'text', a LangChain Document or a LlamaIndex node"
        )
    if text is not None and not isinstance(text, str):
        raise TypeError(f"{where}: the source's text must be a string, not {type(text).__name__}")
    url = _url_from_metadata(meta or {}, url_key, where)
    if url is None and not (text and text.strip()):
        raise ValueError(f"{where}: the source has neither a URL in its metadata nor any text")
    return Source(index=i, url=url, text=text, title=_title_from(meta or {}))


def normalize_sources(sources: Sequence[object] | None, *, url_key: str | None = None) -> list[Source]:
    """Understand ``sources``: URL strings, ``{"url", "text"}`` dicts, LangChain ``Document``s
    (``.page_content`` + ``.metadata``), LlamaIndex nodes or ``NodeWithScore`` (``.node``,
    ``.metadata``, ``.get_content()`` / ``.text``), all duck-typed.

    The URL is read from ``metadata[url_key]`` when ``url_key`` is given, else from ``"url"``, else
    from ``"source"`` when that looks like an http(s) URL. A source with a URL is fetched; one with
    only text is checked against that text. Raises ``TypeError``/``ValueError`` naming the index.
    """
    if sources is None:
        return []
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Iterable):
        raise TypeError("sources must be a list, not a single string or object")
    return [_one_source(i, item, url_key) for i, item in enumerate(sources)]


# --------------------------------------------------------------------------------------------
# Which sentences assert something
# --------------------------------------------------------------------------------------------

_INTERJECTION = (
    r"(?:sure|certainly|of course|absolutely|okay|ok|thanks|thank you|you're welcome|"
    r"happy to help|glad to help|great|good news)"
)

NON_ASSERTIVE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.I)
    for p in (
        rf"{_INTERJECTION}",
        rf"(?:{_INTERJECTION}[,!.]? )?(?:great|good) question",
        rf"(?:{_INTERJECTION}[,!.]? )?here(?:'s|’s| is| are) (?:what i (?:found|know|could find)|"
        r"some|a|an|the|my|everything|more)\b[^.!?:]{0,80}",
        r"(?:below|above) (?:is|are) [^.!?:]{0,80}",
        r"(?:i|we) (?:found|have found|could find|was able to find|were able to find)(?: the following|"
        r" some| several| a few| these| a number of)?(?: relevant| useful)? (?:sources|results|articles|"
        r"pages|information|references|studies|links|documents)[^.!?:]{0,60}",
        r"let me (?:know|explain|break|summarize|summarise|check|look|help)\b[^.!?]{0,100}",
        r"(?:i )?hope (?:this|that|it) (?:helps|answers|clarifies)[^.!?]{0,60}",
        r"feel free to [^.!?]{0,100}",
        r"(?:please )?(?:don't|don’t|do not) hesitate to [^.!?]{0,100}",
        r"if you (?:have|need|want|would like)(?: any)?(?: more| other| further| additional)? "
        r"(?:questions?|help|information|assistance|clarification|details)\b[^.!?]{0,80}",
        r"(?:is there )?anything else (?:i can|you(?:'d| would) like)[^.!?]{0,60}",
        r"(?:in )?(?:summary|short|conclusion|brief)|to (?:summarize|summarise|sum up|conclude)",
        r"(?:(?:please )?(?:see|read|visit|check(?: out)?)(?: also)?|more|details|source|sources|via|"
        r"learn more)(?: (?:here|this|it|them|the (?:source|sources|link|links|article|page)))?"
        r"(?: (?:for|to learn) (?:more|details|more (?:details|information)))?",
    )
)
"""Whole-sentence patterns for filler that asserts nothing; matched against the sentence's plain
text without its final punctuation (and only when it has at most 25 words)."""

_TRAILING_JUNK = re.compile(r"[\s\W_]+$", re.U)


def needs_grounding(plain_text: str, *, heading: bool = False, extra_patterns: Iterable[re.Pattern[str]] = ()) -> bool:
    """Whether a sentence (its plain text: markup and citations removed) asserts something to check.

    False for a heading, a sentence with no letters, one ending in ``:`` or ``?`` (a lead-in or a
    question), and short filler matching :data:`NON_ASSERTIVE_PATTERNS` or ``extra_patterns``.
    """
    if heading:
        return False
    text = plain_text.strip()
    if not any(ch.isalpha() for ch in text):
        return False
    if text[-1] in ":：?？":
        return False
    core = _TRAILING_JUNK.sub("", text)
    if len(core.split()) > 25:
        return True
    return not any(p.fullmatch(core) for p in (*NON_ASSERTIVE_PATTERNS, *extra_patterns))


# --------------------------------------------------------------------------------------------
# Low-level scanning helpers (character offsets)
# --------------------------------------------------------------------------------------------

_LINKIFY = LinkifyIt(options={"fuzzy_link": False, "fuzzy_email": False, "fuzzy_ip": False})
_URL_TRAIL = "*_~.,;:!?'\"”’"
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
_HEADING = re.compile(r"^([ \t]{0,3}#{1,6})(?:[ \t]+|$)")
_SETEXT = re.compile(r"^[ \t]{0,3}(?:=+|-+)[ \t]*$")
_HR = re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_LIST_ITEM = re.compile(r"^([ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?)")
_QUOTE = re.compile(r"^([ \t]{0,3}>[ \t]?)+")
_DEF = re.compile(r"^[ \t]{0,3}\[(\^?[^\]\s]+)\]:[ \t]*(.*?)[ \t]*$")
_ENTRY_LABELLED = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?\^?\[\^?(\d{1,3})\]:?[ \t]*(.*?)[ \t]*$")
_ENTRY_NUMBERED = re.compile(r"^[ \t]*(\d{1,3})[.)][ \t]+(.*?)[ \t]*$")
_ENTRY_BULLET = re.compile(r"^[ \t]*[-*+][ \t]+(.*?)[ \t]*$")
_REF_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__|\*|_)?[ \t]*"
    r"(?:sources?|references?|citations?|links?|bibliography|works cited|further reading|"
    r"sources cited|sources used|reference list)"
    r"[ \t]*(?:\*\*|__|\*|_)?[ \t]*(:?)[ \t]*(?:\*\*|__|\*|_)?[ \t]*(.*?)[ \t]*$",
    re.I,
)
_MARKER = re.compile(
    r"(\^)?\[(\^[\w-]+|\d{1,3}(?:[ \t]*[-–][ \t]*\d{1,3})?(?:[ \t]*[,;][ \t]*\d{1,3}"
    r"(?:[ \t]*[-–][ \t]*\d{1,3})?)*)\]"
)
_MARKERISH = re.compile(r"^(?:\^?\[?\^?\d{1,3}\]?|\^[\w-]+)$")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>", re.I)
_REF_LINK = re.compile(r"\[([^\[\]\n]+)\]\[([^\[\]\n]*)\]")
_HTTP = re.compile(r"^https?://", re.I)
_SEPARATORS = " \t-–—:|,;()[]\"'“”‘’<>*_"


def _norm_label(label: str) -> str:
    return label.strip().lstrip("^").strip().lower()


def _lines(text: str) -> list[tuple[int, int, int]]:
    """(start, content_end, end) for every line; content excludes the line break."""
    out = []
    for m in _LINE.finditer(text):
        s, e = m.start(), m.end()
        ce = e
        if ce > s and text[ce - 1] == "\n":
            ce -= 1
        if ce > s and text[ce - 1] == "\r":
            ce -= 1
        out.append((s, ce, e))
    return out


def _trim_url(raw: str) -> str:
    url = raw
    while url and url[-1] in _URL_TRAIL:
        url = url[:-1]
    return url


def _bare_urls(text: str) -> list[tuple[int, int, str]]:
    """(start, end, url) of every http(s) URL linkify finds in ``text``, trailing junk trimmed."""
    out = []
    for m in _LINKIFY.match(text) or []:
        if m.schema.lower() not in ("http:", "https:"):
            continue
        url = _trim_url(m.raw)
        if url and _HTTP.match(url):
            out.append((m.index, m.index + len(url), url))
    return out


def _parse_link_tail(text: str, i: int) -> tuple[str, int] | None:
    """Parse ``(dest "title")`` starting at ``text[i] == "("``; return (dest, end) or None."""
    n = len(text)
    j = i + 1
    while j < n and text[j] in " \t":
        j += 1
    if j < n and text[j] == "<":
        k = text.find(">", j)
        if k < 0 or "\n" in text[j:k]:
            return None
        dest = text[j + 1 : k]
        j = k + 1
    else:
        start, depth = j, 0
        while j < n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c.isspace():
                break
            j += 1
        dest = text[start:j]
    while j < n and text[j] in " \t\n":
        j += 1
    if j < n and text[j] in "\"'(":
        close = ")" if text[j] == "(" else text[j]
        k = text.find(close, j + 1)
        if k < 0:
            return None
        j = k + 1
        while j < n and text[j] in " \t\n":
            j += 1
    if j < n and text[j] == ")" and dest:
        return dest, j + 1
    return None


def _matching_bracket(text: str, i: int, code: bytearray) -> int:
    """Index of the ``]`` closing ``text[i] == "["``, or -1 (no blank line crossed)."""
    depth = 0
    j = i
    n = len(text)
    while j < n:
        c = text[j]
        if code[j]:
            j += 1
            continue
        if c == "\\":
            j += 2
            continue
        if c == "\n" and text.startswith("\n", j + 1):
            return -1
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _find_entry_url(content: str) -> tuple[str | None, str | None]:
    """The URL and title of one reference entry's content, e.g. ``Title - https://...``."""
    m = re.search(r"\[([^\]]*)\]\(", content)
    if m:
        tail = _parse_link_tail(content, m.end() - 1)
        if tail and _HTTP.match(tail[0]):
            rest = (content[: m.start()] + " " + content[tail[1] :]).strip(_SEPARATORS)
            title = m.group(1).strip() or rest or None
            return tail[0], title
    m2 = _AUTOLINK.search(content)
    if m2:
        url, s, e = m2.group(1), m2.start(), m2.end()
    else:
        urls = _bare_urls(content)
        if not urls:
            return None, None
        s, e, url = urls[0]
    before, after = content[:s].strip(_SEPARATORS), content[e:].strip(_SEPARATORS)
    title = " ".join(t for t in (before, after) if t) or None
    return url, title


# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------


class ExtractedAnswer(BaseModel):
    """The claims and citations of one answer, before verification; byte offsets into ``answer``."""

    answer: str
    claims: list[AnswerClaim] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    references_start: int | None = None
    references_end: int | None = None
    sources: list[SourceInfo] = Field(default_factory=list)


@dataclass
class _Cite:
    start: int  # char offsets
    end: int
    kind: CitationKind
    url: str | None = None
    refs: list[str] = field(default_factory=list)  # normalised labels; one citation per label
    link_text: str | None = None
    propagates: bool = False  # may cover the sentences before it at a paragraph's end


@dataclass
class _Block:
    start: int
    end: int
    heading: bool = False
    single_line: bool = True


@dataclass
class _Ref:
    label: str | None
    url: str | None
    title: str | None
    start: int
    end: int


class _ByteMap:
    def __init__(self, text: str) -> None:
        acc = [0]
        total = 0
        for ch in text:
            o = ord(ch)
            total += 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
            acc.append(total)
        self.at = acc

    def __call__(self, i: int) -> int:
        return self.at[i]


# --------------------------------------------------------------------------------------------
# The extractor
# --------------------------------------------------------------------------------------------


class _Extractor:
    def __init__(
        self,
        text: str,
        sources: list[Source],
        language: str,
        extra_patterns: Sequence[re.Pattern[str]],
    ) -> None:
        self.text = text
        self.n = len(text)
        self.sources = sources
        self.language = language
        self.extra_patterns = extra_patterns
        self.lines = _lines(text)
        self.code = bytearray(self.n)  # 1 inside code (fenced or inline)
        self.fenced = bytearray(self.n)
        self.refzone = bytearray(self.n)  # reference section and definition lines
        self.excluded = bytearray(self.n)  # code or refzone
        self.markers = bytearray(self.n)  # inside a numbered marker
        self.consumed = bytearray(self.n)  # already part of a found citation or link
        self.unclosed_fence_at: int | None = None
        self.refs: list[_Ref] = []
        self.section: tuple[int, int] | None = None
        self.defs: dict[str, _Ref] = {}
        self.cites: list[_Cite] = []
        self.starts: list[int] = []

    # -- code --------------------------------------------------------------

    def find_code(self) -> None:
        text = self.text
        fence: tuple[str, int, int] | None = None  # (char, length, start)
        for s, ce, e in self.lines:
            line = text[s:ce]
            m = _FENCE.match(line)
            if fence is None:
                if m:
                    fence = (m.group(1)[0], len(m.group(1)), s)
                continue
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not line[m.end() :].strip():
                self._mark(self.fenced, fence[2], e)
                fence = None
        if fence is not None:
            self._mark(self.fenced, fence[2], self.n)
            self.unclosed_fence_at = fence[2]
        self.code[:] = self.fenced
        # Inline code spans, per stretch of text between fenced blocks.
        for seg_s, seg_e in self._runs(self.fenced, 0):
            chunk = text[seg_s:seg_e]
            for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", chunk, re.S):
                if "\n\n" in m.group(2) or (m.start() > 0 and chunk[m.start() - 1] == "\\"):
                    continue
                self._mark(self.code, seg_s + m.start(), seg_s + m.end())
        self.excluded[:] = self.code

    @staticmethod
    def _mark(flags: bytearray, s: int, e: int) -> None:
        flags[s:e] = b"\x01" * (e - s)

    def _runs(self, flags: bytearray, value: int) -> list[tuple[int, int]]:
        runs, i, n = [], 0, self.n
        while i < n:
            if flags[i] == value:
                j = i
                while j < n and flags[j] == value:
                    j += 1
                runs.append((i, j))
                i = j
            else:
                i += 1
        return runs

    def _line_free(self, s: int, ce: int) -> bool:
        return not any(self.fenced[s:ce])

    # -- references --------------------------------------------------------

    def find_references(self) -> None:
        text = self.text
        # Definitions anywhere: [1]: url "title", [^1]: url, [label]: url
        for s, ce, e in self.lines:
            if not self._line_free(s, ce):
                continue
            m = _DEF.match(text[s:ce])
            if m:
                url, title = _find_entry_url(m.group(2))
                ref = _Ref(_norm_label(m.group(1)), url, title, s, e)
                self.defs.setdefault(ref.label or "", ref)
                self._mark(self.refzone, s, e)
                self._mark(self.excluded, s, e)
        self._find_section()
        for r in self.refs:
            if r.label is not None:
                self.defs.setdefault(r.label, r)

    def _body_has_markers(self, upto: int) -> bool:
        return any(not self.excluded[m.start()] for m in _MARKER.finditer(self.text, 0, upto))

    def _find_section(self) -> None:
        text = self.text
        lines = self.lines
        i = len(lines) - 1
        entries: list[tuple[int, _Ref, str]] = []  # (line index, ref, style)
        while i >= 0:
            s, ce, e = lines[i]
            line = text[s:ce]
            if not line.strip():
                i -= 1
                continue
            if not self._line_free(s, ce):
                break
            hm = _REF_HEADING.match(line)
            if hm and (not hm.group(2) or (hm.group(1) and _bare_urls(hm.group(2)))):
                break  # the heading: handled below
            if self.refzone[s] and _DEF.match(line):  # a definition line: part of the section
                m = _DEF.match(line)
                assert m is not None
                url, title = _find_entry_url(m.group(2))
                entries.append((i, _Ref(_norm_label(m.group(1)), url, title, s, e), "def"))
                i -= 1
                continue
            parsed = self._parse_entry(line, s, e)
            if parsed is None:
                break
            entries.append((i, parsed[0], parsed[1]))
            i -= 1
        heading_line = None
        inline_refs: list[_Ref] = []
        if i >= 0:
            s, ce, e = lines[i]
            hm = _REF_HEADING.match(text[s:ce]) if self._line_free(s, ce) else None
            if hm and (not hm.group(2) or hm.group(1)):
                inline_refs = self._inline_entries(s + hm.start(2), s + hm.end(2), e) if hm.group(2) else []
                if not hm.group(2) or inline_refs:
                    heading_line = i
        if not entries and not inline_refs:
            return
        entries.reverse()  # top to bottom
        if heading_line is None:
            # No heading: accept the bottom run of entries that cannot be ordinary list items.
            has_markers = self._body_has_markers(lines[entries[0][0]][0])
            kept: list[tuple[int, _Ref, str]] = []
            for idx, ref, style in reversed(entries):
                ok = style == "def" or (
                    ref.url is not None and (style in ("labelled", "url_only") or (style == "numbered" and has_markers))
                )
                if not ok:
                    break
                kept.append((idx, ref, style))
            entries = list(reversed(kept))
            if not entries:
                return
        # Under a heading every entry counts, also one naming no URL (it resolves to nothing).
        refs = inline_refs + [ref for _, ref, _ in entries]
        start = lines[heading_line][0] if heading_line is not None else entries[0][1].start
        end = entries[-1][1].end if entries else lines[heading_line or 0][2]
        self.refs = refs
        self.section = (start, end)
        self._mark(self.refzone, start, end)
        self._mark(self.excluded, start, end)

    def _parse_entry(self, line: str, s: int, e: int) -> tuple[_Ref, str] | None:
        m = _ENTRY_LABELLED.match(line)
        if m:
            url, title = _find_entry_url(m.group(2))
            return _Ref(_norm_label(m.group(1)), url, title or None, s, e), "labelled"
        m = _ENTRY_NUMBERED.match(line)
        if m:
            url, title = _find_entry_url(m.group(2))
            if url is None:
                return None
            return _Ref(m.group(1), url, title, s, e), ("url_only" if title is None else "numbered")
        m = _ENTRY_BULLET.match(line)
        content = m.group(1) if m else line.strip()
        url, title = _find_entry_url(content)
        if url is None:
            return None
        link_only = re.fullmatch(r"\[[^\]]*\]\([^)]*(?:\([^)]*\)[^)]*)*\)", content) is not None
        style = "url_only" if title is None or link_only else "bullet"
        return _Ref(None, url, title, s, e), style

    def _inline_entries(self, cs: int, ce: int, line_end: int) -> list[_Ref]:
        """Entries written on the heading line itself: ``Sources: [1] url, [2] url`` or ``url, url``."""
        text = self.text
        content = text[cs:ce]
        pieces: list[tuple[int, int, str | None]] = []  # (start, content start, label)
        labelled = list(re.finditer(r"\^?\[\^?(\d{1,3})\]:?", content))
        if labelled:
            if labelled[0].start() != 0:
                return []
            pieces = [(m.start(), m.end(), _norm_label(m.group(1))) for m in labelled]
        else:
            urls = _bare_urls(content)
            if not urls:
                return []
            pieces = [(0, 0, None)]
            prev_end = urls[0][1]
            for us, ue, _ in urls[1:]:
                sep = content[prev_end:us]
                cut = max(sep.rfind(","), sep.rfind(";"), sep.rfind("|"))
                at = prev_end + (cut + 1 if cut >= 0 else 0)
                pieces.append((at, at, None))
                prev_end = ue
        bm = len(content)
        out: list[_Ref] = []
        for k, (ps, pcs, label) in enumerate(pieces):
            pe = pieces[k + 1][0] if k + 1 < len(pieces) else bm
            url, title = _find_entry_url(content[pcs:pe])
            if url is None and label is None:
                return []
            out.append(_Ref(label, url, title, cs + ps, cs + pe if k + 1 < len(pieces) else line_end))
        # The last entry's span takes the separator before it, so removing any subset of entries
        # leaves a well-formed list.
        if len(out) > 1:
            last = out[-1]
            prev = out[-2]
            sep_start = cs + len(content[: last.start - cs].rstrip(" \t,;|"))
            out[-2] = _Ref(prev.label, prev.url, prev.title, prev.start, sep_start)
            out[-1] = _Ref(last.label, last.url, last.title, sep_start, last.end)
        return out

    # -- citations in the body ----------------------------------------------

    def _free(self, s: int, e: int) -> bool:
        return not any(self.excluded[s:e]) and not any(self.consumed[s:e])

    def find_citations(self) -> None:
        text = self.text
        # Inline links and images.
        for m in re.finditer(r"!?\[", text):
            s = m.start()
            b = m.end() - 1
            if self.excluded[b] or self.consumed[b] or (b > 0 and text[b - 1] == "\\" and text[s] != "!"):
                continue
            close = _matching_bracket(text, b, self.code)
            if close < 0 or close + 1 >= self.n or text[close + 1] != "(":
                continue
            tail = _parse_link_tail(text, close + 1)
            if tail is None:
                continue
            dest, end = tail
            if any(self.fenced[s:end]) or any(self.refzone[s:end]):
                continue
            self._mark(self.consumed, s, end)
            if text[s] == "!" or not _HTTP.match(dest):
                continue  # images and non-web links are not citations
            label = text[b + 1 : close]
            marker_like = bool(_MARKERISH.match(label.strip())) or bool(_HTTP.match(label.strip()))
            self.cites.append(
                _Cite(
                    s, end, "markdown_link", url=dest, link_text=None if marker_like else label, propagates=marker_like
                )
            )
        # Reference-style links [text][label].
        for m in _REF_LINK.finditer(text):
            s, e = m.start(), m.end()
            if not self._free(s, e) or _MARKER.fullmatch(f"[{m.group(1)}]"):
                continue
            label = _norm_label(m.group(2) or m.group(1))
            if not (label.isdigit() or label in self.defs):
                continue
            self._mark(self.consumed, s, e)
            self.cites.append(_Cite(s, e, "markdown_link", refs=[label], link_text=m.group(1)))
        # Autolinks and bare URLs.
        for m in _AUTOLINK.finditer(text):
            if self._free(m.start(), m.end()):
                self._mark(self.consumed, m.start(), m.end())
                self.cites.append(_Cite(m.start(), m.end(), "autolink", url=m.group(1), propagates=True))
        for us, ue, url in _bare_urls(text):
            if self._free(us, ue):
                self._mark(self.consumed, us, ue)
                self.cites.append(_Cite(us, ue, "bare_url", url=url, propagates=True))
        # Numbered markers.
        for m in _MARKER.finditer(text):
            s, e = m.start(), m.end()
            if not self._free(s, e):
                continue
            if s > 0 and text[s - 1] == "\\":
                continue
            if e < self.n and text[e] == "(" and _parse_link_tail(text, e) is not None:
                continue
            self._mark(self.consumed, s, e)
            self._mark(self.markers, s, e)
            self.cites.append(_Cite(s, e, "numbered", refs=_expand(m.group(2)), propagates=True))
        self.cites.sort(key=lambda c: c.start)
        self.starts = [c.start for c in self.cites]

    # -- blocks and sentences ------------------------------------------------

    def blocks(self) -> list[_Block]:
        text = self.text
        out: list[_Block] = []
        cur: _Block | None = None
        cur_kind = ""

        def close() -> None:
            nonlocal cur, cur_kind
            if cur is not None:
                out.append(cur)
            cur, cur_kind = None, ""

        for s, ce, _e in self.lines:
            if any(self.fenced[s:ce]) or (ce > s and all(self.refzone[s:ce])):
                close()
                continue
            line = text[s:ce]
            if not line.strip():
                close()
                continue
            if _SETEXT.match(line) and cur is not None and cur_kind == "para" and cur.single_line:
                cur.heading = True
                close()
                continue
            if _HR.match(line) or _TABLE_SEP.match(line):
                close()
                continue
            hm = _HEADING.match(line)
            if hm:
                close()
                cs = s + hm.end()
                content_end = s + len(line.rstrip().rstrip("#").rstrip())
                if content_end > cs:
                    out.append(_Block(cs, content_end, heading=True))
                continue
            if line.lstrip().startswith("|"):
                close()
                out.append(_Block(s, ce))
                continue
            qm = _QUOTE.match(line)
            off = qm.end() if qm else 0
            if qm and not line[off:].strip():
                close()
                continue
            lm = _LIST_ITEM.match(line, off)
            if lm:
                close()
                cur, cur_kind = _Block(s + lm.end(), ce), "list"
                continue
            if cur is not None:
                cur.end = ce
                cur.single_line = False
                continue
            cur, cur_kind = _Block(s + off, ce), "para"
        close()
        return [b for b in out if b.end > b.start]

    def sentences(self, block: _Block) -> list[tuple[int, int]]:
        text = self.text
        bs, be = block.start, block.end
        masked = list(text[bs:be])
        for i in range(bs, be):
            if self.code[i] or (self.consumed[i] and not self.markers[i]):
                masked[i - bs] = "x"
            elif masked[i - bs] in "\r\n":
                masked[i - bs] = " "
        pieces: list[tuple[int, int]] = []
        pos = bs
        for piece in segment(self.language, "".join(masked)):
            ps, pe = pos, pos + len(piece)
            pos = pe
            chunk = text[ps:pe]
            lead = len(chunk) - len(chunk.lstrip())
            trail = len(chunk) - len(chunk.rstrip())
            if pe - trail > ps + lead:
                pieces.append((ps + lead, pe - trail))
        if pos != be:  # sentencex is expected to return the text in full; fall back to one sentence
            return [(bs, be)] if text[bs:be].strip() else []
        merged: list[tuple[int, int]] = []
        for ps, pe in pieces:
            if merged and not self._has_words(ps, pe):
                merged[-1] = (merged[-1][0], pe)
            else:
                merged.append((ps, pe))
        return merged

    def _has_words(self, s: int, e: int) -> bool:
        plain = self.plain(s, e)
        return any(ch.isalnum() for ch in plain)

    def cites_in(self, s: int, e: int) -> list[_Cite]:
        return self.cites[bisect_left(self.starts, s) : bisect_left(self.starts, e)]

    def plain(self, s: int, e: int) -> str:
        text = self.text
        parts: list[str] = []
        i = s
        for c in self.cites_in(s, e):
            parts.append(text[i : c.start])
            if c.link_text:
                parts.append(f"\x00{c.link_text}\x01")
            i = max(i, c.end)
        parts.append(text[i:e])
        out = "".join(parts)
        # Links alone in parentheses are a citation, not part of what the sentence says:
        # "([source](url))", "([BBC](u); [AP](v))" leave no "(source)" behind in the claim.
        out = _CITATION_ONLY_PARENS.sub("", out)
        out = out.replace("\x00", "").replace("\x01", "")
        out = re.sub(r"(?m)^[ \t]*(?:>[ \t]?)+", "", out)
        out = re.sub(r"`+", "", out)
        out = re.sub(r"\*\*|__|~~|(?<!\w)[*_]|[*_](?!\w)", "", out)
        out = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", out)
        out = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", out)
        out = out.replace("|", " ")
        out = re.sub(r"\(\s*\)|\[\s*\]|<\s*>", "", out)
        out = re.sub(r"\s+", " ", out)
        out = re.sub(r"\s+([.,;:!?。、，；：！？])", r"\1", out)
        out = re.sub(r"(?<!\.)\.\.(?!\.)", ".", out)
        return out.strip()


_CITATION_ONLY_PARENS = re.compile(r"\(\s*\x00[^\x00\x01]*\x01(?:\s*(?:[,;]|and|&)?\s*\x00[^\x00\x01]*\x01)*\s*\)")


def _expand(group: str) -> list[str]:
    if group.startswith("^"):
        return [_norm_label(group)]
    labels: list[str] = []
    for part in re.split(r"[ \t]*[,;][ \t]*", group.strip()):
        rng = re.fullmatch(r"(\d+)[ \t]*[-–][ \t]*(\d+)", part)
        if rng:
            a, b = int(rng.group(1)), int(rng.group(2))
            if a <= b and b - a < 20:
                labels.extend(str(k) for k in range(a, b + 1))
            else:
                labels.append(f"{a}-{b}")
        else:
            labels.append(str(int(part)))
    return list(dict.fromkeys(labels))


def extract_claims(
    answer: str,
    sources: Sequence[object] | None = None,
    *,
    url_key: str | None = None,
    cite_unmarked: bool | None = None,
    language: str = "en",
    extra_non_assertive: Sequence[re.Pattern[str] | str] = (),
) -> ExtractedAnswer:
    """Split ``answer`` into claims (sentences with UTF-8 byte spans) and tie each citation to the
    claim(s) it supports; the rules are in this module's docstring.

    ``sources`` (URLs, dicts, LangChain Documents, LlamaIndex nodes; see :func:`normalize_sources`)
    resolve ``[n]`` markers the answer's reference list does not, and - when the answer cites
    nothing, or with ``cite_unmarked=True`` - are cited by every uncited claim. Pure: no I/O.
    ``extra_non_assertive`` adds whole-sentence patterns to :data:`NON_ASSERTIVE_PATTERNS`.
    """
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a string, not {type(answer).__name__}")
    srcs = normalize_sources(sources, url_key=url_key)
    return _run(answer, srcs, cite_unmarked, language, extra_non_assertive)[0]


def _run(
    answer: str,
    srcs: list[Source],
    cite_unmarked: bool | None,
    language: str,
    extra_non_assertive: Sequence[re.Pattern[str] | str],
) -> tuple[ExtractedAnswer, list[int], _Extractor]:
    patterns = [re.compile(p, re.I) if isinstance(p, str) else p for p in extra_non_assertive]
    ex = _Extractor(answer, srcs, language, patterns)
    ex.find_code()
    ex.find_references()
    ex.find_citations()
    bmap = _ByteMap(answer)
    source_by_url = {s.url: s.index for s in srcs if s.url}

    def refs_for(c: _Cite, inherited: bool = False) -> list[CitationRef]:
        marker = answer[c.start : c.end]
        common = dict(
            kind=c.kind,
            start=bmap(c.start),
            end=bmap(c.end),
            marker=marker,
            link_text=c.link_text,
            inherited=inherited,
        )
        if c.url is not None:
            return [CitationRef(url=c.url, source_index=source_by_url.get(c.url), **common)]  # type: ignore[arg-type]
        out = []
        for label in c.refs:
            url = source_index = source_text = None
            ref = ex.defs.get(label)
            if ref is not None and ref.url:
                url = ref.url
                source_index = source_by_url.get(url)
            elif label.isdigit() and 1 <= int(label) <= len(srcs):
                src = srcs[int(label) - 1]
                url, source_index = src.url, src.index
                source_text = None if src.url else src.text
            out.append(
                CitationRef(url=url, source_index=source_index, source_text=source_text, ref=label, **common)  # type: ignore[arg-type]
            )
        return out

    claims: list[AnswerClaim] = []
    block_of: list[int] = []
    for bi, block in enumerate(ex.blocks()):
        for s, e in ex.sentences(block):
            own = ex.cites_in(s, e)
            if not own and not any(ch.isalnum() for ch in answer[s:e]):
                continue
            plain = ex.plain(s, e)
            claims.append(
                AnswerClaim(
                    text=answer[s:e],
                    start=bmap(s),
                    end=bmap(e),
                    plain_text=plain,
                    grounding_check_required=needs_grounding(plain, heading=block.heading, extra_patterns=patterns),
                    citations=[r for c in own for r in refs_for(c)],
                )
            )
            block_of.append(bi)

    # Paragraph-end rule.
    char_of = {b: i for i, b in enumerate(bmap.at)}
    by_block: dict[int, list[int]] = {}
    for ci, bi in enumerate(block_of):
        by_block.setdefault(bi, []).append(ci)
    for members in by_block.values():
        if len(members) < 2:
            continue
        last = claims[members[-1]]
        ls, le = char_of[last.start], char_of[last.end]
        trailing: list[_Cite] = []
        pos = le
        for c in reversed(ex.cites_in(ls, le)):
            gap = answer[c.end : pos]
            if c.propagates and all(not ch.isalnum() for ch in gap):
                trailing.append(c)
                pos = c.start
            else:
                break
        if not trailing:
            continue
        trailing.reverse()
        for ci in members[:-1]:
            claim = claims[ci]
            if claim.citations or not claim.grounding_check_required:
                continue
            claim.citations = [r for c in trailing for r in refs_for(c, inherited=True)]

    # Sources (and an unmarked reference section) for answers that cite nothing inline.
    any_cited = bool(ex.cites)
    if cite_unmarked or (cite_unmarked is None and not any_cited):
        pool: list[CitationRef] = []
        seen_urls: set[str] = set()
        for src in srcs:
            if src.url:
                seen_urls.add(src.url)
            pool.append(
                CitationRef(
                    kind="source",
                    start=0,
                    end=0,
                    marker="",
                    url=src.url,
                    source_index=src.index,
                    source_text=None if src.url else src.text,
                )
            )
        for ref in ex.refs:
            if ref.url and ref.url not in seen_urls:
                seen_urls.add(ref.url)
                pool.append(CitationRef(kind="source", start=0, end=0, marker="", url=ref.url, ref=ref.label))
        if pool:
            for claim in claims:
                if claim.grounding_check_required and not claim.citations:
                    claim.citations = [r.model_copy(update={"start": claim.end, "end": claim.end}) for r in pool]

    # The section's entries, and definitions written elsewhere (they render as nothing either way).
    in_section = {id(r) for r in ex.refs}
    all_refs = list(ex.refs) + [
        r
        for r in ex.defs.values()
        if id(r) not in in_section and not (ex.section and ex.section[0] <= r.start < ex.section[1])
    ]
    all_refs.sort(key=lambda r: r.start)
    references = [
        Reference(label=r.label, url=r.url, title=r.title, start=bmap(r.start), end=bmap(r.end)) for r in all_refs
    ]
    extracted = ExtractedAnswer(
        answer=answer,
        claims=claims,
        references=references,
        references_start=bmap(ex.section[0]) if ex.section else None,
        references_end=bmap(ex.section[1]) if ex.section else None,
        sources=[s.info() for s in srcs],
    )
    return extracted, block_of, ex


# --------------------------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------------------------


def stream_cut(
    text: str,
    sources: Sequence[object] | None = None,
    *,
    url_key: str | None = None,
    language: str = "en",
) -> int:
    """How many leading *characters* of ``text`` - an answer still arriving - are final.

    ``text[:cut]`` is a run of whole claims whose extraction cannot change when more text arrives,
    so a streaming guard can verify that chunk on its own
    (``await verifier.averify_answer(text[emitted:cut], sources, memo=memo)``), apply the policy to
    it (:func:`guardrail.core.policy.apply_policy`), emit the result and carry on from ``cut``; the
    guarded chunks concatenate to the guarded answer. A claim is final when the next claim has
    begun (its sentence boundary is confirmed), every marker in it resolves against ``sources``
    (without sources, numbered markers wait for the reference list at the end, so such answers are
    held until the stream ends; a chunk is verified without the answer's reference definitions, so
    a label is never resolved through them early), and - if it has no citation of its own - its
    paragraph has ended and the rest of the paragraph is final too (a marker at the paragraph's end
    may still cover it). A line that could start a trailing
    reference section, and anything after an unclosed code fence, is never final. Cuts fall at the
    start of the next claim's line when it begins one, so markdown prefixes (``- ``, ``## ``) stay
    with their claim. When the stream ends, the rest is the last chunk. Pass the same explicit
    ``cite_unmarked`` to every chunk's verification: its default ("only when the answer cites
    nothing") would otherwise be decided chunk by chunk.
    """
    srcs = normalize_sources(sources, url_key=url_key)
    extracted, block_of, ex = _run(text, srcs, False, language, ())
    claims = extracted.claims
    if len(claims) < 2:
        return 0
    char_of = {b: i for i, b in enumerate(_ByteMap(text).at)}
    limit = len(text)
    if ex.section is not None:
        limit = min(limit, ex.section[0])
    if ex.unclosed_fence_at is not None:
        limit = min(limit, ex.unclosed_fence_at)
    lines = _lines(text)
    if lines:
        s, ce, _ = lines[-1]
        last_line = text[s:ce]
        if _REF_HEADING.match(last_line) or _ENTRY_LABELLED.match(last_line) or _DEF.match(last_line):
            limit = min(limit, s)
    cut = 0
    # The cut before the first uncited claim of the current block: a chunk must not end inside
    # a block after such a claim, or the marker that ends the block could not cover it.
    block_start_cut: int | None = None
    for k, claim in enumerate(claims[:-1]):
        if k > 0 and block_of[k] != block_of[k - 1]:
            block_start_cut = None
        end, next_start = char_of[claim.end], char_of[claims[k + 1].start]
        own = [c for c in claim.citations if not c.inherited]
        paragraph_ended = block_of[-1] != block_of[k]  # some later claim is in another block
        if (
            next_start > limit
            # A chunk is verified alone, without the answer's reference definitions: a label
            # must resolve against the sources, else it waits for the end of the stream.
            or any(c.ref is not None and not (c.ref.isdigit() and 1 <= int(c.ref) <= len(srcs)) for c in own)
            or (not own and claim.grounding_check_required and not paragraph_ended)
        ):
            if block_start_cut is not None:
                cut = block_start_cut
            break
        if not own and claim.grounding_check_required and block_start_cut is None:
            block_start_cut = cut
        nl = text.rfind("\n", end, next_start)
        cut = nl + 1 if nl >= 0 else next_start
    return cut
