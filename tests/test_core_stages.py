"""Unit tests for the small pure stages: passages, quote guard, aggregation, settings."""

from __future__ import annotations

import pytest

from guardrail.core.aggregate import aggregate
from guardrail.core.passages import split_passages
from guardrail.core.quote_guard import apply_quote_guard, normalize_for_match, quote_in_passages
from guardrail.core.schema import JudgeVerdict, Label
from guardrail.settings import ConfigurationError, Settings

L = Label


class TestPassages:
    def test_paragraphs_are_packed_up_to_the_word_limit(self) -> None:
        text = "\n\n".join(["one two three"] * 5)
        assert split_passages(text, max_words=6) == ["one two three\n\none two three"] * 2 + ["one two three"]

    def test_long_paragraph_is_cut_on_word_boundaries(self) -> None:
        words = [f"w{i}" for i in range(450)]
        passages = split_passages(" ".join(words))
        assert [len(p.split()) for p in passages] == [200, 200, 50]
        assert " ".join(passages).split() == words

    def test_no_passage_exceeds_limit_and_nothing_is_lost(self) -> None:
        paragraphs = [" ".join(["x"] * n) for n in (5, 199, 3, 250, 1, 200)]
        passages = split_passages("\n\n  \n".join(paragraphs))
        assert all(len(p.split()) <= 200 for p in passages)
        assert sum(len(p.split()) for p in passages) == sum(len(p.split()) for p in paragraphs)

    def test_blank_lines_with_spaces_split_and_empty_text_gives_nothing(self) -> None:
        assert split_passages("a b\n   \nc d", max_words=2) == ["a b", "c d"]
        assert split_passages("  \n\n ") == []

    def test_rejects_nonpositive_limit(self) -> None:
        with pytest.raises(ValueError, match="max_words"):
            split_passages("a", max_words=0)


class TestQuoteGuard:
    passages = ("At sea level, water boils at \u201c100 degrees\u201d   Celsius.\nIt is hot.",)

    def test_curly_quotes_and_whitespace_are_normalised(self) -> None:
        assert normalize_for_match("a\u00a0 \u2018b\u2019\n c") == "a 'b' c"
        assert quote_in_passages('water boils at "100 degrees" Celsius. It is', self.passages)

    def test_quote_not_in_passages_demotes_to_not_found(self) -> None:
        verdict = JudgeVerdict(label="supported", evidence_quote="water boils at 90 degrees", confidence=0.9)
        guarded = apply_quote_guard(verdict, self.passages)
        assert guarded.label == "not_found"
        assert guarded.confidence == 0.0
        assert guarded.reason == "evidence_quote_not_in_source"
        assert guarded.evidence_quote == "water boils at 90 degrees"

    @pytest.mark.parametrize("quote", [None, "", "   "])
    def test_missing_quote_demotes_contradicted(self, quote: str | None) -> None:
        verdict = JudgeVerdict(label="contradicted", evidence_quote=quote, confidence=0.8)
        assert apply_quote_guard(verdict, self.passages).label == "not_found"

    def test_real_quote_is_kept(self) -> None:
        verdict = JudgeVerdict(label="contradicted", evidence_quote="It is hot.", confidence=0.7)
        assert apply_quote_guard(verdict, self.passages) == verdict

    @pytest.mark.parametrize(
        "quote",
        [
            "At sea level, water boils at the temperature of the surface of the sun.",  # 5 real words, then invented
            "water boils at \u201c100 degrees\u201d Celsius. It is cold.",  # all real but the last word
            "AT SEA LEVEL, WATER BOILS",  # the page's words in another case
            "at sea level, water boils",
            "It is hot!",
        ],
    )
    def test_a_quote_must_be_the_page_s_words_letter_for_letter(self, quote: str) -> None:
        verdict = JudgeVerdict(label="supported", evidence_quote=quote, confidence=0.9)
        guarded = apply_quote_guard(verdict, self.passages)
        assert (guarded.label, guarded.reason) == ("not_found", "evidence_quote_not_in_source")

    def test_a_quote_spanning_two_passages_is_not_in_either(self) -> None:
        passages = ["Water boils at 100 degrees.", "It freezes at 0 degrees."]
        assert not quote_in_passages("Water boils at 100 degrees. It freezes at 0 degrees.", passages)
        assert quote_in_passages("It freezes at 0 degrees.", passages)

    def test_not_found_passes_untouched(self) -> None:
        verdict = JudgeVerdict(label="not_found", confidence=0.4)
        assert apply_quote_guard(verdict, self.passages) == verdict


class TestAggregate:
    @pytest.mark.parametrize(
        ("labels", "expected"),
        [
            ([L.supported, L.contradicted, L.unreachable], L.contradicted),
            ([L.not_found, L.supported, L.unreachable], L.supported),
            ([L.unreachable, L.unreachable], L.unreachable),
            ([L.unreachable, L.not_found], L.not_found),
            ([L.not_found], L.not_found),
            ([], L.not_found),
        ],
    )
    def test_fixed_rule(self, labels: list[Label], expected: Label) -> None:
        assert aggregate(labels) == expected


class TestSettings:
    def test_defaults(self) -> None:
        s = Settings.from_env({})
        assert (s.fetch_timeout, s.max_bytes, s.max_redirects, s.concurrency, s.top_k) == (
            15.0,
            5_000_000,
            5,
            8,
            3,
        )
        assert s.allow_private_hosts is False and s.judge is None

    def test_reads_environment(self) -> None:
        s = Settings.from_env(
            {
                "GUARDRAIL_ALLOW_PRIVATE_HOSTS": "1",
                "GUARDRAIL_JUDGE": "OpenAI",
                "GUARDRAIL_FETCH_TIMEOUT": "2.5",
            }
        )
        assert s.allow_private_hosts is True and s.judge == "openai" and s.fetch_timeout == 2.5

    def test_unknown_judge_is_a_clear_error(self) -> None:
        with pytest.raises(ConfigurationError, match="GUARDRAIL_JUDGE"):
            Settings.from_env({"GUARDRAIL_JUDGE": "gpt"})

    def test_bad_number_names_the_variable(self) -> None:
        with pytest.raises(ConfigurationError, match="GUARDRAIL_FETCH_TIMEOUT") as info:
            Settings.from_env({"GUARDRAIL_FETCH_TIMEOUT": "soon"})
        assert "soon" not in str(info.value)  # values are never echoed (they may be secrets)

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("1", True),
            ("true", True),
            ("ON", True),
            ("yes", True),
            ("0", False),
            ("false", False),
            ("off", False),
            ("no", False),
            ("", False),
        ],
    )
    def test_the_ssrf_opening_reads_off_as_off(self, raw: str, expected: bool) -> None:
        assert Settings.from_env({"GUARDRAIL_ALLOW_PRIVATE_HOSTS": raw}).allow_private_hosts is expected

    @pytest.mark.parametrize(
        ("variable", "value"),
        [
            ("GUARDRAIL_MAX_BYTES", "0"),
            ("GUARDRAIL_MAX_BYTES", "-1"),
            ("GUARDRAIL_FETCH_TIMEOUT", "0"),
            ("GUARDRAIL_JUDGE_TIMEOUT", "-5"),
            ("GUARDRAIL_JUDGE_ROUNDS", "0"),
            ("GUARDRAIL_JUDGE_ROUNDS", "3"),
            ("GUARDRAIL_JUDGE_PRECISION", "float16"),
            ("GUARDRAIL_FETCH_ATTEMPTS", "0"),
            ("GUARDRAIL_MAX_REDIRECTS", "-1"),
            ("GUARDRAIL_CONCURRENCY", "0"),
            ("GUARDRAIL_TOP_K", "0"),
            ("GUARDRAIL_CACHE_TTL", "-1"),
            ("GUARDRAIL_MAX_BODY_BYTES", "0"),
        ],
    )
    def test_a_limit_out_of_range_is_an_error_naming_the_variable(self, variable: str, value: str) -> None:
        """A zero or negative cap would switch a limit off (or stop all work): refused, not read."""
        with pytest.raises(ConfigurationError, match=variable):
            Settings.from_env({variable: value})

    def test_an_unclear_switch_is_an_error_not_a_guess(self) -> None:
        with pytest.raises(ConfigurationError, match="GUARDRAIL_ALLOW_PRIVATE_HOSTS"):
            Settings.from_env({"GUARDRAIL_ALLOW_PRIVATE_HOSTS": "maybe"})

    def test_os_environ_is_the_default_and_code_may_name_fields(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("GUARDRAIL_TOP_K", "7")
        assert Settings.from_env().top_k == 7 and Settings().top_k == 7
        assert Settings(top_k=2).top_k == 2 and Settings.from_env({}).top_k == 3

    def test_secrets_are_not_printed(self) -> None:
        s = Settings.from_env({"OPENAI_API_KEY": "sk-very-secret", "CRAWLBASE_TOKEN": "tok-very-secret"})
        assert "very-secret" not in repr(s) and "very-secret" not in s.model_dump_json()
        assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == "sk-very-secret"


class TestCachingEmbedder:
    def test_only_new_texts_reach_the_model_and_order_is_kept(self) -> None:
        from guardrail.retrieval import CachingEmbedder
        from guardrail.testing import HashEmbedder

        inner = HashEmbedder()
        cached = CachingEmbedder(inner)
        first = cached.embed(["alpha beta", "gamma", "alpha beta"])
        assert inner.batches == [2]  # the repeated text is embedded once
        second = cached.embed(["gamma", "delta", "alpha beta"])
        assert inner.batches == [2, 1]
        assert (second[0] == first[1]).all() and (second[2] == first[0]).all()
        assert (second[1] == inner.embed(["delta"])[0]).all()

    def test_lru_bound(self) -> None:
        from guardrail.retrieval import CachingEmbedder
        from guardrail.testing import HashEmbedder

        inner = HashEmbedder()
        cached = CachingEmbedder(inner, max_entries=2)
        cached.embed(["a", "b"])
        cached.embed(["a"])  # a is now the most recent
        cached.embed(["c"])  # evicts b
        cached.embed(["a", "b"])
        assert inner.batches == [2, 1, 1]
        assert cached.embed([]).shape[0] == 0

    def test_verifiers_built_without_an_embedder_share_one_cache(self) -> None:
        from guardrail import Verifier
        from guardrail.retrieval import CachingEmbedder, MiniLMEmbedder
        from guardrail.runtime import build_embedder
        from guardrail.testing import HashEmbedder

        settings = Settings()
        first, second = Verifier(settings=settings), Verifier(settings=settings)
        assert first.embedder is second.embedder is build_embedder()
        assert isinstance(first.embedder, CachingEmbedder) and isinstance(first.embedder.inner, MiniLMEmbedder)
        own = HashEmbedder()
        assert Verifier(settings=settings, embedder=own).embedder is own
