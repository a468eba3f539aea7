"""The local judge's settings: what it reads (the budget of each round) and how it runs.

What the scores mean is not set here: the decision is a classifier fitted on held-out data
(:mod:`guardrail.judges._decision`, ``model/decision.json``), with its two thresholds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalJudgeConfig:
    """Every budget and switch of the local judge, in one place.

    The first round reads the ``first_round`` sentences most like the claim, each with its page's
    topic (``"Titanic: It was directed by James Cameron."``): all requests of one ``judge()`` call
    (all claims of an answer) in one batched forward pass. With ``rounds=2`` (the default), requests
    the first round leaves undecided (neither support nor contradiction as probable as ``settle``,
    nor both below ``settle_none``) get the second round, the rest of the budget: the best sentence
    alone and with the sentence before it, the next sentences up to ``max_sentences``, windows of
    2-3 sentences around the ``window_seeds`` best, the best few joined; so a request costs at most
    that budget. With ``rounds=1`` (the fast path) the first round is all the model reads, so an
    answer of n claims costs ``n * first_round`` pairs in one pass whatever the probabilities, read
    by default on the int8 graph (:class:`~guardrail.judges.local.LocalJudge`'s ``quantize``).
    Either way two small, bounded extras follow: where a sentence names another thing in the claim's
    place, the claim restated with that name (one pair per such sentence), and, for a claim split
    into atomic parts that is not decided, each part against its ``part_candidates`` best sentences.

    Each reading is decided by a classifier fitted for it (``decision.json``,
    ``decision_one_round.json``: ``python -m training.fit_decision [--rounds 1]``). On the held-out
    eval part one round gives 0.640 mean balanced accuracy against two rounds' 0.656 (word
    overlap: 0.622) and misses cases that only the second round's readings carry: another director
    on a whole page, a reversed role, another lead in a cast list (README, "The embedded judge").
    """

    rounds: int = 2
    """2: undecided requests also get the second round; 1: the first round only (the fast path)."""
    first_round: int = 2
    """Sentences (the best ranked by the claim's rarer words) read in the first round."""
    max_sentences: int = 8
    """Sentences read with their topic, both rounds together."""
    plain_sentences: int = 2
    """Of those, the best this many are also read alone (without their topic)."""
    window_seeds: int = 2
    """Windows of consecutive sentences are read around this many best-ranked sentences."""
    window_sizes: tuple[int, ...] = (2, 3)
    """Sizes of those windows (2: a sentence and its neighbour, which resolves "It ..." openings)."""
    combine_top: tuple[int, ...] = (2, 3)
    """The top-n ranked sentences joined, for evidence spread over a page (when not adjacent)."""
    settle: float = 0.8
    """With ``rounds=2``: a request whose first round gives support (or contradiction) at least this probable is
    decided without the second round; ``JudgeRequest.settle_at`` can only raise it."""
    settle_none: float = 0.15
    """With ``rounds=2``: a request whose first round gives support and contradiction each less
    probable than this is decided (``not_found``) without the second round (nothing there bears
    on the claim). On the recorded tune and eval parts (``python bench/settle_none.py``), 0.15
    changes no label while the requests that read a second round fall from 92 % to 66 %; 0.2
    changes one. 0 turns it off."""
    page_context: bool = True
    """Read each sentence with its page's topic (the title, else the nearest heading, else the name
    the passage opens with); off: every sentence alone, as the judges before issue 21 read them."""
    skip_unrelated: bool = True
    """A request whose passages share none of the claim's content words is not read (``not_found``)."""
    split_parts: bool = True
    """Split a claim that is still not supported into atomic parts
    (:func:`guardrail.judges._parts.claim_parts`) and read each against its best sentences, so the
    verdict names the parts the page backs (``partially_supported``) and a claim backed across
    several pages is ``supported`` / ``combined_sources``."""
    part_candidates: int = 2
    """Sentences (those sharing most of the part's words) read per part."""
    part_threshold: float = 0.5
    """Least entailment probability (beating contradiction) for a part to count as backed."""
    min_sentence_words: int = 3
    """Shorter sentences (menu items, headings) are not read on their own."""
    max_length: int = 256
    """Token limit of one (evidence, claim) pair."""
    batch_tokens: int = 1024
    """Batch size x longest pair cap for one forward pass (pairs are sorted by length first). Small
    passes run faster per pair on a CPU (the attention matrices stay in cache): against 8192,
    ``python bench/pipeline.py --claims 100 --pages 50`` verifies 10.8 and 12.0 claims/s against
    7.8 and 8.8 (alternating runs). An answer of 5 claims still reads its first rounds (10 pairs of
    about 58 tokens) in one pass."""
    dtype: str = "auto"
    """``float32``, ``bfloat16``, or ``auto``: bfloat16 where the CPU multiplies it natively (AMX or
    AVX512-BF16), float32 elsewhere (bfloat16 is emulated, so slow, on other CPUs). Torch backend only."""
    threads: int | None = None
    """Threads for scoring: ONNX Runtime's intra-op threads, or ``torch.set_num_threads`` (process-wide)
    on the torch backend; None: one per core."""
    backend: str = "auto"
    """``onnx`` (ONNX Runtime, the graph exported from the shipped weights once per machine: see
    :mod:`guardrail._onnx_backend`), ``torch``, or ``auto``: onnx where ONNX Runtime is installed."""
    check_language: bool = True
    """A claim or passages not in English get ``not_found`` / ``unsupported_language`` unscored."""

    def __post_init__(self) -> None:
        if self.rounds not in (1, 2):
            raise ValueError(f"LocalJudgeConfig.rounds must be 1 or 2, not {self.rounds!r}")
        if not 0.0 <= self.settle_none <= 1.0:
            raise ValueError(f"LocalJudgeConfig.settle_none must be in [0, 1], not {self.settle_none!r}")
        if self.first_round < 1:
            raise ValueError(f"LocalJudgeConfig.first_round must be at least 1, not {self.first_round!r}")


__all__ = ["LocalJudgeConfig"]
