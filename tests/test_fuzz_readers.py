"""Every reader on a few hundred mutated real files, and a few dozen whole jobs on them (`tests/support/fuzzing.py`).

Each case is a number: the same number builds the same files, so a failure names its reproducer
(`.venv/bin/python benchmarks/fuzz_readers.py --case N`). A read must end, raise nothing, account for every
record (document, counted skip or reject; the end-of-shard marker counts them), keep no id twice, hold valid
UTF-8 and never bring in what a link points at; a job's `records_read` must equal kept + dropped + skipped with
the ids of `documents/` and `rejects/` disjoint. A share of the cases are `tests/support/fuzz_hostile.py`'s (corrupt
tails in every codec, bad row groups, lying lengths, binary bodies, bad names, NaN), each checked against what it
must give. `benchmarks/fuzz_readers.py` runs tens of thousands.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.support import fuzz_hostile, fuzzing

pytestmark = pytest.mark.timeout(300, method="thread")

CASES_PER_FORMAT = 50
JOBS = 6  # each over one case of every format
BOMB_MIB = 1  # small: a bomb costs seconds per MiB while the reader has no bound on what it inflates


@pytest.fixture(scope="module")
def seeds() -> dict[str, list[fuzzing.Seed]]:
    return fuzzing.load_seeds()


def failures(outcomes: list[fuzzing.Outcome]) -> str:
    return "\n".join(f"{o.case.describe()}:\n  " + "\n  ".join(o.problems) for o in outcomes if o.problems)


@pytest.mark.parametrize("fmt", fuzzing.FORMATS)
def test_a_reader_keeps_its_promises_on_mutated_real_files(seeds, fmt: str, tmp_path: Path):
    if not seeds[fmt]:
        pytest.skip(f"no seed file for {fmt}: ../shared/data (or $CURATION_TESTDATA) is absent")
    numbers = fuzzing.case_numbers(seeds, fmt, CASES_PER_FORMAT)
    outcomes = [fuzzing.read_case(fuzzing.make_case(seeds, n, bomb_mib=BOMB_MIB), tmp_path / str(n)) for n in numbers]
    problems = failures(outcomes)
    assert not problems, problems
    rows = sum((o.rows for o in outcomes), Counter())
    assert rows["document"] > 0 and sum(n for r, n in rows.items() if r not in ("document", "_end_of_shard")) > 0


def test_the_cases_cover_every_kind_of_mutation_and_are_reproducible(seeds):
    described = " ".join(fuzzing.make_case(seeds, n, bomb_mib=BOMB_MIB).describe()
                         for fmt in fuzzing.FORMATS for n in fuzzing.case_numbers(seeds, fmt, CASES_PER_FORMAT))
    for kind in (*fuzzing.BYTE_MUTATIONS, "bomb", "link", "parquet invalid_utf8", "parquet binary_text",
                 "zip symlink entry", "tar member type", "archive: truncate", *fuzz_hostile.KINDS,
                 *(f"tail: {codec}" for codec in fuzz_hostile.CODECS)):
        assert kind in described, kind
    again = fuzzing.make_case(seeds, 12345)
    assert again.files == fuzzing.make_case(seeds, 12345).files and again.mutations


def test_whole_jobs_on_mutated_inputs_add_up(seeds, tmp_path: Path):
    problems = []
    for job in range(JOBS):
        cases = fuzzing.job_cases(seeds, job, bomb_mib=BOMB_MIB)
        found = fuzzing.run_job(cases, tmp_path / f"job{job}")
        problems += [f"job {job} ({'; '.join(c.describe() for c in cases)}): {p}" for p in found]
    assert not problems, "\n".join(problems)
