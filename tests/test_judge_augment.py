"""Synthetic training pairs for the local judge: each edit must really change the label."""

from __future__ import annotations

import random
import re

from guardrail.judges import _checks as checks
from training import augment

EVIDENCE = "The film was released on December 19, 1997, and grossed over $1.84 billion worldwide in 120 countries."


def test_number_swap_changes_a_stated_value_to_one_the_evidence_lacks() -> None:
    rng = random.Random(0)
    claim = "The film was released in 1997 in 120 countries."
    for _ in range(20):
        new = augment.number_swap(claim, EVIDENCE, rng)
        assert new is not None and new != claim
        assert checks.missing_numbers(new, EVIDENCE), new  # the new value is not in the evidence


def test_number_swap_leaves_bounds_and_tokens_alone() -> None:
    rng = random.Random(0)
    assert augment.number_swap("It grossed more than 120 dollars.", EVIDENCE, rng) is None
    assert augment.number_swap("CO2 levels rose.", "CO2 levels rose.", rng) is None
    assert augment.number_swap("It was shown in 50 countries.", EVIDENCE, rng) is None  # 50 is not stated


def test_entity_swap_replaces_a_mentioned_name_but_not_the_subject() -> None:
    rng = random.Random(0)
    evidence = "Kate Winslet and Leonardo DiCaprio star as lovers in the film by James Cameron."
    claim = "The film by James Cameron stars Kate Winslet."
    new = augment.entity_swap(claim, evidence, ["Brad Pitt", "Tom Hanks", "Leonardo DiCaprio", "Madonna"], rng)
    assert new is not None
    assert "Brad Pitt" in new or "Tom Hanks" in new
    assert "Leonardo DiCaprio" not in new  # a name the evidence mentions would keep the claim true
    # The subject at the start of the claim is never swapped.
    assert augment.entity_swap("Kate Winslet starred in it.", evidence, ["Brad Pitt"], rng) is None


def test_negate_adds_or_removes_one_negation() -> None:
    rng = random.Random(0)
    assert augment.negate("The drug was approved in 2010.", rng) == "The drug was not approved in 2010."
    assert augment.negate("The drug was not approved in 2010.", rng) == "The drug was approved in 2010."
    assert augment.negate("It never rains and nothing grows.", rng) is None


def test_antonym_swap_needs_the_word_in_the_evidence() -> None:
    rng = random.Random(0)
    evidence = "Global temperatures increased by 1 degree."
    assert augment.antonym_swap("Temperatures increased.", evidence, rng) == "Temperatures decreased."
    assert augment.antonym_swap("Temperatures rose.", evidence, rng) is None


def test_neutral_edits_add_an_unsupported_part() -> None:
    assert augment.add_clause("Titanic was directed by James Cameron.", "The sea is blue today.") == (
        "Titanic was directed by James Cameron, and the sea is blue today."
    )
    assert augment.add_year("Titanic was directed by James Cameron.", EVIDENCE, random.Random(0)) is None
    new = augment.add_year("It was directed by James Cameron.", "James Cameron directed it.", random.Random(0))
    assert new is not None and checks.missing_numbers(new, "James Cameron directed it.")


def test_minimal_pairs_change_only_who_did_what_or_which_way_it_moved() -> None:
    from training import contrastive

    names = {"place": ["Italy", "Spain", "France"], "person": ["Ann Lee", "Bob Stone", "Cy Young"]}
    roles = contrastive.role_pairs(names, random.Random(0), 300)
    directions = contrastive.direction_pairs(random.Random(0), 300)
    seen = {p.kind for p in roles + directions}
    assert {"minimal_role_swapped", "minimal_role_passive", "minimal_direction_flipped"} <= seen
    for pair in roles:
        if pair.kind in ("minimal_role_swapped", "minimal_role_same"):
            # The same names, in the same or the other order: only the roles tell the label.
            assert set(re.findall(r"[A-Z]\w+", pair.claim)) <= set(re.findall(r"[A-Z]\w+", pair.evidence)), pair
        expected = {
            "role_same": 0,
            "role_passive": 0,
            "role_swapped": 2,
            "role_swapped_passive": 2,
            "role_other_name": 1,
        }
        assert pair.label == expected[pair.kind.removeprefix("minimal_")], pair
    flipped = next(p for p in directions if p.kind == "minimal_direction_flipped")
    up = any(w in flipped.evidence for w in [*contrastive._UP, "rose", "increased", "grew"])
    down = any(w in flipped.claim for w in [*contrastive._DOWN, "fell", "decreased", "declined"])
    assert up == down and flipped.label == contrastive.CON


def test_denial_pairs_read_one_negation_three_ways() -> None:
    from training import contrastive

    sources = [
        contrastive.Source(
            f"{film} was directed by {maker}.",
            f"{film} is a drama film that was directed by {maker} in {year}.",
            film,
            "test",
            [f"{film} starred {star}.", f"{star} was born in Ohio."],
        )
        for film, maker, star, year in [
            ("Titanic", "James Cameron", "Kate Winslet", 1997),
            ("Jaws", "Steven Spielberg", "Roy Scheider", 1975),
            ("Heat", "Michael Mann", "Al Pacino", 1995),
            ("Alien", "Ridley Scott", "Sigourney Weaver", 1979),
        ]
    ]
    # Evidence that already denies something is left out: negating it again would say the opposite.
    sources.append(
        contrastive.Source(
            "Cats was directed by Tom Hooper.",
            "Cats was not a success, though it was directed by Tom Hooper in 2019.",
            "Cats",
            "test",
            ["Cats starred Judi Dench."],
        )
    )
    pairs = contrastive.denial_pairs(sources, random.Random(0), 9)
    by_kind: dict[str, list[contrastive.Pair]] = {}
    for pair in pairs:
        by_kind.setdefault(pair.kind, []).append(pair)
    # Equal thirds, each with the label its kind promises.
    assert {k: len(v) for k, v in by_kind.items()} == {"denial": 3, "denial_of_another": 3, "denial_confirmed": 3}
    expected = {"denial": contrastive.CON, "denial_of_another": contrastive.NEU, "denial_confirmed": contrastive.ENT}
    for pair in pairs:
        assert checks.negation_count(pair.claim) == 1, pair  # every claim denies one thing
        assert pair.label == expected[pair.kind], pair
        evidence_denies = checks.negation_count(pair.evidence) == 1
        assert evidence_denies == (pair.kind == "denial_confirmed"), pair
        # Another name in the place of the claim's: what is denied is not what the evidence says.
        names_kept = checks.missing_entities(pair.claim, pair.evidence) == []
        assert names_kept == (pair.kind != "denial_of_another"), pair
    assert contrastive.denial_pairs(sources, random.Random(0), 0) == []
    everything = contrastive.denial_pairs(sources, random.Random(0), 100)
    assert len(everything) == 12 and not any("Cats" in p.claim for p in everything)


def test_fitting_for_one_round_reads_the_first_round_alone() -> None:
    import numpy as np

    from training import fit_decision as fd

    rows = [fd.Row("wice", 0, np.zeros(3), np.ones(3), "a claim")]
    assert np.array_equal(fd.as_read(rows, 2)[0].full, np.ones(3))  # two rounds: both views
    assert np.array_equal(fd.as_read(rows, 1)[0].full, np.zeros(3))  # one: what the first round shows


def test_a_record_written_before_the_judges_modules_were_renamed_still_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pickle
    import sys
    import types

    from guardrail.judges import _candidates
    from training import fit_decision as fd

    # A pickle naming the module as it was called then (guardrail.judges.candidates).
    old = types.ModuleType("guardrail.judges.candidates")
    old.Candidate = _candidates.Candidate  # type: ignore[attr-defined]
    sys.modules["guardrail.judges.candidates"] = old
    try:
        _candidates.Candidate.__module__ = "guardrail.judges.candidates"
        try:
            blob = pickle.dumps(_candidates.Candidate("sentence", "Text.", 0, [0], "Text."))
        finally:
            _candidates.Candidate.__module__ = _candidates.__name__
    finally:
        del sys.modules["guardrail.judges.candidates"]
    path = tmp_path / "record.pkl"
    path.write_bytes(blob)
    loaded = fd._load_record(path)
    assert isinstance(loaded, _candidates.Candidate) and loaded.text == "Text."


def test_written_pairs_become_tasks_and_a_malformed_one_is_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    import pytest

    from training import fit_decision as fd

    good = tmp_path / "pairs.json"
    good.write_text(
        json.dumps(
            [
                {
                    "claim": "Aspirin cut strokes.",
                    "page": "Strokes did not differ.",
                    "title": "A trial",
                    "gold": "contradicted",
                },
                {"claim": "Aspirin is cheap.", "page": "Aspirin is cheap.", "gold": "supported"},
            ]
        )
    )
    tasks = fd.written_tasks([good])
    assert [(t.claim, t.evidence, t.gold, t.title) for t in tasks] == [
        ("Aspirin cut strokes.", ["Strokes did not differ."], "contradicted", "A trial"),
        ("Aspirin is cheap.", ["Aspirin is cheap."], "supported", None),
    ]
    digest = fd._files_digest([good])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"claim": "x", "page": "y", "gold": "true"}]))
    with pytest.raises(ValueError, match=r"bad\.json\[0\].*gold label"):
        fd.written_tasks([good, bad])
    bad.write_text(json.dumps({"claim": "x"}))
    with pytest.raises(ValueError, match="JSON list"):
        fd.written_tasks([bad])
    # The cache key follows the files' contents: an edited file is recorded afresh.
    good.write_text(good.read_text().replace("cheap", "dear"))
    assert fd._files_digest([good]) != digest


def test_written_pairs_weigh_as_the_edited_pairs_and_never_set_the_calibration() -> None:
    import numpy as np

    from training import fit_decision as fd

    rows = [fd.Row("wice", 0, np.zeros(3), np.zeros(3)), fd.Row("wice", 2, np.zeros(3), np.zeros(3))]
    rows += [fd.Row("written", 0, np.zeros(3), np.zeros(3)), fd.Row("written", 2, np.zeros(3), np.zeros(3))]
    w = fd._weights(rows)
    assert w[2] == w[3] and np.isclose(w[2] / w[0], fd.SYNTHETIC_WEIGHT)
    assert "written" in fd.MADE_SETS and "synthetic" in fd.MADE_SETS


def test_a_signed_decision_keeps_each_weight_on_its_side_and_fits_like_scikit_learn_when_free() -> None:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from training import fit_decision as fd

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 3))
    # Class 0 ("supported") rises with feature 0 and, by collinearity in these rows, with feature 1.
    logits = np.column_stack([2 * x[:, 0] + 1.5 * x[:, 1], -2 * x[:, 0], np.zeros(600)])
    y = np.asarray([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in logits])
    w = np.ones(600)
    free = fd.SignedLogistic(1.0, np.zeros((3, 2))).fit(x, y, w)
    reference = LogisticRegression(C=1.0, max_iter=5000).fit(x, y)

    def probs(model: object) -> np.ndarray:
        z = x @ model.coef_.T + model.intercept_  # type: ignore[attr-defined]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    assert np.abs(probs(free) - probs(reference)).max() < 0.05
    assert free.coef_[0, 1] - free.coef_[2, 1] > 0.5  # freely, feature 1 raises support
    signs = np.asarray([[1, -1], [-1, 0], [0, 0]])  # feature 1 may never raise support
    held = fd.SignedLogistic(1.0, signs).fit(x, y, w)
    assert held.coef_[0, 1] <= 1e-9 and held.coef_[0, 0] > 0.5 and held.coef_[1, 0] <= 1e-9
    assert np.array_equal(held.coef_[2], np.zeros(3))  # not_found is the reference


def test_every_decision_feature_a_reader_can_read_one_way_has_its_side() -> None:
    from guardrail.judges._features import REQUEST_FEATURES
    from training import fit_decision as fd

    signs = dict(zip(REQUEST_FEATURES, map(tuple, fd.expected_signs(REQUEST_FEATURES)), strict=True))
    assert signs["support_ent_context"] == (1, -1) and signs["max_ent"] == (1, -1)
    assert signs["support_con_window"] == (-1, 1) and signs["contra_con_window"] == (-1, 1)
    assert signs["support_number_missing"] == (-1, 0) and signs["page_lacks_a_number"] == (-1, 0)
    assert signs["support_name_substituted"] == (-1, 1) and signs["contra_negation_flip"] == (-1, 1)
    assert signs["support_overlap"] == (1, 0) and signs["page_overlap"] == (1, 0)
    assert signs["contra_subject_elsewhere"] == (0, -1) and signs["support_subject_elsewhere"] == (-1, 0)
    assert signs["claim_words"] == (0, 0) and signs["support_rank"] == (0, 0)


def test_a_signed_fit_leaves_the_neutral_readings_out_and_keeps_every_side() -> None:
    import numpy as np

    from guardrail.judges._features import REQUEST_FEATURES
    from training import fit_decision as fd

    rng = np.random.default_rng(1)
    n, f = 300, len(REQUEST_FEATURES)
    rows = [fd.Row("wice", int(rng.integers(3)), rng.random(f), rng.random(f), f"claim {i}") for i in range(n)]
    _, _, model = fd.fit(rows, 1.0, signed=True)
    coef = model.coef_ - model.coef_[2]  # against not_found
    neutral = [i for i, name in enumerate(REQUEST_FEATURES) if "_neu_" in name]
    assert neutral and np.allclose(coef[:, neutral], 0.0)
    signs = fd.expected_signs(REQUEST_FEATURES)
    for k in (0, 1):
        assert (coef[k][signs[:, k] > 0] >= -1e-9).all() and (coef[k][signs[:, k] < 0] <= 1e-9).all()
    _, _, free = fd.fit(rows, 1.0)  # the default: scikit-learn's, unconstrained, neutral readings in
    assert not np.allclose(free.coef_[:, neutral], 0.0)


def test_the_fitting_record_names_the_code_it_ran_on(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    from pathlib import Path

    from training import fit_decision as fd

    root = Path(fd.__file__).resolve().parents[1]
    version = fd.code_version(root)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    if head:  # a checkout: the commit, marked where the judge's or the fitting's code differs from it
        assert version is not None and version.split("+")[0] == head
    assert fd.code_version(tmp_path) is None  # outside git


def test_training_refuses_a_share_or_count_of_pairs_it_cannot_take(capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from training import train

    for flag, value in (
        ("--mix-keep", "1.5"),
        ("--mix-keep", "0"),
        ("--minimal-pairs", "-3"),
        ("--denial-pairs", "-1"),
        ("--distil-replay", "-0.5"),
        ("--device", "tpu"),
        ("--device", "cuda:x"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            train.main(["--snli", "unused", "--stages", "3", flag, value])
        assert exit_info.value.code == 2
        assert flag in capsys.readouterr().err


def test_training_on_a_gpu_that_is_not_there_is_refused_before_anything_is_written(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest
    import torch

    from training import train

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--snli", "unused", "--stages", "3", "--device", "cuda", "--out", str(out)])
    assert exit_info.value.code == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert not out.exists()


def test_frozen_word_embeddings_stay_as_they_start_while_the_rest_learns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import torch
    from transformers import AutoTokenizer

    from guardrail.judges.local import MODEL_DIR

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    model = _tiny_classifier(4)
    words_before = model.get_input_embeddings().weight.detach().clone()
    head_before = model.classifier.weight.detach().clone()
    _train_briefly(model, tokenizer, tmp_path, epochs=2, freeze_word_embeddings=True)
    assert torch.equal(model.get_input_embeddings().weight, words_before)
    assert not torch.equal(model.classifier.weight, head_before)


def _train_briefly(model, tokenizer, out, *, epochs: int, **options) -> int:  # type: ignore[no-untyped-def]
    """Eight labelled pairs, batches of four, a high learning rate: enough for weights to move."""
    from training import train

    examples = [train.Example(f"Claim {i}.", f"Evidence {i}.", i % 3, "mix") for i in range(8)]
    return train.train_stage(
        name="brief",
        model=model,
        tokenizer=tokenizer,
        examples=examples,
        out=out,
        epochs=epochs,
        lr=1e-2,
        batch_size=4,
        max_len=16,
        max_tokens=4096,
        seed=1,
        ckpt_every=10_000,
        resume=False,
        **options,
    )


def _tiny_classifier(seed: int, favour: int | None = None):  # type: ignore[no-untyped-def]
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    config.num_labels = 3
    model = BertForSequenceClassification(config)
    if favour is not None:  # a teacher whose reading is plain: this class, whatever the pair
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor([0.0, 0.0, 0.0]).index_fill(0, torch.tensor(favour), 4.0))
    return model


_DISTIL_OPTIONS = {"epochs": 30, "lr": 5e-3, "batch_size": 8, "max_len": 32, "max_tokens": 4096, "seed": 3}


def _mean_reading_after_training(tokenizer, examples, out, **soft_options):  # type: ignore[no-untyped-def]
    """A fresh tiny student trained on ``examples`` with ``soft_options``; its mean probabilities
    over them afterwards."""
    import torch

    from training import train

    model = _tiny_classifier(2)
    train.train_stage(
        name="t",
        model=model,
        tokenizer=tokenizer,
        examples=examples,
        out=out,
        ckpt_every=10_000,
        resume=False,
        **_DISTIL_OPTIONS,  # type: ignore[arg-type]
        **soft_options,
    )
    enc = tokenizer([e.evidence for e in examples], [e.claim for e in examples], return_tensors="pt", padding=True)
    with torch.no_grad():
        return torch.softmax(model(**enc).logits, dim=-1).mean(0)


def test_distilled_replay_keeps_the_teachers_reading_not_the_labels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest
    import torch
    from transformers import AutoTokenizer

    from guardrail.judges.local import MODEL_DIR
    from training import train

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    teacher = _tiny_classifier(1, favour=train.LABEL_ID["neutral"]).eval()
    entail = train.LABEL_ID["entailment"]
    examples = [train.Example(f"Claim {i}.", f"Evidence sentence {i}.", entail, "mix") for i in range(16)]

    def trained(soft: list[bool] | None) -> torch.Tensor:
        return _mean_reading_after_training(tokenizer, examples, tmp_path, teacher=teacher, soft=soft, soft_weight=1.0)

    labelled = trained(None)
    distilled = trained([True] * len(examples))
    assert labelled.argmax() == entail  # the labels win without the flags
    assert distilled[train.LABEL_ID["neutral"]] > 0.8  # the teacher's reading (0.96) wins with them
    with pytest.raises(ValueError, match="teacher"):
        train.train_stage(
            name="u",
            model=_tiny_classifier(2),
            tokenizer=tokenizer,
            examples=examples,
            out=tmp_path,
            ckpt_every=10_000,
            resume=False,
            soft=[True] * len(examples),
            **_DISTIL_OPTIONS,  # type: ignore[arg-type]
        )


def test_the_benches_skip_with_a_line_saying_where_the_labelled_sets_are_missing(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from training.datasets import labelled_data_present

    assert not labelled_data_present(tmp_path)
    assert f"skipped: no labelled data in {tmp_path}" in capsys.readouterr().out
    (tmp_path / "climate_fever_dev.jsonl").write_text("")
    assert labelled_data_present(tmp_path)
    assert capsys.readouterr().out == ""


def _tiny_mpnet(tmp_path, favour: int | None = None):  # type: ignore[no-untyped-def]
    """A small MPNet classifier saved with the judge's tokenizer: an encoder of another kind than
    the student's, with no token type ids, as all-mpnet-base-v2 is."""
    import torch
    from transformers import AutoTokenizer, MPNetConfig, MPNetForSequenceClassification

    from guardrail.judges.local import MODEL_DIR
    from training import train

    torch.manual_seed(5)
    config = MPNetConfig(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    config.num_labels = 3
    config.id2label = dict(enumerate(train.LABELS))
    config.label2id = dict(train.LABEL_ID)
    model = MPNetForSequenceClassification(config).eval()
    if favour is not None:
        with torch.no_grad():
            model.classifier.out_proj.weight.zero_()
            model.classifier.out_proj.bias.copy_(torch.tensor([0.0, 0.0, 0.0]).index_fill(0, torch.tensor(favour), 4.0))
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    tokenizer.model_input_names = ["input_ids", "attention_mask"]
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    return model, tokenizer


def test_a_teacher_of_another_kind_reads_each_pair_with_its_own_tokenizer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest
    import torch

    from training import train

    model, tokenizer = _tiny_mpnet(tmp_path)
    examples = [
        train.Example("Titanic was directed by James Cameron.", "It was directed by James Cameron.", 0, "mix"),
        train.Example("Water boils at 50 degrees.", "Water boils at 100 degrees at sea level, as measured.", 2, "mix"),
        train.Example("Short.", "Shorter.", 1, "mix"),
    ]
    read = train.teacher_readings(tmp_path, examples, max_len=64)
    assert read.shape == (3, 3)
    for row, example in zip(read, examples, strict=True):
        enc = tokenizer(example.evidence, example.claim, return_tensors="pt")
        assert "token_type_ids" not in enc
        with torch.no_grad():
            alone = model(**enc).logits[0]
        assert torch.allclose(row, alone, atol=1e-5)  # the order of the rows is the examples' own

    model.config.id2label = {0: "neutral", 1: "entailment", 2: "contradiction"}
    model.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="labels its outputs"):
        train.teacher_readings(tmp_path, examples, max_len=64)


def test_distilling_from_read_logits_learns_the_teacher_and_the_labels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import torch
    from transformers import AutoTokenizer

    from guardrail.judges.local import MODEL_DIR
    from training import train

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    teacher_dir = tmp_path / "teacher"
    _tiny_mpnet(teacher_dir, favour=train.LABEL_ID["neutral"])
    entail = train.LABEL_ID["entailment"]
    examples = [train.Example(f"Claim {i}.", f"Evidence sentence {i}.", entail, "mix") for i in range(16)]
    taught = train.teacher_readings(teacher_dir, examples, max_len=32)
    assert bool((taught.argmax(-1) == train.LABEL_ID["neutral"]).all())

    def trained(weight: float) -> torch.Tensor:
        return _mean_reading_after_training(
            tokenizer,
            examples,
            tmp_path,
            soft=[True] * len(examples),
            soft_weight=weight,
            teacher_logits=taught,
            soft_keeps_label=True,
        )

    label_only = trained(0.0)
    both = trained(1.0)
    teacher_heavy = trained(20.0)
    assert label_only.argmax() == entail  # the label is still learnt beside the teacher
    neutral = train.LABEL_ID["neutral"]
    assert label_only[neutral] < both[neutral] < teacher_heavy[neutral]
    assert teacher_heavy.argmax() == neutral


def test_a_student_trains_on_an_encoder_without_token_type_ids(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import torch

    model, tokenizer = _tiny_mpnet(tmp_path)
    model.train()
    before = model.classifier.out_proj.weight.detach().clone()
    steps = _train_briefly(model, tokenizer, tmp_path, epochs=1)
    assert steps == 2
    assert not torch.equal(model.classifier.out_proj.weight, before)


def test_a_teacher_is_refused_beside_distilled_replay_or_where_no_model_is(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from training import train

    _tiny_mpnet(tmp_path / "t")
    for extra, said in (
        (["--teacher", str(tmp_path / "t"), "--distil-replay", "1.0"], "--distil-replay"),
        (["--teacher", str(tmp_path / "nothing")], "config.json missing"),
        (["--teacher", str(tmp_path / "t"), "--teacher-weight", "-1"], "--teacher-weight"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            train.main(["--snli", "unused", "--stages", "3", "--out", str(tmp_path / "run"), *extra])
        assert exit_info.value.code == 2
        assert said in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_row_the_bias_already_reads_right_leaves_the_model_little_to_learn(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import math

    import pytest
    import torch
    from transformers import AutoTokenizer

    from guardrail.judges.local import MODEL_DIR
    from training import train

    entail = train.LABEL_ID["entailment"]
    logits = torch.zeros((2, 3), requires_grad=True)
    labels = torch.tensor([entail, entail])
    # The bias reads the first row as entailment (0.98), the second as contradiction (0.98).
    bias = torch.log(torch.tensor([[0.98, 0.01, 0.01], [0.01, 0.01, 0.98]]))
    train.product_of_experts_loss(logits, bias, labels).backward()
    assert logits.grad is not None
    explained, unexplained = logits.grad.norm(dim=1)
    assert explained < 0.05 * unexplained
    # Weight 0 is the plain loss.
    plain = train.pair_loss(logits.detach(), labels)
    assert torch.isclose(train.product_of_experts_loss(logits.detach(), bias, labels, 0.0), plain)
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    examples = [train.Example(f"Claim {i}.", f"Evidence sentence {i}.", entail, "mix") for i in range(16)]
    with pytest.raises(ValueError, match="rows"):
        _mean_reading_after_training(tokenizer, examples, tmp_path, bias_log_probs=bias)
    assert math.isfinite(float(plain))


def test_the_bias_only_model_reads_shared_words_and_negation() -> None:
    import pytest

    from training import bias

    features = dict(
        zip(bias.FEATURES, bias.lexical_features("The cat sat on the mat.", "The cat sat on the mat."), strict=True)
    )
    assert features["claim_words_on_page"] == 1.0 and features["negation_differs"] == 0.0
    denied = dict(zip(bias.FEATURES, bias.lexical_features("The cat didn't sit.", "The cat sat in 2019."), strict=True))
    assert denied["claim_negation"] == 1.0 and denied["negation_differs"] == 1.0
    assert bias.lexical_features("Born in 1950.", "Born in 1951.")[bias.FEATURES.index("claim_number_missing")] == 1.0
    claims = ["A dog runs.", "A dog does not run.", "A cat sleeps on a sofa.", "Fish swim."] * 5
    pages = ["A dog runs fast.", "A dog runs fast.", "The weather is mild today.", "Fish can swim."] * 5
    labels = [0, 2, 1, -1] * 5
    log_p, record = bias.bias_log_probs(claims, pages, labels)
    assert log_p.shape == (20, 3) and record["fitted_pairs"] == 15
    assert log_p[0].argmax() == 0 and log_p[1].argmax() == 2 and log_p[2].argmax() == 1
    with pytest.raises(ValueError, match="all three labels"):
        bias.bias_log_probs(claims[:2], pages[:2], [0, 2])


def test_training_refuses_a_bias_weight_it_cannot_use(capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from training import train

    for extra in (["--bias-weight", "-1"], ["--bias-weight", "1", "--distil-replay", "1"]):
        with pytest.raises(SystemExit) as exit_info:
            train.main(["--snli", "unused", "--stages", "3", *extra])
        assert exit_info.value.code == 2
        assert "--bias-weight" in capsys.readouterr().err
