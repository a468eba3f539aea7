"""From a model's answer to claims and their citations: pure functions, no I/O.

:func:`extract_claims` splits an answer into sentences (the claims), finds every citation in it and
ties each citation to the claim(s) it supports. All ``start``/``end`` offsets it reports are
**UTF-8 byte offsets** into the answer as given (``answer.encode()[start:end]``).

The rules, in the order they are applied:

**Structure.** The markdown structure comes from markdown-it-py (CommonMark with GFM tables; its
block parser only, indented code and raw HTML blocks off, so an indented line is still text).
Fenced code blocks are neither claims nor citations. Inline code spans are part of their sentence
but never hold a citation. Headings (``#`` and setext), list items, table rows, block quotes and
paragraphs are *blocks*; a sentence never crosses a block. Inside a block, sentences come from
``sentencex`` (see :func:`split_sentences`) with URLs, links and code masked out first, so "Dr.",
"et al.", "e.g.", "U.S.", decimals and URLs do not end a sentence. A fragment holding only
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

**Cost.** Extraction takes time linear in the answer's length, hostile input included (``"[" * n``,
``"[a](" * n``, unmatched backticks or quotes): brackets, parentheses and code spans are matched in
one pass each, URL candidates are validated in bounded windows, and ``sentencex`` never sees more
than :data:`~guardrail.core.extract.sentences.WINDOW` characters at once (so a sentence longer than
about 1,500 characters is cut at a space). The largest constant is markdown-it-py's, some 50 µs
per block: 200 KB of one-word list items takes seconds, an ordinary 200 KB answer well under one.

One job per module: :mod:`.sources` (``sources`` -> :class:`Source`), :mod:`.blocks` (markdown
blocks), :mod:`.inline` (code spans, brackets, link destinations, URLs), :mod:`.references`
(definitions and the reference section), :mod:`.citations`, :mod:`.sentences`, :mod:`.plain` (a
claim's plain text), :mod:`.assertive` (:func:`needs_grounding`), :mod:`.claims` (the steps in
order, :func:`extract_claims`), :mod:`.stream` (:func:`stream_cut`) and :mod:`.text` (lines, byte
offsets, character flags).
"""

from guardrail.core.extract.assertive import NON_ASSERTIVE_PATTERNS, needs_grounding
from guardrail.core.extract.claims import ExtractedAnswer, extract_claims
from guardrail.core.extract.sentences import split_sentences
from guardrail.core.extract.sources import Source, normalize_sources
from guardrail.core.extract.stream import stream_cut

__all__ = [
    "NON_ASSERTIVE_PATTERNS",
    "ExtractedAnswer",
    "Source",
    "extract_claims",
    "needs_grounding",
    "normalize_sources",
    "split_sentences",
    "stream_cut",
]
