"""Write `han_forms.json`: the Han characters only Japanese writes and those only Simplified Chinese writes, derived
from OpenCC's tables by `curation.lang.han_script.derive_forms` (a test checks the file against them).

Run from the repository root:  python curation/lang/data/make_han_forms.py
"""

from __future__ import annotations

import json

from curation.lang.han_script import FORMS_FILE, derive_forms

if __name__ == "__main__":
    japanese, simplified = derive_forms()
    FORMS_FILE.write_text(json.dumps({"japanese": japanese, "simplified": simplified}, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    print(f"wrote {FORMS_FILE}: {len(japanese) - 2} Japanese forms, {len(simplified) - 2} Simplified ones")
