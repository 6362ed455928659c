"""Gopher's n-gram repetition statistics against a plain implementation of datatrove's."""

from __future__ import annotations

import random
from collections import Counter

from curation.text.repetition import ngram_repetition
from curation.text.splitter import WordSplitter


def _reference_ngrams(words: list[str], n: int) -> tuple[int, int]:
    """Gopher's n-gram repetition as datatrove 0.10.1 computes it, written plainly; but where no n-gram occurs twice
    the top one is 0 (datatrove: the first n-gram's characters, once)."""
    grams = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
    top = -1
    if grams:
        gram, count = Counter(grams).most_common(1)[0]
        top = len(gram) * count if count > 1 else 0
    seen, dup, i = set(), 0, 0
    while i < len(words) - n + 1:
        gram = tuple(words[i:i + n])
        if gram in seen:
            dup += sum(map(len, gram))
            i += n
        else:
            seen.add(gram)
            i += 1
    return top, dup


def test_ngram_repetition_matches_a_plain_implementation():
    rng = random.Random(7)
    vocabulary = ["a", "bb", "ccc", "dddd", "e", "ff"]
    texts = [" ".join(rng.choice(vocabulary[: rng.randint(1, 6)]) for _ in range(rng.randint(0, 60)))
             for _ in range(200)]
    words = WordSplitter().split(texts)
    sizes = list(range(1, 11))
    top, dup = ngram_repetition(words, sizes, sizes)
    for i, text in enumerate(texts):
        for n in sizes:
            assert (top[n][i], dup[n][i]) == _reference_ngrams(text.split(), n), (text, n)
