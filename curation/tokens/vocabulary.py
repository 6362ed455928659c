"""How many pieces a tokenizer's training sample supports, and what becomes of a `vocab_size` it does not.

A sample bounds the vocabulary from both sides:

* **Too small.** sentencepiece gives every character of the alphabet (the commonest characters making up
  `character_coverage` of the sample) a piece of its own, beside the special pieces and the 256 byte pieces of
  byte fallback; a `vocab_size` below that fails training ("Vocabulary size is smaller than required_chars").
  Chinese needs more than a thousand pieces for its alphabet even at 0.98, the least coverage sentencepiece
  takes. Such a size is refused in one line naming `tokenizer.train.vocab_size` and the least size that works
  (sentencepiece's own count): raising it silently would change the model a trainer was configured for.
* **Too large.** A small sample cannot fill a large vocabulary with pieces worth having: sentencepiece runs
  out of pairs to merge ("Vocabulary size too high"), and well before that BPE's last merges join pairs seen
  only twice, so whole phrases of the sample become pieces (64,000 pieces on a few hundred Chinese sentences
  learn 16-character phrases, and the tokens per character of the sample fall far below those of unseen
  text). The rule: a merged piece (not a single character, byte or special piece) that the tokenization of
  the training sample itself uses fewer than `MIN_PIECE_USES` times is memorised; the sample supports the
  largest vocabulary of which such pieces are at most `MEMORISED_SHARE`, found by training again (a search
  by halves between the alphabet's size and the most sentencepiece can make; only where the size asked is
  past it, so a sample that supports its size trains once). Counting the memorised pieces of the size asked
  and taking them off instead lowers far too much: a BPE merge absorbed by a longer memorised piece is
  rarely used itself, though it was common. `benchmarks/tokenizer_vocab.py` measures what the rule costs
  on held-out text: on 4,000 real Chinese comments and 100 English sentences about 9,240 pieces are
  supported whether 16,000 or 64,000 are asked for, at 0.659 tokens per held-out character where 64,000
  pieces give 0.592 (11% fewer tokens, bought with 60,000 pieces its sample uses once or twice, on which that
  sample's own figure falls to 0.241).

`hard_vocab_limit` says which way a too large size goes: `true` (the default) keeps `vocab_size` exact, as a
trainer's embedding is sized by it, so a size sentencepiece cannot make is refused in one line (with the most it
can make and the size the sample supports), and a vocabulary with memorised pieces is kept with a warning;
`false` lowers it to the size the sample supports, with a warning. A too small size is refused either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import sentencepiece as spm

from curation.tokens.coverage import LEAST_COVERAGE

KEY = "tokenizer.train.vocab_size"
MIN_PIECE_USES = 3
MEMORISED_SHARE = 0.05
SIZE_STEP = 64  # the search for the supported size stops within this many pieces (or 1% of them)
_ENCODE_LINES = 20_000  # lines encoded at once: bounds the Python lists of token ids, not the sample
_REQUIRED = re.compile(r"smaller than required_chars\. *(\d+) vs (\d+)")


class VocabularyError(ValueError):
    """A `vocab_size` the sample cannot support, in one line naming the recipe key."""


def too_small(error: RuntimeError, vocab_size: int, character_coverage: float) -> VocabularyError | None:
    """The refusal for sentencepiece's "Vocabulary size is smaller than required_chars" (None for another error)."""
    found = _REQUIRED.search(str(error))
    if not found:
        return None
    least = int(found.group(2))
    lower = " or lower character_coverage" if character_coverage > LEAST_COVERAGE else ""
    msg = (f"{KEY}: {vocab_size:,} is too small for this sample: its alphabet at character_coverage "
           f"{character_coverage:g} and the special and byte pieces take {least:,} pieces; set it to at least "
           f"{least:,}{lower}")
    return VocabularyError(msg)


def piece_uses(sp: spm.SentencePieceProcessor, lines: Iterable[str]) -> np.ndarray:
    """How often the tokenization of `lines` uses each piece (int64, indexed by id)."""
    uses = np.zeros(sp.get_piece_size(), np.int64)
    chunk: list[str] = []

    def count() -> None:
        ids = sp.encode(chunk, out_type=int, num_threads=-1)
        flat = np.fromiter((i for row in ids for i in row), np.int64)
        uses[:] += np.bincount(flat, minlength=len(uses))

    for line in lines:
        chunk.append(line)
        if len(chunk) >= _ENCODE_LINES:
            count()
            chunk = []
    if chunk:
        count()
    return uses


def merged_pieces(sp: spm.SentencePieceProcessor) -> np.ndarray:
    """Which pieces are merges (bool per id): not a special or byte piece, nor one character (with or without
    the word-start mark), which the alphabet needs however rare."""
    return np.array([not (sp.is_byte(i) or sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))
                     and len(sp.id_to_piece(i).removeprefix("\u2581")) > 1 for i in range(sp.get_piece_size())])


def too_many_memorised(memorised: int, pieces: int) -> bool:
    """Whether a vocabulary of `pieces` with `memorised` such pieces is more than its sample supports."""
    return memorised > MEMORISED_SHARE * pieces


@dataclass(frozen=True)
class Sizing:
    """What the sample supports, against what the recipe asked for."""

    requested: int
    possible: int  # the most pieces sentencepiece could make of the sample (<= requested)
    memorised: int  # merged pieces that `possible` pieces' tokenization of the sample uses fewer than MIN_PIECE_USES
    supported: int  # the largest size whose memorised pieces are at most MEMORISED_SHARE of it (<= possible)
    hard_vocab_limit: bool

    def _why(self) -> str:
        parts = []
        if self.possible < self.requested:
            parts.append(f"sentencepiece can make at most {self.possible:,} pieces of it")
        if self.supported < self.possible:
            parts.append(f"{self.memorised:,} of {self.possible:,} pieces are used fewer than {MIN_PIECE_USES} "
                         f"times in its own tokenization (memorised phrases; {self.supported:,} pieces leave at most "
                         f"{MEMORISED_SHARE:.0%} so)")
        return " and ".join(parts)

    def refusal(self) -> VocabularyError | None:
        """With `hard_vocab_limit`, a size sentencepiece cannot make, refused in one line."""
        if not self.hard_vocab_limit or self.possible >= self.requested:
            return None
        msg = (f"{KEY}: {self.requested:,} is more than this sample supports: {self._why()}; set it to at most "
               f"{self.supported:,}, raise sample_bytes, or set hard_vocab_limit: false to lower it so")
        return VocabularyError(msg)

    def warning(self) -> str | None:
        """What was lowered (or, with `hard_vocab_limit`, would be), and why; None where the sample supports it."""
        if self.supported >= self.requested:
            return None
        if self.hard_vocab_limit:
            return (f"{KEY}: {self.requested:,} kept (hard_vocab_limit), but this sample supports about "
                    f"{self.supported:,}: {self._why()}; lower it or raise sample_bytes")
        return f"{KEY}: lowered from {self.requested:,} to {self.supported:,}: {self._why()}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"min_piece_uses": MIN_PIECE_USES, "memorised_share": MEMORISED_SHARE,
                               "warning": self.warning()}
