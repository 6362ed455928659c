"""Counting that adds up: words of blank texts, stages' in/out/bypassed
through a whole run, and a mixture's real shortfall where documents are too large for its target."""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from curation import schema
from curation.apply import ONLY, bypass_column, run_stage
from curation.classifier_training import Hyperparameters, read_jsonl_texts, train_classifier
from curation.mixture import HISTOGRAM_BINS, MixtureParams, SourcePlan, histogram, plan, report, unit_hash, warnings
from curation.recipe import parse_recipe
from curation.schema import documents_table
from curation.stages.length import Length
from curation.stages.registry import DOCUMENT_STAGES
from curation.stages.toxicity import Toxicity
from curation.text.columns import whitespace_words
from pipelines.console import summary
from pipelines.run import run
from tests.conftest import warc_response

# -- words are counted, not separators ---------------------------------------------------


def test_blank_texts_have_no_words_and_edges_add_none():
    texts = ["", "   ", "\n\t \u3000", None, " a b ", "one  two\tthree\n", "\u00a0x\u3000y"]
    assert whitespace_words(pa.array(texts)).tolist() == [0, 0, 0, 0, 2, 3, 2]
    scores = Length(min_words=1).score(documents_table(texts))
    assert scores["n_words"].tolist() == [0, 0, 0, 0, 2, 3, 2]
    reasons = Length(min_words=1).process(documents_table(texts)).reasons.to_pylist()
    assert reasons == ["too_few_words"] * 4 + [None] * 3


# -- every row of a stage is in, out, dropped, skipped or bypassed -------------------------

SENTENCES = {
    "en": ["The river runs past the old mill on the edge of the village.",
           "Every morning the children walk along the water to the school.",
           "In the summer the water is low and the fish hide under the stones.",
           "The farmers in the valley wait for the rain that comes in autumn.",
           "It is a quiet place, and most people who live here know each other.",
           "A small bakery on the square sells bread to the whole neighbourhood.",
           "When the snow melts in spring, the meadows turn green within a week.",
           "Visitors often stop at the bridge to take pictures of the waterfall."],
    "de": ["Der Fluss fließt an der alten Mühle am Rand des Dorfes vorbei.",
           "Jeden Morgen gehen die Kinder am Wasser entlang zur Schule.",
           "Im Sommer ist das Wasser niedrig und die Fische verstecken sich unter den Steinen.",
           "Die Bauern im Tal warten auf den Regen, der im Herbst kommt.",
           "Es ist ein ruhiger Ort, und die meisten Menschen hier kennen sich.",
           "Eine kleine Bäckerei am Platz verkauft Brot an die ganze Nachbarschaft.",
           "Wenn im Frühling der Schnee schmilzt, werden die Wiesen in einer Woche grün.",
           "Besucher halten oft an der Brücke, um den Wasserfall zu fotografieren."],
    "fr": ["La rivière passe devant le vieux moulin au bord du village.",
           "Chaque matin, les enfants longent l'eau pour aller à l'école.",
           "En été, l'eau est basse et les poissons se cachent sous les pierres.",
           "Les paysans de la vallée attendent la pluie qui vient en automne.",
           "C'est un endroit calme, et la plupart des habitants se connaissent.",
           "Une petite boulangerie sur la place vend du pain à tout le quartier.",
           "Quand la neige fond au printemps, les prés deviennent verts en une semaine.",
           "Les visiteurs s'arrêtent souvent sur le pont pour photographier la cascade."],
}


BENCHMARK = "What is the number of apples that the farmer in the green valley sold at the market on Sunday morning"


def prose(lang: str, i: int) -> list[str]:
    """Distinct sentences in a seeded order (no repetition for the Gopher rules to drop): one document."""
    sentences = SENTENCES[lang][:]
    random.Random(i).shuffle(sentences)
    return [*sentences, f"Number {i}."]


def _page(title: str, sentences: list[str]) -> bytes:
    paragraphs = "".join(f"<p>{' '.join(sentences[k:k + 2])}</p>" for k in range(0, len(sentences), 2))
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{paragraphs}" \
           "</article></body></html>".encode()


def _write_inputs(root: Path) -> None:
    pages = [(f"https://example.com/en/{i}", _page(f"Valley {i}", prose("en", i))) for i in range(4)]
    pages += [(f"https://example.de/de/{i}", _page(f"Tal {i}", prose("de", i))) for i in range(3)]
    pages += [("https://example.com/empty", b"<html><body></body></html>")]
    pages += [("https://www.casino.example/en/bonus", _page("Bonus", prose("en", 5)))]  # blocked by its domain
    (root / "crawl.warc.gz").write_bytes(b"".join(warc_response(url, body) for url, body in pages))
    notes = [" ".join(prose(lang, i)) for lang, n in (("en", 4), ("de", 3), ("fr", 3)) for i in range(n)]
    notes += ["too short", "   ", " ".join(prose("en", 9)) + " " + BENCHMARK + " today."]
    notes += [" ".join(prose("en", 10)) + " Write to anna.berg@example.org or call the office."]
    (root / "notes.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in notes))
    files = {"LICENSE": "Public domain.\n",
             "src/app.py": '"""The app."""\n\nTOKEN = "ghp_' + "Zq81" * 9 + '"\n\n\ndef main() -> int:\n    return 0\n',
             "src/util.py": '"""Helpers."""\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n',
             "package-lock.json": '{"lockfileVersion": 3}\n'}
    with tarfile.open(root / "repo.tar.gz", "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"repo-main/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (root / "blocked.txt").write_text("# domains\ncasino.example\n")
    (root / "bench.jsonl").write_text(json.dumps({"question": BENCHMARK, "answer": "12"}) + "\n")
    rng = random.Random(3)
    spam = ["buy", "cheap", "casino", "bonus", "click", "deal"]
    for name, words in (("pos", " ".join(SENTENCES["en"]).split()), ("neg", spam)):
        lines = [" ".join(rng.choice(words) for _ in range(30)) for _ in range(60)]
        (root / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines))
    train_classifier(read_jsonl_texts([str(root / "pos.jsonl")]), read_jsonl_texts([str(root / "neg.jsonl")]),
                     str(root / "quality.bin"), seed=7, holdout=0.2, hyperparameters=Hyperparameters(dim=8, epoch=5))


def every_stage_recipe(root: Path) -> str:
    return f"""\
name: every-stage
executor: local
local: {{workers: 1}}
sources:
  - {{name: web, format: warc, paths: ["{root}/crawl.warc.gz"]}}
  - {{name: notes, format: jsonl, paths: ["{root}/notes.jsonl"]}}
  - {{name: code, format: code, paths: ["{root}/repo.tar.gz"]}}
stages:
  - url: {{domains: ["{root}/blocked.txt"]}}
  - html_langid: {{keep: [en, de]}}
  - extract: {{timeout_s: 5, only: [web]}}
  - normalize: {{only: [web, notes]}}
  - langid: {{keep: [en, de, fr], min_score: 0.3, only: [web, notes]}}
  - toxicity: {{max_ratio: 0.01}}
  - length: {{min_words: 5, only: [web, notes]}}
  - gopher_repetition: {{only: [web, notes]}}
  - c4: {{terminal_punct: false, only: [web, notes]}}
  - fineweb: {{only: [web, notes]}}
  - density: {{only: [web, notes]}}
  - pii: {{redact: [email, ip, phone]}}
  - decontaminate: {{benchmarks: ["{root}/bench.jsonl"], ngram: 8, only: [notes]}}
  - classifier: {{model: "{root}/quality.bin", threshold: 0.0, only: [web, notes]}}
  - gopher_quality: {{only: [notes]}}
  - code_filters: {{only: [code]}}
  - code_secrets: {{only: [code]}}
"""


def check_funnel(rows: list[dict]) -> None:
    """The invariant: each stage's rows add up, and what leaves a stage is what reaches the next."""
    leaving = None
    for row in rows:
        judged = row["docs_out"] + sum(row["dropped"].values()) + sum(row["skipped"].values())
        assert row["docs_in"] == judged, row
        arriving = row["docs_in"] + sum(row["bypassed"].values())
        if leaving is not None:
            assert arriving == leaving, (row["stage"], arriving, leaving)
        leaving = row["docs_out"] + sum(row["bypassed"].values())
        assert not any(key.startswith("bypassed") for key in row["counts"]), row


@pytest.mark.ray
def test_every_stage_counts_every_row_it_receives(tmp_path: Path):
    root = tmp_path / "in"
    root.mkdir()
    _write_inputs(root)
    recipe = parse_recipe(every_stage_recipe(root))
    assert {kind for _, kind, _ in recipe.stage_specs()} == set(DOCUMENT_STAGES)  # every document stage
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    stats = json.loads(Path(result.job_dir, "stats.json").read_text())
    rows = stats["stages"]
    check_funnel(rows)
    by_name = {row["stage"]: row for row in rows}
    assert rows[-1]["docs_out"] + sum(rows[-1]["bypassed"].values()) == stats["documents"]["out"]
    assert pq.read_table(Path(result.job_dir, "documents")).num_rows == stats["documents"]["out"]
    # why rows went by: no page (notes, code), another source than `only:`, a language the list is not for
    assert by_name["read"]["docs_out"] == 9 + 14 + 4 and by_name["read"]["bypassed"] == {}
    assert (by_name["url"]["dropped"], by_name["url"]["bypassed"]) == ({"blocked_domain": 1}, {"no_url": 18})
    assert (by_name["html_langid"]["docs_in"], by_name["html_langid"]["bypassed"]) == (8, {"not_html": 18})
    assert by_name["extract"]["bypassed"] == {"only": 18}  # `only:` is counted first
    assert by_name["toxicity"]["bypassed"] == {"language": 3 + 3 + 3}  # German pages and notes, French notes
    assert by_name["toxicity"]["docs_in"] == by_name["langid"]["docs_out"] + 4 - 9  # English and code rows
    # German and French notes pass gopher_quality on their own stop words, and reach code_secrets
    assert by_name["pii"]["bypassed"] == {} and by_name["code_secrets"]["bypassed"] == {"only": 18}


def test_corpus_stages_count_the_sources_outside_their_only_as_went_by(tmp_path: Path):
    """`exact_dedup: {only: [b]}` saw b's documents and said nothing of a's: its row read 51 in, 51 out, nothing
    went by, and the next stage 110 in: the funnel did not add up."""
    for source, copies in (("a", 3), ("b", 2)):
        (tmp_path / f"{source}.jsonl").write_text("".join(
            json.dumps({"text": f"document {i} of source {source}, with words enough to be a document"}) + "\n"
            for i in range(6) for _ in range(copies)))
    recipe = parse_recipe(f"""
name: only
output: {tmp_path}/jobs
executor: local
local: {{workers: 1}}
sources:
  - {{name: a, format: jsonl, paths: ["{tmp_path}/a.jsonl"]}}
  - {{name: b, format: jsonl, paths: ["{tmp_path}/b.jsonl"]}}
stages:
  - length: {{min_words: 1, only: [b]}}
  - exact_dedup: {{only: [b]}}
  - minhash_dedup: {{only: [a]}}
""")
    rows = json.loads(Path(run(recipe, quiet=True).job_dir, "stats.json").read_text())["stages"]
    check_funnel(rows)
    by_name = {row["stage"]: row for row in rows}
    assert by_name["exact_dedup"]["bypassed"] == {"only": 18} and by_name["exact_dedup"]["dropped"] == {"duplicate": 6}
    assert by_name["minhash_dedup"]["bypassed"] == {"only": 6} and by_name["minhash_dedup"]["docs_in"] == 18


def test_a_stage_counts_the_rows_it_lets_by_once_under_the_first_reason():
    texts = ["the river runs", "der Fluss", "la rivière", "no language", "other source", "dropped before"]
    batch = documents_table(texts).append_column("lang", pa.array(["en", "de", "fr", None, "de", "en"]))
    batch = batch.set_column(batch.schema.get_field_index("source"), "source", pa.array(["notes"] * 4 + ["web"] * 2))
    batch = batch.set_column(batch.schema.get_field_index(schema.REASON), schema.REASON,
                             pa.array([None] * 5 + ["too_few_words"], pa.string()))
    out = run_stage(Toxicity(only=["notes"]), batch)
    by_id = dict(zip(out.column("id").to_pylist(), range(out.num_rows), strict=True))
    order = [by_id[i] for i in batch.column("id").to_pylist()]

    def column(name: str) -> list:
        values = out.column(name).to_pylist()
        return [values[k] for k in order]

    assert column(bypass_column("toxicity", ONLY)) == [None, None, None, None, 1, None]
    assert column(bypass_column("toxicity", "language")) == [None, 1, 1, None, None, None]
    judged = [v is not None for v in column(schema.metric_column("sec", "toxicity"))]
    assert judged == [True, False, False, True, False, False]  # docs_in: English and no `lang`; the drop: nowhere


# -- a mixture's real shortfall ------------------------------------------------------------

WORDS = ["river", "stone", "light", "garden", "paper", "window", "market", "winter", "silver", "number", "answer"]


def _texts(rng: random.Random, n: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(words)) + "." for _ in range(n)]


def _plan_and_take(lengths: np.ndarray, params: MixtureParams) -> tuple[SourcePlan, int]:
    """The plan of one source `web` of documents of `lengths` tokens, and the tokens its copies hold."""
    u = unit_hash([f"doc-{i}" for i in range(lengths.size)], 0)
    web = plan(params, {"web": histogram(u, lengths)})["web"]
    return web, int((web.copies(u) * lengths).sum())


def test_a_few_large_documents_get_the_nearest_whole_documents_as_planned_and_the_miss_is_reported():
    lengths = np.full(8, 5_000)  # 8 documents: a histogram bin holds one at most
    web, taken = _plan_and_take(lengths, MixtureParams(tokens={"web": 12_000}))
    assert web.planned_tokens == taken == 10_000  # 2 whole documents (3 miss by more), and the plan is exact
    assert web.granularity_tokens == 5_000
    m = report({"web": web}, {"web": taken})["web"]
    assert (m["shortfall_tokens"], m["excess_tokens"], m["miss_cause"]) == (2_000, 0, "document_granularity")
    [line] = warnings({"web": m})
    assert "short by 2,000 tokens (16.7% of the target)" in line and "whole documents are taken" in line
    web, taken = _plan_and_take(lengths, MixtureParams(tokens={"web": 13_000}))
    assert web.planned_tokens == taken == 15_000


def test_one_large_document_is_not_taken_for_a_target_it_would_overshoot_by_more_than_it_leaves():
    """A source of 30 files took its largest (38,502 tokens) for a target of 9,000: the threshold was the end
    of the bin the target fell in, whatever that bin held."""
    lengths = np.full(30, 500)
    u = unit_hash([f"doc-{i}" for i in range(lengths.size)], 0)
    lengths[np.argsort(u)[9]] = 38_000  # 9 documents of 500 tokens hash below it
    web, taken = _plan_and_take(lengths, MixtureParams(tokens={"web": 9_000}))
    assert taken == web.planned_tokens == 4_500  # 9,000 short by 4,500 rather than 33,500 over


def test_a_large_document_at_a_dense_threshold_is_a_real_shortfall_with_its_cause():
    lengths = np.full(6_000, 10)  # many small documents: the threshold is interpolated inside a bin...
    lengths[123] = 40_000  # ...and one document holds 40% of the tokens
    u = unit_hash([f"doc-{i}" for i in range(lengths.size)], 0)
    hist = histogram(u, lengths)
    cumulative = np.concatenate([[0], np.cumsum(hist)])
    at = int(u[123] * HISTOGRAM_BINS)
    below = (u[123] * HISTOGRAM_BINS - at) * hist[at]  # a target whose threshold falls just before the document
    wanted = int(cumulative[at] + below / 2)
    web, taken = _plan_and_take(lengths, MixtureParams(tokens={"web": wanted}))
    assert web.copies(u)[123] == 0 and taken < 0.5 * wanted  # the large document is left out: whole ones only
    m = report({"web": web}, {"web": taken})["web"]
    assert m["shortfall_tokens"] == wanted - taken and m["excess_tokens"] == 0  # not the plan's estimate (0)
    assert web.shortfall_tokens == 0 and m["miss_cause"] == "document_granularity"
    assert m["granularity_tokens"] >= 40_000
    [line] = warnings({"web": m})
    assert f"short by {wanted - taken:,} tokens" in line and "whole documents are taken" in line


@pytest.mark.parametrize("mixture", ["{weights: {web: 0.8, books: 0.2}}",
                                     "{weights: {web: 0.3, books: 0.7}, total_tokens: 42000, max_epochs: 1.2}"])
def test_run_reports_the_real_shortfall_and_excess_of_a_source_of_few_large_documents(tmp_path: Path, mixture: str):
    rng = random.Random(5)
    (tmp_path / "web.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in _texts(rng, 300, 12)))
    (tmp_path / "books.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in _texts(rng, 4, 1500)))
    recipe = parse_recipe(f"""\
name: few-large
executor: local
local: {{workers: 1}}
sources:
  - {{name: web, format: jsonl, paths: ["{tmp_path}/web.jsonl"]}}
  - {{name: books, format: jsonl, paths: ["{tmp_path}/books.jsonl"]}}
mixture: {mixture}
tokenizer: {{train: {{vocab_size: 300, model_type: bpe}}}}
pack: {{seq_len: 64, shard_rows: 64, validation: 0.0}}
""")
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    manifest = json.loads(Path(result.job_dir, "manifest.json").read_text())
    per_source = manifest["splits"]["train"]["tokens_per_source"]
    for source, m in manifest["mixture"].items():
        assert m["achieved_tokens"] == per_source[source] == m["planned_tokens"]  # few documents: the plan is exact
        assert m["shortfall_tokens"] == max(0, m["target_tokens"] - m["achieved_tokens"])
        assert m["excess_tokens"] == max(0, m["achieved_tokens"] - m["target_tokens"])
    books, web = manifest["mixture"]["books"], manifest["mixture"]["web"]
    for m in (books, web):  # the epochs achieved, not the rate planned (whole documents are taken)
        assert m["epochs"] == round(m["achieved_tokens"] / m["available_tokens"], 6)
    assert web["miss_cause"] is None and abs(web["achieved_tokens"] - web["target_tokens"]) < 100
    console = Console(record=True, width=400)
    summary(result.stats, result.job_dir, console=console)
    printed = console.export_text()
    assert f"warning: mixture books: {books['achieved_tokens']:,} tokens" in printed
    if "max_epochs" not in mixture:  # the books' target is a fraction of one of their 4 documents, taken whole
        assert web["epochs"] == 1.0 and books["achieved_tokens"] > books["target_tokens"]
        assert books["miss_cause"] == "document_granularity" and books["achieved_share"] > 0.21
        assert f"over by {books['excess_tokens']:,} tokens" in printed and "whole documents are taken" in printed
    else:  # 1.3 epochs of the books wanted, 1.2 allowed: 1 and the first whole documents past 0.2 more
        assert books["rate"] == 1.2 and books["miss_cause"] == "max_epochs"
        assert books["shortfall_tokens"] == books["target_tokens"] - books["achieved_tokens"] > 0
        assert f"short by {books['shortfall_tokens']:,} tokens" in printed and "(`max_epochs`)" in printed


def test_a_weighted_source_whose_documents_were_all_dropped_keeps_its_target_and_is_warned_about(tmp_path: Path):
    """It vanished from the plan, the manifest and the warnings: the mixture read only the sources with documents."""
    rng = random.Random(6)
    (tmp_path / "web.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in _texts(rng, 200, 12)))
    (tmp_path / "books.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in ["too short"] * 5))
    recipe = parse_recipe(f"""\
name: one-empty
executor: local
local: {{workers: 1}}
sources:
  - {{name: web, format: jsonl, paths: ["{tmp_path}/web.jsonl"]}}
  - {{name: books, format: jsonl, paths: ["{tmp_path}/books.jsonl"]}}
stages:
  - length: {{min_words: 5}}
mixture: {{weights: {{web: 0.5, books: 0.5}}, total_tokens: 4000}}
tokenizer: {{train: {{vocab_size: 300, model_type: bpe}}}}
pack: {{seq_len: 64, shard_rows: 64, validation: 0.0}}
""")
    result = run(recipe, output=str(tmp_path / "jobs"), quiet=True)
    books = json.loads(Path(result.job_dir, "manifest.json").read_text())["mixture"]["books"]
    assert (books["target_tokens"], books["achieved_tokens"], books["miss_cause"]) == (2000, 0, "no_documents")
    console = Console(record=True, width=400)
    summary(result.stats, result.job_dir, console=console)
    printed = console.export_text()
    assert "warning: mixture books: 0 tokens (0.0%) for a target of 2,000 (50.0%)" in printed
    assert f"output: {result.job_dir}  (shards/, manifest.json, tokenizer.model, documents/, rejects/, stats.json" \
        in printed  # what the folder holds (a job that kept nothing has no documents/)


def test_the_printed_funnel_chains_one_stage_s_out_to_the_next_one_s_in():
    """toxicity judged 88 of fineweb's 144 and 56 went by: it read `in 88 / out 88`, and pii `in 144` after it."""
    from rich.console import Console

    from pipelines.console import funnel_table

    row = {"bytes_in": 0, "seconds": 0.0, "dropped": {}, "skipped": {}}
    stages = [{**row, "stage": "fineweb", "docs_in": 150, "docs_out": 144, "dropped": {"line_punct_ratio": 6}},
              {**row, "stage": "toxicity", "docs_in": 88, "docs_out": 86, "dropped": {"toxic": 2},
               "bypassed": {"language": 56}},
              {**row, "stage": "pii", "docs_in": 142, "docs_out": 142}]
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(funnel_table("t", stages))
    lines = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:5]]
             for line in console.export_text().splitlines() if line.count("│") > 5}
    # the share of those judged says of how many: a stage that judged 4 of 30 and kept none read "0.0" beside 30, 26
    assert lines == {"fineweb": ["150", "144", "96.0"], "toxicity": ["144", "142", "97.7 of 88"],
                     "pii": ["142", "142", "100.0"]}
