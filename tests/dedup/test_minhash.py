"""MinHash signatures against datasketch and exact Jaccard; LSH band choice, recall and pair generation;
the whole fuzzy dedup in one process (`fuzzy_duplicates`): one survivor per near-duplicate group,
identical for any shard order and partition count (what the Ray layer must reproduce)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from datasketch import MinHash
from datasketch.lsh import _optimal_param

from curation.dedup.minhash import (
    MinHasher,
    band_keys,
    band_table,
    bucket_pairs,
    candidate_probability,
    estimated_jaccard,
    exact_jaccard,
    fuzzy_duplicates,
    has_shingles,
    optimal_bands,
    pairs_jaccard,
    shingle_hashes,
    signature_column,
    signatures_from_column,
)
from curation.dedup.minhash_dedup import MinhashDedupParams

VOCAB = [f"w{i}" for i in range(20_000)]


def random_doc(rng: np.random.Generator, words: int = 300) -> list[str]:
    return [VOCAB[i] for i in rng.integers(0, len(VOCAB), words)]


def mutate(rng: np.random.Generator, words: list[str], share: float) -> list[str]:
    """Replace a share of the words with random ones (each edit breaks up to `ngram` shingles)."""
    out = list(words)
    for pos in rng.choice(len(out), int(share * len(out)), replace=False):
        out[pos] = VOCAB[rng.integers(0, len(VOCAB))]
    return out


def test_signatures_equal_datasketch_affine32_bit_for_bit():
    texts = ["The quick brown fox jumps over the lazy dog. " * 5, "two words", "", None, "Größe über Straße, a b c"]
    hasher = MinHasher(num_perm=64, seed=3)
    shingles, sigs = hasher.shingles(texts), hasher.signatures(texts)
    for i in range(len(texts)):
        reference = MinHash(num_perm=64, seed=3, hashfunc=lambda x: x)
        values = (shingles.of(i) & np.uint64(0xFFFFFFFF)).astype(np.uint32).tolist()
        if values:
            reference.update_batch(values)
        assert (reference.hashvalues == sigs[i]).all()
    assert has_shingles(sigs).tolist() == [True, True, False, False, True]
    assert shingles.counts().tolist() == [41, 1, 0, 0, 2]  # a text under 5 words is one shingle of all of them


def test_estimates_track_exact_jaccard_and_datasketch_sha1_estimates():
    rng = np.random.default_rng(1)
    pairs = []
    for share in (0.0, 0.02, 0.05, 0.1, 0.2, 0.4):
        for _ in range(8):
            base = random_doc(rng)
            pairs.append((" ".join(base), " ".join(mutate(rng, base, share))))
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    hasher = MinHasher(num_perm=256)
    estimate = estimated_jaccard(hasher.signatures(a), hasher.signatures(b))
    exact = exact_jaccard(a, b)
    # Reference: datasketch's own per-token path, SHA1 of each 5-gram string.
    theirs = []
    for x, y in pairs:
        m1, m2 = MinHash(num_perm=256), MinHash(num_perm=256)
        for m, text in ((m1, x), (m2, y)):
            w = text.split()
            m.update_batch([" ".join(w[i:i + 5]).encode() for i in range(len(w) - 4)])
        theirs.append(m1.jaccard(m2))
    theirs = np.array(theirs)
    sigma = np.sqrt(exact * (1 - exact) / 256)
    assert (np.abs(estimate - exact) <= 4 * sigma + 0.01).all()
    assert np.abs(estimate - exact).mean() < 0.025
    assert np.abs(theirs - exact).mean() < 0.025
    assert np.abs(estimate - theirs).mean() < 0.035
    assert exact.min() < 0.3 and exact.max() == 1.0  # the pairs span the range


def test_pairs_jaccard_is_exact():
    sets = shingle_hashes(["a b c d e f", "a b c d e g", "x y"], ngram=2).unique_sets()
    got = pairs_jaccard(sets, np.array([0, 0]), np.array([1, 2]))
    assert got.tolist() == [4 / 6, 0.0]


def test_char_shingles():
    shingles = shingle_hashes(["abcd", "ABCD ", "ab", ""], ngram=3, unit="char")
    assert shingles.counts().tolist() == [2, 2, 1, 0]
    assert (shingles.of(0) == shingles.of(1)).all()
    with pytest.raises(ValueError, match="unit"):
        shingle_hashes(["x"], unit="byte")  # type: ignore[arg-type]


@pytest.mark.parametrize(("threshold", "weights"), [(0.5, (0.5, 0.5)), (0.8, (0.5, 0.5)), (0.8, (0.2, 0.8)),
                                                     (0.9, (0.1, 0.9))])
def test_optimal_bands_match_datasketch(threshold, weights):
    assert optimal_bands(threshold, 128, *weights) == _optimal_param(threshold, 128, *weights)


def lsh_pairs(ids: list[str], sigs: np.ndarray, bands: int, rows: int, partitions: int = 1,
              threshold: float | None = None) -> set[tuple[str, str]]:
    """Band rows hash-partitioned by key, `bucket_pairs` per partition: what the Ray shuffle does."""
    table = band_table(ids, band_keys(sigs, bands, rows), sigs if threshold is not None else None)
    keys = table.column("key").to_numpy()
    found = set()
    for p in range(partitions):
        part = table.filter(pa.array(keys % partitions == p))
        out = bucket_pairs(part, threshold=threshold)
        found |= set(zip(out.column("id_a").to_pylist(), out.column("id_b").to_pylist(), strict=True))
    return found


def test_lsh_finds_constructed_near_duplicates():
    rng = np.random.default_rng(5)
    texts, ids, true_pairs = [], [], set()
    for g in range(150):
        base = random_doc(rng)
        variants = [base] + [mutate(rng, base, 0.01) for _ in range(2)]
        group = [f"g{g:03d}v{v}" for v in range(3)]
        texts += [" ".join(v) for v in variants]
        ids += group
        true_pairs |= {(group[i], group[j]) for i in range(3) for j in range(i + 1, 3)}
    texts += [" ".join(random_doc(rng)) for _ in range(300)]
    ids += [f"z{i:03d}" for i in range(300)]
    sigs = MinHasher().signatures(texts)
    index = {d: i for i, d in enumerate(ids)}
    a, b = (np.array([index[p[k]] for p in sorted(true_pairs)]) for k in (0, 1))
    similarity = pairs_jaccard(shingle_hashes(texts).unique_sets(), a, b)  # ~0.90 to the base, ~0.82 between variants
    bands, rows = optimal_bands(0.8, 128)
    found = lsh_pairs(ids, sigs, bands, rows)
    recall = len(found & true_pairs) / len(true_pairs)
    expected = candidate_probability(similarity, bands, rows).mean()  # the S-curve's promise, ~0.8 here
    assert abs(recall - expected) < 0.05
    assert not {p for p in found if p[0].startswith("z")}  # unrelated random documents never collide
    # Bands weighted towards recall (candidates are verified afterwards) find nearly all.
    wide = lsh_pairs(ids, sigs, *optimal_bands(0.8, 128, 0.1, 0.9))
    assert len(wide & true_pairs) / len(true_pairs) >= 0.95
    verified = lsh_pairs(ids, sigs, *optimal_bands(0.8, 128, 0.1, 0.9), threshold=0.7)
    assert verified <= wide and len(verified & true_pairs) >= 0.95 * len(wide & true_pairs)
    # The same pairs whatever the partitioning of the buckets and the order of the rows.
    assert lsh_pairs(ids, sigs, bands, rows, partitions=3) == found
    order = rng.permutation(len(ids))
    assert lsh_pairs([ids[i] for i in order], sigs[order], bands, rows, partitions=2) == found


def test_candidate_probability_is_the_s_curve():
    bands, rows = optimal_bands(0.8, 128)
    p = candidate_probability(np.array([0.5, 0.8, 0.95]), bands, rows)
    assert p[0] < 0.01 and 0.3 < p[1] < 0.6 and p[2] > 0.99


def test_large_buckets_use_anchors_and_stay_connected():
    sigs = np.zeros((200, 128), dtype=np.uint32)  # 200 identical signatures: one bucket per band
    ids = [f"d{i:03d}" for i in range(200)]
    rows = band_table(ids, band_keys(sigs, 2, 4)[:, :1])
    out = bucket_pairs(rows, max_bucket=64, anchors=3)
    assert out.num_rows == 3 * 199 - 3  # each member to the 3 smallest ids, 3 pairs among those
    assert set(out.column("id_a").to_pylist()) == {"d000", "d001", "d002"}
    small = bucket_pairs(band_table(ids[:10], band_keys(sigs[:10], 2, 4)))
    assert small.num_rows == 45


def test_band_keys_are_per_band():
    sigs = np.arange(2 * 128, dtype=np.uint32).reshape(2, 128)
    sigs[1, :8] = sigs[0, :8]  # share band 0 only
    keys = band_keys(sigs, 16, 8)
    assert keys.shape == (2, 16) and keys.dtype == np.uint64
    assert keys[0, 0] == keys[1, 0] and (keys[0, 1:] != keys[1, 1:]).all()
    assert len(np.unique(band_keys(np.zeros((1, 128), np.uint32), 16, 8))) == 16  # band index mixed in
    with pytest.raises(ValueError, match="exceeds"):
        band_keys(sigs, 16, 9)


# --------------------------------------------------------------------------------------------- fuzzy_duplicates


def corpus(seed: int = 11) -> tuple[list[str], list[str], np.ndarray, dict[str, int]]:
    """40 groups of 4 near-copies (~1% of words changed) and 200 unrelated documents."""
    rng = np.random.default_rng(seed)
    ids, texts, group = [], [], {}
    for g in range(40):
        base = rng.integers(0, len(VOCAB), 300)
        for v in range(4):
            words = base.copy()
            if v:
                pos = rng.choice(300, 3, replace=False)
                words[pos] = rng.integers(0, len(VOCAB), 3)
            doc_id = f"{rng.integers(1 << 40):011x}"
            ids.append(doc_id)
            texts.append(" ".join(VOCAB[w] for w in words))
            group[doc_id] = g
    for _ in range(200):
        ids.append(f"{rng.integers(1 << 40):011x}")
        texts.append(" ".join(VOCAB[w] for w in rng.integers(0, len(VOCAB), 300)))
    scores = rng.choice([0.2, 0.5, 0.8], len(ids))
    return ids, texts, scores, group


def test_one_survivor_per_group_with_the_best_score():
    ids, texts, scores, group = corpus()
    removed, pairs = fuzzy_duplicates(ids, texts, scores, settings=MinhashDedupParams(threshold=0.7))
    assert pairs.num_rows > 0
    score = dict(zip(ids, scores, strict=True))
    survivors = set(removed.column("survivor_id").to_pylist())
    assert len(survivors) == 40 and removed.num_rows == 120
    for row in removed.to_pylist():
        assert group[row["id"]] == group[row["survivor_id"]]
        assert (-score[row["survivor_id"]], row["survivor_id"]) < (-score[row["id"]], row["id"])
    clusters = {}
    for row in removed.to_pylist():
        clusters.setdefault(row["cluster"], set()).add(row["survivor_id"])
    assert all(len(s) == 1 for s in clusters.values())


def test_same_survivors_for_any_shard_order_and_partition_count():
    ids, texts, scores, _ = corpus(3)
    reference, _ = fuzzy_duplicates(ids, texts, scores, settings=MinhashDedupParams(threshold=0.8))
    for seed, partitions in ((1, 2), (2, 3), (3, 1)):
        order = np.random.default_rng(seed).permutation(len(ids))
        got, _ = fuzzy_duplicates([ids[i] for i in order], [texts[i] for i in order], scores[order],
                                  settings=MinhashDedupParams(threshold=0.8), n_partitions=partitions)
        assert got.equals(reference)
    estimate, _ = fuzzy_duplicates(ids, texts, scores, settings=MinhashDedupParams(threshold=0.8, verify="estimate"),
                                   n_partitions=2)
    assert set(estimate.column("id").to_pylist()) == set(reference.column("id").to_pylist())


def test_signatures_survive_an_arrow_round_trip():
    sigs = MinHasher(num_perm=16).signatures(["a b c d e f", "x y z"])
    column = signature_column(sigs)
    assert column.type == pa.list_(pa.uint32(), 16)
    assert (signatures_from_column(pa.chunked_array([column])) == sigs).all()
