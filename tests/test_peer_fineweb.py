"""`benchmarks/peer_fineweb.py` says where ours and datatrove disagree: by rule on each side, and for Gopher's share of
words with a letter, how many pages each side's count decides differently. No datatrove, no run: Sides made by hand."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import peer_fineweb as bench

PROSE = "The cat sat on the mat with the dog, and that was all (really) fine."


def side(name: str, kept: set[str], dropped_by: dict[str, str], alpha: dict[str, float]) -> bench.Side:
    return bench.Side(name=name, cores=1, docs=4, wall_s=1.0, sampled=bench.Sampled(), cpu_groups={}, stages={},
                      kept=kept, dropped_by=dropped_by, texts={}, out_tokens_bytes=0, out_docs_bytes=0,
                      out_total_bytes=0, tokens=0, docs_out=len(kept), alpha=alpha)


def test_disagreements_by_rule_and_by_the_letter_share():
    ours = side("ours", {"u1", "u2", "u3"}, {"u4": "gopher_quality/too_few_alpha_words"},
                {"u1": 0.94, "u2": 0.95, "u3": 0.9, "u4": 0.7})
    theirs = side("datatrove", {"u3", "u4"}, {"u1": "4_gopher_qual/gopher_below_alpha_threshold",
                                             "u2": "3_gopher_rep/dup_line_frac"},
                  {"u1": 0.71, "u3": 0.85, "u4": 0.82})  # u2: dropped before datatrove's quality filter
    _, _, lines = bench.agreement(ours, theirs, ["u1", "u2", "u3", "u4"])
    by_rule = next(line for line in lines if line.startswith("kept by ours only"))
    assert "4_gopher_qual/gopher_below_alpha_threshold 1" in by_rule
    assert "3_gopher_rep/dup_line_frac 1" in by_rule
    only_theirs = next(line for line in lines if line.startswith("kept by datatrove"))
    assert "gopher_quality/too_few_alpha_words 1" in only_theirs
    (line,), counts = bench.alpha_rule(ours, theirs)
    assert counts == {"judged": 3, "ours_only": 1, "theirs_only": 1, "kept": 1,
                      "examples": "u1 ours 0.94 / datatrove 0.71"}
    assert "on the 3 pages both quality filters judged" in line
    assert line.endswith("e.g. u1 ours 0.94 / datatrove 0.71")


def test_our_shares_are_the_recipes_gopher_quality_on_every_page_that_reached_it(tmp_path):
    job = tmp_path / "job"
    (job / "documents").mkdir(parents=True)
    pq.write_table(pa.table({"url": ["kept"], "text": [PROSE]}), job / "documents" / "part-0.parquet")
    for stage, reason, url, text in [("fineweb", "line_punct_ratio", "late", PROSE),
                                     ("gopher_quality", "too_few_alpha_words", "numbers", "12 34 56 78 word"),
                                     ("gopher_repetition", "dup_line_frac", "early", PROSE)]:
        folder = job / "rejects" / f"stage={stage}" / f"reason={reason}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"url": [url], "text": [text]}), folder / "part-0.parquet")
    recipe = bench.RECIPE.format(cpus=1, executor="local", output=tmp_path / "out", seed=1, corpus=tmp_path, timeout=2,
                                 lang=0.65, perm=112, verify="none", model=tmp_path / "sp.model", seq_len=16,
                                 engine="trafilatura", second="false", gate="", prose="true", **bench.MINHASH)
    shares = bench.alpha_shares(recipe, job)
    assert sorted(shares) == ["kept", "late", "numbers"]  # gopher_repetition's drops never reached gopher_quality
    assert shares["kept"] == pytest.approx(1.0)  # whitespace words: "dog," and "(really)" have letters
    assert shares["numbers"] == pytest.approx(0.2)
