"""The C4 rules (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer", section 2.2), as datatrove 0.10.1's C4QualityFilter implements them.

C4 cleans a page line by line and then judges what is left, so this stage both transforms and
drops. Line rules *remove lines* from the text of a kept document:
  - a word longer than `max_word_length` characters,
  - no terminal punctuation (`terminal_punct`: the line must end in . ? ! " or ' and not in ...),
  - fewer than `min_words_per_line` words,
  - the word "javascript" (`javascript`),
  - a cookie/terms-of-use phrase (`policy`; in a document of another language than English, its phrases in
    Chinese, Japanese, Korean, eight European languages, Indonesian, Vietnamese, Turkish, Ukrainian, Arabic,
    Persian, Hindi and Thai too).
Page rules *drop the document*: "lorem ipsum" (`lorem_ipsum`) or a curly bracket (`curly_bracket`)
on a line that survived the earlier line rules (reason: whichever such line comes first), and
fewer than `min_sentences` sentences in the kept lines (`too_few_sentences`; a page whose every
line was removed ends here). Wikipedia-style citations ("[1]", "[edit]", "[citation needed]") are
cut from lines first, and MediaWiki's language-converter markup (`-{km²}-`) unwrapped
(`remove_citations`). Kept documents get the kept lines joined by newlines, a blank line where one parted
paragraphs; dropped ones keep their original text, so `rejects/` shows what was judged.

Languages, where a batch has a `lang` column (see `curation.stages.languages.LanguageParams`): a line
of a language other than English ends in its script's terminal punctuation (`terminal_punctuation` in
`curation.lang.settings`: the ideographic full stop and full-width ! ? for CJK, "।" for Devanagari,
"؟" for Arabic...) or a quote. In a language written without spaces (Chinese, Japanese, Thai...:
`curation.lang.words`), a line's words and their lengths are its segmented words, not whitespace
pieces, and sentences are counted over segmented words; Thai, Lao and Tibetan write no sentence
terminal, so there a space between two pieces ends a sentence (as pythainlp's sentence splitter
mostly does). English is judged exactly as without languages.

Layout (`prose_only`, `curation.text.layout`): an article's code blocks, tables and headings are kept as they are
(indentation too) and judged by no rule: no line of code is removed for its missing full stop, and its curly
brackets drop no page, nor do those of code quoted in a sentence (Markdown's `{}`, or a short quoted span holding one:
"the items field set to '{}'"); nor do they count as
sentences, but for captions ("This is done with the `save()` method:"), which are sentences of the prose. A
paragraph hard-wrapped at a width (`curation.text.layout.wrapped`) is judged as the one line it is: by all its
words and by how its last line ends. A page that is mostly code or tables is judged whole.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.lang.mixed import line_languages
from curation.lang.settings import any_terminal_punctuation
from curation.lang.words import SPACES, segmenters
from curation.stages.base import Resources, first_reason
from curation.stages.languages import CLOSERS_RE2, LANG, LanguageFilter, LanguageParams, line_ends, words_of
from curation.text.columns import (
    LINE_BREAK_RE2,
    as_array,
    list_offsets,
    re2_class,
    segment_sum,
    split_whitespace,
    whitespace_words,
)
from curation.text.layout import CAPTION, line_kinds, set_aside, without_inline_code, wrapped

CITATION_RE2 = r"\[\p{Nd}*\]|\[edit\]|\[citation needed\]"
# MediaWiki's language-converter markup, `-{text}-` (text shown as written, not converted to another script),
# left in text taken from Serbian and Chinese Wikipedia: unwrapped, it is no curly bracket of code. Variant
# lists (`-{zh-hans:...;zh-hant:...}-`) are left as they are.
CONVERTER_RE2 = r"-\{([^{}:;]*)\}-"
POLICY_RE2 = "terms of use|privacy policy|cookie policy|uses cookies|use of cookies|use cookies"
# The same phrases in the languages of the crawls curated beside English, for lines of documents in a language other
# than English (English is judged as C4 judges it): the banners and footers C4 meant, which English words miss.
POLICY_OTHER_RE2 = "|".join((
    r"隐私政策|隱私政策|隐私权政策|隱私權政策|使用条款|使用條款|服务条款|服務條款",  # zh
    r"使用\s*cookies?|cookies?\s*政策",
    r"プライバシーポリシー|利用規約|クッキーポリシー|cookie\s*ポリシー|(?:cookie|クッキー)を使用",  # ja
    r"개인정보\s*처리\s*방침|개인정보\s*취급\s*방침|이용\s*약관|쿠키\s*정책|쿠키를\s*사용",  # ko
    r"datenschutzerklärung|nutzungsbedingungen|cookie-richtlinie|(?:verwendet|verwenden|nutzt|nutzen) cookies",  # de
    r"politique de confidentialité|conditions (?:générales )?d.utilisation|politique (?:relative aux |des )cookies"
    r"|(?:utilise|utilisons) des cookies",  # fr
    r"política de privacidad|términos de uso|condiciones de uso|política de cookies|(?:utiliza|utilizamos|usa|usamos)"
    r" cookies|uso de cookies",  # es
    r"política de privacidade|termos de uso|política de cookies|(?:utiliza|utilizamos) cookies",  # pt
    r"informativa (?:sulla )?privacy|termini (?:e condizioni )?d.uso|termini di utilizzo|(?:utilizza|utilizziamo|usa)"
    r" (?:i )?cookie",  # it
    r"политика конфиденциальности|пользовательское соглашение|условия использования|политика (?:использования )?"
    r"(?:файлов )?cookie|(?:использует|используем|использование) (?:файл(?:ы|ов) )?cookie",  # ru
    r"polityka prywatności|warunki korzystania|polityka cookies|(?:używa|używamy|wykorzystuje) (?:plików )?cookies?",
    r"privacybeleid|privacyverklaring|gebruiksvoorwaarden|cookiebeleid|(?:gebruikt|gebruiken) cookies",  # nl
    r"kebijakan privasi|syarat dan ketentuan|kebijakan cookie|menggunakan cookie|dasar privasi",  # id, ms
    r"chính sách bảo mật|điều khoản sử dụng|sử dụng cookie",  # vi
    r"sera ya faragha|masharti ya matumizi|(?:inatumia|tunatumia) vidakuzi",  # sw
    r"patakaran sa privacy|mga tuntunin ng paggamit|gumagamit (?:ang site na ito|kami) ng cookies?",  # tl
    r"ń lo kúkì|ìlànà ìpamọ́",  # yo
    r"gizlilik politikası|kullanım koşulları|çerez politikası|çerezler(?:i)? kullan",  # tr
    r"політика конфіденційності|умови використання|(?:використовує|використовуємо) (?:файли )?cookie",  # uk
    r"سياسة الخصوصية|شروط الاستخدام|ملفات تعريف الارتباط|حریم خصوصی|شرایط استفاده",  # ar, fa
    r"गोपनीयता नीति|उपयोग की शर्तें|कुकीज़ का उपयोग|นโยบายความเป็นส่วนตัว|ข้อกำหนดการใช้งาน|ใช้คุกกี้",  # hi, th
))
LINE_RULES = ("long_word", "no_terminal_punct", "few_words", "javascript", "policy")
_ENGLISH_TERMINAL_RE2 = r"[.?!\"']$"
_ANY_TERMINAL_RE2 = re2_class(any_terminal_punctuation() + "\"'") + CLOSERS_RE2 + "$"
_SPACE_ENDS_SENTENCE = frozenset({"th", "lo", "bo"})  # segmenters of scripts without a sentence terminal


class C4(LanguageFilter):
    """C4's line cleaning and page rules (see the module docstring for what each key does).

    Drops: `lorem_ipsum`, `curly_bracket`, `too_few_sentences`. Counts removed lines per rule
    (`lines_long_word`, `lines_no_terminal_punct`, `lines_few_words`, `lines_javascript`,
    `lines_policy`; blank lines are not counted). Sentences are counted as datatrove does, with
    spaCy's sentencizer rule over spaCy English words (`curation.text.splitter`). Per language: the terminal
    punctuation (`terminal_punctuation`), segmented words where a language has no spaces (module doc).
    """

    name = "c4"
    explained: ClassVar[dict[str, str | tuple[str, ...]]] = {
        "lorem_ipsum": "'lorem ipsum' in the text", "curly_bracket": "a curly bracket, { or }, in the text judged"}
    resources = Resources(cpus=1.0)
    # No `fallback_language` here: its only per-language setting is the terminal punctuation, and the
    # Gopher and FineWeb stages of the same chain count the documents judged by fallback settings.
    size_scores: ClassVar[tuple[str, ...]] = ("c4_sentences", "c4_lines_kept", "c4_lines_removed")
    count_keys: ClassVar[tuple[str, ...]] = tuple(f"lines_{rule}" for rule in LINE_RULES)
    output_columns: ClassVar[dict[str, pa.DataType]] = {
        "c4_sentences": pa.int64(),
        "c4_lines_kept": pa.int64(),
        "c4_lines_removed": pa.int64(),
    }

    class Params(LanguageParams):
        terminal_punct: bool = Field(
            True, description="Remove lines not ending in terminal punctuation (C4: on; FineWeb turned it off, "
            "finding that it alone removed ~30% of tokens). Other languages than English end lines in their "
            "script's terminals (`languages: {xx: {terminal_punctuation: ...}}` to change them).")
        min_words_per_line: int | None = Field(
            3, ge=1, description="Remove lines with fewer whitespace-separated words (C4: 3); segmented words "
            "for languages written without spaces.")
        min_sentences: int | None = Field(
            5, ge=1, description="Drop documents with fewer sentences after line removal (C4: 5).")
        max_word_length: int | None = Field(
            1000, ge=1, description="Remove lines with a longer word (C4's reference code, c4_utils.py: 1000).")
        lorem_ipsum: bool = Field(True, description="Drop documents containing \"lorem ipsum\" (C4).")
        javascript: bool = Field(True, description="Remove lines containing \"javascript\" (C4).")
        curly_bracket: bool = Field(True, description="Drop documents containing \"{\" (C4).")
        policy: bool = Field(
            True, description="Remove lines with terms-of-use/privacy/cookie phrases (C4's reference code; in a "
            "document of another language, also the same phrases in Chinese, Japanese, Korean, German, French, "
            "Spanish, Portuguese, Italian, Russian, Polish, Dutch, Indonesian, Malay, Vietnamese, Turkish, Ukrainian, "
            "Arabic, Persian, Hindi and Thai).")
        remove_citations: bool = Field(
            True, description="Cut [1], [edit], [citation needed] from lines (C4's reference code), and unwrap "
            "MediaWiki's language-converter markup -{...}- (Serbian and Chinese Wikipedia text).")

    def score(self, batch: pa.Table) -> dict[str, np.ndarray]:
        return self.scores_and_text(batch)[0]

    def scores_and_text(self, batch: pa.Table) -> tuple[dict[str, np.ndarray], pa.Array]:
        """Scores per document and the cleaned text (kept lines joined by newlines)."""
        p = self.params
        text = as_array(batch.column("text"))
        langs = self.languages_of(batch)
        lines = pc.split_pattern_regex(text, LINE_BREAK_RE2)
        offsets = list_offsets(lines)
        n_docs = len(offsets) - 1
        line_doc = np.repeat(np.arange(n_docs), np.diff(offsets))
        original = lines.flatten()
        stripped = pc.utf8_trim_whitespace(original)
        # code, tables and headings of an article: kept as they are, judged by no line or page rule
        kinds_of_lines = line_kinds(original, offsets) if p.prose_only else np.zeros(len(original), np.int8)
        aside = set_aside(original, offsets, kinds_of_lines) if p.prose_only else np.zeros(len(original), bool)
        words = split_whitespace(stripped)
        n_words = whitespace_words(stripped)  # a blank line is one empty piece, no word
        blank = n_words == 0
        long_word = np.zeros(len(n_words), bool)
        if p.max_word_length is not None and len(n_words):
            too_long = pc.greater(pc.utf8_length(words.flatten()), p.max_word_length).to_numpy(zero_copy_only=False)
            long_word = segment_sum(too_long.astype(np.int64), list_offsets(words)) > 0
        line_lang = line_languages(batch, lines)  # a line of another language is its own language's words
        doc_lang = batch.column(LANG).take(pa.array(line_doc, pa.int64())) if LANG in batch.column_names else None
        own_lines = None  # lines in their document's language (None: all of them)
        if line_lang is None:
            line_lang = doc_lang
        elif doc_lang is not None:
            own_lines = pc.fill_null(pc.equal(line_lang, doc_lang.cast(pa.string())), True).to_numpy(
                zero_copy_only=False)
        line_kind = segmenters(original, line_lang) if line_lang is not None else np.full(len(original), SPACES)
        unspaced = np.flatnonzero(line_kind != SPACES)
        if len(unspaced):
            n_words[unspaced], longest = _segmented_lines(stripped.take(pa.array(unspaced)),
                                                          line_lang.take(pa.array(unspaced)))
            if p.max_word_length is not None:
                long_word[unspaced] = longest > p.max_word_length
        line = stripped
        if p.remove_citations:
            line = pc.replace_substring_regex(pc.replace_substring_regex(line, CITATION_RE2, ""), CONVERTER_RE2, r"\1")

        def has(pattern: str, regex: bool = False, ignore_case: bool = True, text: pa.Array = line) -> np.ndarray:
            match = pc.match_substring_regex if regex else pc.match_substring
            return match(text, pattern, ignore_case=ignore_case).to_numpy(zero_copy_only=False)

        no_punct = np.zeros(len(n_words), bool)
        if p.terminal_punct:
            ends = line_ends(line, langs, line_doc, _ENGLISH_TERMINAL_RE2, also="\"'")
            if own_lines is not None and (other := np.flatnonzero(~own_lines)).size:  # a line of another language
                ends[other] = pc.match_substring_regex(line.take(pa.array(other)), _ANY_TERMINAL_RE2).to_numpy(
                    zero_copy_only=False)
            no_punct = ~ends | has(r"\.\.\.$", regex=True)
        few = n_words < (p.min_words_per_line or 0)
        if p.prose_only:  # a hard-wrapped paragraph is judged whole: by its last line's end and all its words
            few, no_punct = _by_paragraph(wrapped(original, offsets, kinds_of_lines), n_words, few, no_punct,
                                          p.min_words_per_line or 0)
        eligible = ~long_word & ~no_punct & ~few & ~aside
        lorem = eligible & has("lorem ipsum") if p.lorem_ipsum else np.zeros_like(eligible)
        js = eligible & ~lorem & has("javascript") if p.javascript else np.zeros_like(eligible)
        # a curly bracket in inline code (`{}`, '{}') is code quoted in a sentence, not a page of code
        prose_of_line = without_inline_code(line) if p.prose_only else line
        curly = (eligible & ~lorem & ~js & has("{", ignore_case=False, text=prose_of_line) if p.curly_bracket
                 else np.zeros_like(eligible))
        policy = np.zeros_like(eligible)
        if p.policy:
            policy = has(POLICY_RE2, regex=True)
            if (other := ~langs.own[line_doc]).any():
                policy |= other & has(POLICY_OTHER_RE2, regex=True)
            policy &= eligible & ~lorem & ~js & ~curly
        kept = (eligible & ~lorem & ~js & ~curly & ~policy) | aside

        page_rule = np.zeros(n_docs, np.int64)  # 1: lorem ipsum first, 2: curly bracket first
        hits = np.flatnonzero(lorem | curly)
        if len(hits):
            docs, first = np.unique(line_doc[hits], return_index=True)
            page_rule[docs] = np.where(lorem[hits[first]], 1, 2)

        kept_lines = (pc.if_else(pa.array(aside), original, line) if aside.any() else line).filter(pa.array(kept))
        kept_offsets = np.concatenate([[0], np.cumsum(segment_sum(kept.astype(np.int64), offsets))])
        sentences = np.zeros(n_docs, np.int64)
        if p.min_sentences is not None and len(kept_lines):
            kept_index = pa.array(np.flatnonzero(kept))
            kept_langs = line_lang.take(kept_index) if line_lang is not None else None
            per_line = _sentences_per_line(kept_lines, kept_langs)
            by_space = np.flatnonzero(np.isin(line_kind[kept], list(_SPACE_ENDS_SENTENCE)))
            if len(by_space):
                per_line[by_space] = np.maximum(whitespace_words(kept_lines.take(pa.array(by_space))), 1)
            per_line[(aside & (kinds_of_lines != CAPTION))[kept]] = 0  # a caption is a sentence of the prose
            sentences = segment_sum(per_line, kept_offsets)
        judged = ~blank & ~aside
        removed = {
            "long_word": long_word & judged,
            "no_terminal_punct": ~long_word & no_punct & judged,
            "few_words": ~long_word & ~no_punct & few & judged,
            "javascript": js,
            "policy": policy,
        }
        scores = {
            "c4_sentences": sentences,
            "c4_lines_kept": np.diff(kept_offsets),
            "c4_lines_removed": segment_sum((~kept & ~blank).astype(np.int64), offsets),
            "_page_rule": page_rule,
            **{f"_lines_{rule}": segment_sum(mask.astype(np.int64), offsets) for rule, mask in removed.items()},
        }
        # a blank line parts paragraphs, no line to judge: one stays between kept lines it parted (C4 joined the kept
        # lines by single newlines, a page's paragraphs run together)
        written = _with_paragraph_breaks(kept, blank & ~aside, line_doc)
        text_lines = (pc.if_else(pa.array(aside), original, line) if aside.any() else line).filter(pa.array(written))
        text_offsets = np.concatenate([[0], np.cumsum(segment_sum(written.astype(np.int64), offsets))])
        text_lists = pa.ListArray.from_arrays(pa.array(text_offsets, pa.int32()), text_lines)
        joined = pc.binary_join(text_lists, pa.scalar("\n", text_lines.type))
        return scores, pc.utf8_trim_whitespace(joined)

    def keep(self, scores: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        rule = scores["_page_rule"]
        rules = [(rule == 1, "lorem_ipsum"), (rule == 2, "curly_bracket")]
        if p.min_sentences is not None:
            rules.append((scores["c4_sentences"] < p.min_sentences, "too_few_sentences"))
        return first_reason(len(rule), rules)


def _with_paragraph_breaks(kept: np.ndarray, blank: np.ndarray, line_doc: np.ndarray) -> np.ndarray:
    """The lines written: the kept ones, and a blank line after a kept line of its document where blank lines or
    removed ones follow it (one for a run of them; one before the first kept line or after the last is none)."""
    candidates = np.flatnonzero(kept | blank)
    is_blank, doc = blank[candidates], line_doc[candidates]
    first = np.concatenate([[True], doc[1:] != doc[:-1]])
    after_blank = np.concatenate([[True], is_blank[:-1]]) | first
    written = np.zeros(len(kept), bool)
    written[candidates[~is_blank | ~after_blank]] = True
    return written


def _by_paragraph(goes_on: np.ndarray, n_words: np.ndarray, few: np.ndarray, no_punct: np.ndarray,
                  min_words: int) -> tuple[np.ndarray, np.ndarray]:
    """`few` and `no_punct` of every line of a hard-wrapped paragraph (`goes_on`: a line continued by the next)
    replaced by the paragraph's: its words summed, its last line's end."""
    if not goes_on.any():
        return few, no_punct
    last = np.flatnonzero(~goes_on)  # every paragraph ends on a line that does not go on
    paragraph_end = last[np.searchsorted(last, np.arange(len(goes_on)))]
    starts = np.concatenate([[True], ~goes_on[:-1]])
    paragraph = np.cumsum(starts) - 1
    words = np.bincount(paragraph, weights=n_words)[paragraph]
    return words < min_words, no_punct[paragraph_end]


def _segmented_lines(lines: pa.Array, langs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Words (punctuation marks not counted) and longest word of lines of languages written without spaces."""
    words = words_of(pa.table({"text": lines, LANG: langs}), as_array(lines))
    wordlike = 1 - words.feature("symbol")
    longest = np.zeros(len(words.counts), np.int64)
    if len(words.ids):
        np.maximum.at(longest, words.doc_index, words.feature("length"))
    return segment_sum(wordlike, words.offsets), longest


def _sentences_per_line(lines: pa.Array, langs: pa.Array | None = None) -> np.ndarray:
    """Sentences of every line by spaCy's sentencizer rule: a new sentence starts at the first
    ordinary word after a sentence terminal ("." "!" "?", ...), punctuation in between allowed.
    `langs`: each line's language (its words are then its language's)."""
    words = words_of(pa.table({"text": lines} if langs is None else {"text": lines, LANG: langs}), as_array(lines))
    role = words.feature("role")
    starts = words.offsets[:-1]
    n = len(role)
    if n == 0:
        return np.zeros(len(starts), np.int64)
    index = np.arange(n)
    ordinary = (role == 0) | (role == 3)  # role 3: a word with its sentence terminal attached
    last_word = np.maximum.accumulate(np.where(ordinary, index, -1))
    last_end = np.maximum.accumulate(np.where((role == 2) | (role == 3), index, -1))
    line_start = np.repeat(starts, words.counts)
    before = np.maximum(index - 1, 0)
    new_sentence = (ordinary & (index > line_start) & (last_end[before] >= line_start)
                    & (last_end[before] >= last_word[before]))
    return (words.counts > 0).astype(np.int64) + segment_sum(new_sentence.astype(np.int64), words.offsets)
