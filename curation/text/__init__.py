"""Text as the document stages see it, one module per concern:

- `splitter`: the English word splitter (spaCy-compatible rules) and `Words`, a batch's words as ids;
- `repetition`: repeated lines, paragraphs and word n-grams per document (Gopher's repetition rules);
- `columns`: Arrow text columns to per-document numpy counts (offsets, segment sums, line breaks).

Per-language word segmentation (Chinese, Japanese, Thai...) builds on `splitter` in `curation.lang.words`.
"""
