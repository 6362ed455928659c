"""Evaluation, overlap and the result table, on a small untrained model and made-up numbers: what each figure
is, computed by hand beside the code's."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from curation.ablate.evalsets import Choice, EvalSet, LoadedSet, read_set
from curation.ablate.evaluate import choice_scores, choice_sequences, text_scores, text_windows
from curation.ablate.overlap import eval_index, flagged_documents, overlapping_items
from curation.ablate.stats import table
from curation.tokens.tokenizer import load_tokenizer, train_tokenizer
from curation.train.model import ModelConfig, Transformer

from ..conftest import ROOT

SEQ_LEN, CHOICE_LEN = 16, 64
TEXTS = [
    "The river that runs through the town was treated as a drain for most of the last century.",
    "Cold air holds less water vapour, so less light is scattered and the stars look sharper in winter.",
    "A starter is a community of wild yeasts and lactic acid bacteria living in flour and water.",
    "Squeeze each tyre and compare the pressure with the range printed on the sidewall before a ride.",
]


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    lines = [t for t in TEXTS for _ in range(3)]
    model = train_tokenizer(lines, tmp_path_factory.mktemp("sp") / "sp", 400, "bpe", seed=0,
                            hard_vocab_limit=False)
    return load_tokenizer(model)


@pytest.fixture(scope="module")
def model(sp):
    torch.manual_seed(0)
    return Transformer(ModelConfig(vocab_size=sp.get_piece_size(), d_model=32, n_layers=1, n_heads=4,
                                   max_seq_len=CHOICE_LEN))


@torch.no_grad()
def logprob_sum(model, tokens: list[int], first: int = 0) -> float:
    """Sum of log p(tokens[i + 1] | tokens[:i + 1]) for i >= first, in one forward pass."""
    inputs = torch.tensor([tokens[:-1]])
    logits = model(inputs, torch.arange(len(tokens) - 1)[None]).logits.float()
    logprobs = torch.log_softmax(logits, -1)[0, torch.arange(len(tokens) - 1), torch.tensor(tokens[1:])]
    return float(logprobs[first:].double().sum())


def test_text_loss_and_bits_per_byte_are_the_documents_own_likelihood(model, sp):
    text = "Cold air holds less water."
    tokens = sp.encode(text, out_type=int)
    assert len(tokens) + 1 <= SEQ_LEN  # one window
    nats = -logprob_sum(model, [sp.eos_id(), *tokens, sp.eos_id()])
    scores = text_scores(model, sp, [text], SEQ_LEN, torch.device("cpu"), batch_size=4)
    assert scores["tokens"] == len(tokens) + 1  # every token and the closing EOS, each predicted once
    assert scores["loss"] == pytest.approx(nats / (len(tokens) + 1), rel=1e-6)
    assert scores["bits_per_byte"] == pytest.approx(nats / (math.log(2) * len(text.encode())), rel=1e-6)


def test_a_long_document_is_scored_in_windows_covering_each_prediction_once(sp):
    tokens = list(range(3, 3 + 40))
    windows = text_windows(tokens, sp.eos_id(), SEQ_LEN)
    assert [len(w) - 1 for w, _ in windows] == [16, 16, 9]  # 41 predictions: 40 tokens and EOS
    predicted = [t for w, _ in windows for t in w[1:]]
    assert predicted == [*tokens, sp.eos_id()]


def test_a_choice_is_scored_by_its_own_tokens_given_the_context(model, sp):
    item = Choice("A starter lives in flour and", ("water", "stone yard"), 0)
    sequences = choice_sequences(sp, item, CHOICE_LEN)
    context = sp.encode("A starter lives in flour and", out_type=int)
    for (tokens, first), choice in zip(sequences, item.choices, strict=True):
        assert tokens[:len(context) + 1] == [sp.eos_id(), *context]
        assert first == len(context)  # targets from the choice's first token on
        assert sp.decode(tokens[first + 1:]).strip() == choice
    by_hand = [logprob_sum(model, tokens, first) for tokens, first in sequences]
    scores = choice_scores(model, sp, [item], CHOICE_LEN, torch.device("cpu"), batch_size=4)
    assert scores["accuracy"] == float(by_hand[0] > by_hand[1]) and scores["chance"] == 0.5 and scores["items"] == 1
    (tokens, first), _ = choice_sequences(sp, item, 4)  # too long for the model: the context is cut from the left
    assert tokens == sequences[0][0][-5:] and first == 5 - 1 - (len(sequences[0][0]) - 1 - sequences[0][1])


def test_the_bundled_choice_set_reads_and_a_bad_item_names_its_line(tmp_path):
    bundled = read_set(EvalSet(name="choice", path=str(ROOT / "recipes" / "eval" / "choice.jsonl"), kind="choice"))
    assert len(bundled) == 8 and {i.answer for i in bundled.items} == {0, 1, 2}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": "a", "choices": ["b", "c"], "answer": 0}\n\n{"context": "a", "choices": ["b"], '
                   '"answer": 0}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:3: `choices` must be a list of at least two strings"):
        read_set(EvalSet(name="bad", path=str(bad), kind="choice"))


def test_an_evaluation_set_holding_a_training_document_is_flagged_and_a_clean_one_is_not(tmp_path):
    documents = tmp_path / "documents.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": [f"Intro line. {TEXTS[0]} {TEXTS[1]}", TEXTS[2]]}), documents)
    sets = [LoadedSet("leaked", "text", texts=[TEXTS[3], TEXTS[1]]),  # the second sits inside document a
            LoadedSet("clean", "text", texts=[TEXTS[3], "Too short to compare."]),
            LoadedSet("quiz", "choice", items=[Choice(TEXTS[2].rsplit(" ", 3)[0], ("flour and water.", "x"), 0)])]
    flagged = flagged_documents(eval_index(sets, 13), str(documents))
    assert len(flagged) == 2  # document a (the leaked text) and b (the quiz's context and answer)
    found = overlapping_items(sets, flagged, 13)
    assert found["leaked"] == {"items": 2, "overlapping": 1, "examples": [1], "unchecked": 0}
    assert found["clean"] == {"items": 2, "overlapping": 0, "examples": [], "unchecked": 1}
    assert found["quiz"]["overlapping"] == 1
    assert overlapping_items(sets, [], 13)["leaked"]["overlapping"] == 0


def test_the_table_compares_each_variant_with_the_baseline_against_the_seed_spread():
    def final(loss: float) -> dict:
        return {"held-out": {"loss": loss, "tokens": 10}}

    finals = {"filtered": {0: final(3.0), 1: final(3.1), 2: final(3.2)},
              "base": {0: final(3.5), 1: final(3.6), 2: final(3.7)},
              "noisy": {0: final(2.5), 1: final(3.5), 2: final(4.5)}}
    rows = {r.variant: r for r in table(finals, "base", factor=2.0)}
    assert list(rows) == ["base", "filtered", "noisy"]  # baseline first
    assert rows["base"].mean == pytest.approx(3.6) and rows["base"].spread == pytest.approx(0.1)
    assert rows["base"].difference is None and rows["base"].exceeds is None
    assert rows["filtered"].difference == pytest.approx(-0.5) and rows["filtered"].values == [3.0, 3.1, 3.2]
    assert rows["filtered"].exceeds is True and rows["filtered"].better is True  # 0.5 > 2 x 0.1
    pooled = math.sqrt((1.0**2 + 0.1**2) / 2)
    assert rows["noisy"].difference == pytest.approx(-0.1) and rows["noisy"].spread == pytest.approx(1.0)
    assert 2 * pooled > 0.1 and rows["noisy"].exceeds is False and rows["noisy"].better is False
    one_seed = table({"base": {0: final(3.5)}, "v": {0: final(3.0)}}, "base", 2.0)
    assert one_seed[1].spread is None and one_seed[1].exceeds is None  # one seed says nothing of the noise
