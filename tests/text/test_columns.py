"""Column helpers every stage shares."""

from __future__ import annotations

import unicodedata

import pyarrow as pa

from curation.text.columns import normalized


def test_normalized_rewrites_only_the_texts_not_in_the_form_and_keeps_type_and_nulls():
    texts = ["plain", unicodedata.normalize("NFD", "café"), None, "Ｎａｔａｌｉａ", ""]
    for kind in (pa.string(), pa.large_string()):
        out = normalized(pa.array(texts, kind), "NFC")
        assert out.type == kind
        assert out.to_pylist() == ["plain", "café", None, "Ｎａｔａｌｉａ", ""]
    assert normalized(pa.chunked_array([texts[:2], texts[2:]]), "NFKC").to_pylist() == [
        "plain", "café", None, "Natalia", ""]
