"""Turn a fetched body into readable markdown: HTML via trafilatura, PDF via pypdf, text as is.

Conversion is CPU-bound; fetchers run :func:`convert` in a worker thread.
"""

from __future__ import annotations

import codecs
import html as html_lib
import io
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from guardrail.core.schema import Reason

log = logging.getLogger("guardrail.fetch")

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
TEXT_TYPES = frozenset({"text/plain"})
MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
SUPPORTED_TYPES = HTML_TYPES | PDF_TYPES | TEXT_TYPES | MARKDOWN_TYPES

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_MD_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


@dataclass(frozen=True)
class Converted:
    """The readable text of a body, its title, and a reason when it could not be used."""

    text: str = ""
    title: str | None = None
    content_type: str | None = None
    reason: str | None = None
    detail: str | None = None  # what was wrong with an unreadable document (never its text)


class UnreadableDocument(ValueError):
    """A document (a PDF) its reader could not open; the message says what was wrong."""


Converter = Callable[[bytes, str | None, str | None], Converted]
"""``(body, content_type, url) -> Converted``: how a fetcher turns a body into readable text."""


def media_type(content_type: str | None) -> str:
    """The bare media type of a Content-Type header value, lower-cased (``""`` when absent)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def sniff_media_type(body: bytes) -> str:
    """Guess a media type from the first bytes, for bodies served without a usable Content-Type."""
    head = body[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<!--")) or b"<html" in head:
        return "text/html"
    return ""


def convert(body: bytes, content_type: str | None, url: str | None = None) -> Converted:
    """Readable text of ``body`` served as ``content_type``.

    HTML becomes markdown (main content only, links and tables kept, title from the
    page metadata); PDF becomes its text layer; plain text and markdown pass through;
    anything else is ``unsupported_content_type``; a PDF its reader cannot open is
    ``unreadable_document``, ``detail`` saying why.
    """
    kind = media_type(content_type)
    if kind in ("", "application/octet-stream", "binary/octet-stream"):
        kind = sniff_media_type(body) or kind
    if kind in HTML_TYPES:
        text, title = html_to_markdown(decode_body(body, content_type, html=True), url)
    elif kind in PDF_TYPES:
        try:
            text, title = pdf_to_text(body)
        except UnreadableDocument as exc:
            return Converted(content_type=kind, reason=Reason.unreadable_document.value, detail=str(exc))
    elif kind in TEXT_TYPES or kind in MARKDOWN_TYPES:
        text = _tidy(decode_body(body, content_type))
        title = markdown_title(text) if kind in MARKDOWN_TYPES else None
    else:
        return Converted(content_type=kind or None, reason=Reason.unsupported_content_type.value)
    return Converted(text=text, title=title, content_type=kind)


WEB_ENCODINGS = frozenset(
    {"utf-8", "utf-16", "utf-16-le", "utf-16-be", "ascii", "iso8859-1", "cp866", "koi8-r", "koi8-u"}
    | {f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 15, 16)}
    | {f"cp{n}" for n in (874, 932, 949, 950, 1250, 1251, 1252, 1253, 1254, 1255, 1256, 1257, 1258)}
    | {"tis-620", "mac-roman", "mac-cyrillic", "gbk", "gb2312", "gb18030", "big5", "big5hkscs"}
    | {"euc_jp", "iso2022_jp", "shift_jis", "euc_kr"}
)
"""The Python codecs of the WHATWG encoding standard's encodings: the only charsets a page may
declare (Python also has ``rot13``, ``zlib``, ``idna``... which are no text encodings of the web)."""
_WHATWG_ALIASES = {
    "windows-874": "cp874",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-roman": "mac-roman",
    "mac": "mac-roman",
    "windows-31j": "cp932",
    "x-sjis": "cp932",
    "windows-949": "cp949",
    "iso-8859-8-i": "iso8859-8",
    "gb_2312-80": "gbk",
    "unicode-1-1-utf-8": "utf-8",
}
"""WHATWG labels Python's codec registry does not know."""


_DETECTABLE = sorted(WEB_ENCODINGS - {"utf-8", "utf-16", "utf-16-le", "utf-16-be", "ascii", "iso8859-1"})
"""The encodings detection may answer: a body that is not UTF-8 and has no byte-order mark is
none of the UTF encodings; ascii and latin-1 are read as windows-1252 anyway (WHATWG)."""


def detect_encoding(body: bytes) -> str:
    """The web encoding ``body`` most likely is, for a body that declares none and is not UTF-8:
    charset-normalizer's guess among :data:`WEB_ENCODINGS`, windows-1252 (the web's legacy default)
    when it has none or when windows-1252 reads the body as cleanly as its first guess (a short
    French text is as clean in windows-1250, which would turn its è into č)."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(body, cp_isolation=_DETECTABLE))
    if not matches:
        return "cp1252"
    cleanest = [codecs.lookup(m.encoding).name for m in matches if m.chaos <= matches[0].chaos]
    if "cp1252" in cleanest or cleanest[0] not in WEB_ENCODINGS:
        return "cp1252"
    return cleanest[0]


def decode_body(body: bytes, content_type: str | None, *, html: bool = False) -> str:
    """Decode ``body`` to text: a byte-order mark, then the header's charset, then (for HTML)
    a ``<meta charset>``, then UTF-8; when nothing declared fits and it is not UTF-8, the encoding
    :func:`detect_encoding` finds (windows-1251, Shift_JIS...; windows-1252 by default). A declared
    charset that is no text encoding of the web (:data:`WEB_ENCODINGS`) is passed over."""
    boms = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
    for bom, encoding in boms:
        if body.startswith(bom):
            return body[len(bom) :].decode(encoding, errors="replace")
    declared: list[tuple[str, bool]] = []
    if content_type:
        header_match = _HEADER_CHARSET.search(content_type)
        if header_match:
            declared.append((header_match.group(1), False))
    if html:
        meta_match = _META_CHARSET.search(body[:4096])
        if meta_match:
            declared.append((meta_match.group(1).decode("ascii", errors="ignore"), True))
    for label, in_document in declared:
        codec_name = _codec(label, in_document=in_document)
        if codec_name is not None:
            try:
                return body.decode(codec_name, errors="replace")
            except (LookupError, UnicodeError, TypeError):  # defence in depth: the list holds text codecs
                continue
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode(detect_encoding(body), errors="replace")


def _codec(label: str, *, in_document: bool) -> str | None:
    """The Python codec for a declared charset, when it is a text encoding of the web; None for
    anything else (``rot13``, ``zlib``, ``idna``, ``utf-7``, ``unicode_escape``...: detection then)."""
    name = label.strip().lower()
    try:
        encoding: str = codecs.lookup(_WHATWG_ALIASES.get(name, name)).name
    except LookupError:
        return None
    if encoding not in WEB_ENCODINGS:
        return None
    # Per the WHATWG encoding standard, labels for latin-1/ascii mean windows-1252, and a
    # document readable enough to declare utf-16 in a <meta> is really ASCII-compatible.
    if encoding in ("latin-1", "iso8859-1", "ascii"):
        return "cp1252"
    if in_document and encoding.startswith("utf-16"):
        return "utf-8"
    return encoding


_HIDING_DISPLAY = frozenset({"none"})
_HIDING_VISIBILITY = frozenset({"hidden", "collapse"})
_LENGTH = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(px|em|rem|pt|pc|cm|mm|in|%|vw|vh|vmin|vmax|ch|ex)?$")
_PX_PER_UNIT = {"px": 1.0, "em": 16.0, "rem": 16.0, "ch": 8.0, "ex": 8.0, "pt": 4 / 3, "pc": 16.0}
_PX_PER_UNIT |= {"cm": 96 / 2.54, "mm": 96 / 25.4, "in": 96.0}
OFF_SCREEN_PX = 500
"""An element placed further than this left of or above the page (``left: -9999px``, ``text-indent:
-10000px``), or a whole viewport or more away, is off-screen: no reader sees it."""
_HIDDEN_XPATH = "//template | //*[@hidden] | //*[translate(@aria-hidden, 'TRUE', 'true') = 'true'] | //*[@style]"


def _declarations(style: str) -> dict[str, str]:
    """An inline ``style`` as ``{property: value}``, lower-cased, ``!important`` dropped."""
    found: dict[str, str] = {}
    for part in style.split(";"):
        name, sep, value = part.partition(":")
        if sep:
            found[name.strip().lower()] = value.lower().replace("!important", "").strip()
    return found


def _pixels(value: str) -> float | None:
    """A CSS length in pixels (viewport and percentage units as -1000 per -100: far enough); None
    when it is not a plain length (``auto``, ``calc(...)``)."""
    match = _LENGTH.match(value.strip())
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2) or "px"
    return number * _PX_PER_UNIT.get(unit, 10.0)


def _style_hides(style: str) -> bool:
    """Whether an inline style keeps its element's text from being seen: ``display: none``,
    ``visibility: hidden``, ``opacity: 0``, no size (``font-size: 0``, a zero width or height with
    the overflow hidden) or placed off-screen (far negative offsets or ``text-indent``)."""
    css = _declarations(style)
    if css.get("display") in _HIDING_DISPLAY or css.get("visibility") in _HIDING_VISIBILITY:
        return True
    if _pixels(css.get("opacity", "1").rstrip("%")) == 0 or _pixels(css.get("font-size", "1px")) == 0:
        return True
    clipped = css.get("overflow", "").split()[:1] in (["hidden"], ["clip"])
    sizes = (css.get(name, "") for name in ("width", "height", "max-width", "max-height"))
    if clipped and any(_pixels(size) == 0 for size in sizes if size):
        return True
    offsets = [css.get(name, "") for name in ("text-indent", "margin-left", "margin-top")]
    if css.get("position") in ("absolute", "fixed"):
        offsets += [css.get(name, "") for name in ("left", "top", "right")]
    return any((px := _pixels(offset)) is not None and px <= -OFF_SCREEN_PX for offset in offsets if offset)


def drop_hidden(root: Any) -> int:
    """Remove from an lxml tree, in place, every element a browser does not show: ``<template>``,
    the ``hidden`` attribute, ``aria-hidden="true"`` and inline styles that hide (see
    :func:`_style_hides`). Text after an element (its tail) stays. The one rule for hidden text, run
    before any text is taken from a page, directly fetched or through Crawlbase: text no reader
    sees must not back a claim. Returns how many elements were removed."""
    dropped = 0
    for element in root.xpath(_HIDDEN_XPATH):
        if element.getparent() is None or not _hidden(element):
            continue
        element.drop_tree()
        dropped += 1
    return dropped


def _hidden(element: Any) -> bool:
    if element.tag == "template" or element.get("hidden") is not None:
        return True
    if (element.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return _style_hides(element.get("style") or "")


def html_to_markdown(html: str, url: str | None = None) -> tuple[str, str | None]:
    """Main content of ``html`` as markdown (navigation, footers, ads, cookie banners dropped;
    links and tables kept) and the page title; a plain-text fallback when trafilatura finds nothing.
    What a browser does not show is dropped first (:func:`drop_hidden`)."""
    import trafilatura

    title: str | None = None
    text: str | None = None
    try:
        tree = trafilatura.load_html(html)
        if tree is not None:
            drop_hidden(tree)
            metadata = trafilatura.extract_metadata(tree, default_url=url)
            title = (metadata.title or None) if metadata is not None else None
            text = trafilatura.extract(
                tree,
                url=url,
                output_format="markdown",
                include_links=True,
                include_tables=True,
                include_images=False,
                include_comments=False,
                favor_recall=True,
                deduplicate=False,
            )
    except Exception as exc:  # a parser failure on one hostile page must not fail the fetch
        log.warning("trafilatura failed on %s: %s", url, type(exc).__name__)
    if not text or not text.strip():
        text = _fallback_text(html)
        if title is None:
            title = _html_title(html)
    return _tidy(text), title


_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "nav", "footer", "header", "aside", "form")
_BLOCK_TAGS = frozenset(
    {"p", "div", "section", "article", "main", "li", "ul", "ol", "table", "tr", "pre", "blockquote", "br"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "dd", "dt"}
)


def _fallback_text(html: str) -> str:
    """Visible text of a page trafilatura found nothing in (say, text served as text/html)."""
    import lxml.html

    try:
        root = lxml.html.document_fromstring(html)
    except Exception:  # lxml refuses empty or binary documents
        return ""
    drop_hidden(root)
    for element in root.xpath("|".join(f"//{t}" for t in _DROP_TAGS) + "|//head"):
        element.drop_tree()
    lines: list[str] = []
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        if element.tag in _BLOCK_TAGS:
            lines.append("\n\n")
        if element.text:
            lines.append(element.text)
        if element.tail:
            lines.append(element.tail)
    return re.sub(r"[ \t]+", " ", "".join(lines))


def _html_title(html: str) -> str | None:
    match = re.search(r"<title[^>]*>(.*?)</title>", html[:65536], re.IGNORECASE | re.DOTALL)
    if match is None:
        return None
    return html_lib.unescape(re.sub(r"\s+", " ", match.group(1))).strip() or None


def pdf_to_text(body: bytes) -> tuple[str, str | None]:
    """The text layer of a PDF (pages separated by blank lines) and its metadata title; raises
    :class:`UnreadableDocument` for one pypdf cannot read (damaged, truncated, a password)."""
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            reader.decrypt("")  # many "protected" PDFs only restrict printing, with an empty password
        pages = [page.extract_text() or "" for page in reader.pages]
        title = reader.metadata.title if reader.metadata is not None else None
    except Exception as exc:  # broken or hostile PDFs: a verdict saying so, not an "empty page"
        # The exception's class only: pypdf's messages may quote bytes of the file.
        raise UnreadableDocument(f"pypdf could not read the PDF: {type(exc).__name__}") from exc
    return _tidy("\n\n".join(pages)), (str(title).strip() or None) if title else None


def markdown_title(text: str) -> str | None:
    """The first level-1 markdown heading of ``text`` (its first 4 KB), as a page title."""
    match = _MD_HEADING.search(text[:4096])
    return match.group(1) if match else None


def _tidy(text: str) -> str:
    """Normalise line endings, strip trailing spaces, collapse runs of blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANK_RUN.sub("\n\n", text).strip()
