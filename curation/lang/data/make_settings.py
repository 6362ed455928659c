"""Derive `settings.json` (per-language filter settings for every language lid.176 reads) from
FineWeb-2's published per-language configs.

Run from the repository root:  python curation/lang/data/make_settings.py [FINEWEB2_CONFIG_DIR]
The config folder defaults to `$CURATION_TESTDATA/fineweb2/configs`, else `../shared/data/fineweb2/configs`.

Source: FineWeb-2 (Penedo et al. 2025), https://github.com/huggingface/fineweb-2, `configs/<iso639-3>_<script>.yml`,
Apache-2.0. Each language of lid.176 is mapped to one FineWeb-2 subset (ISO 639-3 + script); for a
macrolanguage, or a lid.176 code that names a group, the first subset of its candidate list that FineWeb-2
has is taken (the main variety: zh -> cmn_Hani, ar -> arb_Arab, ...). A language written in two scripts
(`curation.lang.codes.TWO_SCRIPTS`) also gets the subset of its other script where FineWeb-2 has one
(`other_scripts`: sr -> srp_Latn, uz -> uzn_Cyrl, az -> azj_Cyrl, tt -> tat_Latn). Per-script defaults are the medians
of all FineWeb-2 subsets of that script, for a language without settings of its own.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
from pathlib import Path

import yaml

from curation.lang.codes import TWO_SCRIPTS
from curation.lang.settings import SHORT_LINE, scaled_short_line

# lid.176 label -> FineWeb-2 subsets to try, in order (ISO 639-3 + ISO 15924 script).
LID176_TO_FINEWEB2: dict[str, list[str]] = {
    "en": ["eng_Latn"], "ru": ["rus_Cyrl"], "de": ["deu_Latn"], "fr": ["fra_Latn"], "it": ["ita_Latn"],
    "ja": ["jpn_Jpan"], "es": ["spa_Latn"], "ceb": ["ceb_Latn"], "tr": ["tur_Latn"], "pt": ["por_Latn"],
    "uk": ["ukr_Cyrl"], "eo": ["epo_Latn"], "pl": ["pol_Latn"], "sv": ["swe_Latn"], "nl": ["nld_Latn"],
    "he": ["heb_Hebr"], "zh": ["cmn_Hani"], "hu": ["hun_Latn"], "ar": ["arb_Arab"], "ca": ["cat_Latn"],
    "fi": ["fin_Latn"], "cs": ["ces_Latn"], "fa": ["pes_Arab", "fas_Arab"], "sr": ["srp_Cyrl"], "el": ["ell_Grek"],
    "vi": ["vie_Latn"], "bg": ["bul_Cyrl"], "ko": ["kor_Hang"], "no": ["nob_Latn"], "mk": ["mkd_Cyrl"],
    "ro": ["ron_Latn"], "id": ["ind_Latn"], "th": ["tha_Thai"], "hy": ["hye_Armn"], "da": ["dan_Latn"],
    "ta": ["tam_Taml"], "hi": ["hin_Deva"], "hr": ["hrv_Latn"], "sh": ["hbs_Latn", "srp_Latn", "hrv_Latn"],
    "be": ["bel_Cyrl"], "ka": ["kat_Geor"], "te": ["tel_Telu"], "kk": ["kaz_Cyrl"], "war": ["war_Latn"],
    "lt": ["lit_Latn"], "gl": ["glg_Latn"], "sk": ["slk_Latn"], "bn": ["ben_Beng"], "eu": ["eus_Latn"],
    "sl": ["slv_Latn"], "kn": ["kan_Knda"], "ml": ["mal_Mlym"], "mr": ["mar_Deva"], "et": ["ekk_Latn", "est_Latn"],
    "az": ["azj_Latn", "aze_Latn"], "ms": ["zsm_Latn", "msa_Latn"], "sq": ["als_Latn", "sqi_Latn"],
    "la": ["lat_Latn"], "bs": ["bos_Latn"], "nn": ["nno_Latn"], "ur": ["urd_Arab"], "lv": ["lvs_Latn", "lav_Latn"],
    "my": ["mya_Mymr"], "tt": ["tat_Cyrl"], "af": ["afr_Latn"], "oc": ["oci_Latn"], "nds": ["nds_Latn"],
    "ky": ["kir_Cyrl"], "ast": ["ast_Latn"], "tl": ["tgl_Latn", "fil_Latn"], "is": ["isl_Latn"],
    "ia": ["ina_Latn"], "si": ["sin_Sinh"], "gu": ["guj_Gujr"], "km": ["khm_Khmr"], "br": ["bre_Latn"],
    "ba": ["bak_Cyrl"], "uz": ["uzn_Latn", "uzb_Latn"], "bo": ["bod_Tibt"], "pa": ["pan_Guru"], "vo": ["vol_Latn"],
    "als": ["gsw_Latn"],  # lid.176's "als" is the Alemannic Wikipedia, not Albanian (sq)
    "ne": ["npi_Deva", "nep_Deva"], "cy": ["cym_Latn"], "jbo": ["jbo_Latn"], "fy": ["fry_Latn"],
    "mn": ["khk_Cyrl", "mon_Cyrl"], "lb": ["ltz_Latn"], "ce": ["che_Cyrl"], "ug": ["uig_Arab"], "tg": ["tgk_Cyrl"],
    "sco": ["sco_Latn"], "sa": ["san_Deva"], "cv": ["chv_Cyrl"], "jv": ["jav_Latn"], "min": ["min_Latn"],
    "io": ["ido_Latn"], "or": ["ory_Orya"], "as": ["asm_Beng"], "new": ["new_Deva"], "ga": ["gle_Latn"],
    "mg": ["plt_Latn", "mlg_Latn"], "an": ["arg_Latn"], "ckb": ["ckb_Arab"], "sw": ["swh_Latn", "swa_Latn"],
    "bar": ["bar_Latn"], "lmo": ["lmo_Latn"], "yi": ["ydd_Hebr", "yid_Hebr"], "arz": ["arz_Arab"],
    "mhr": ["mhr_Cyrl"], "azb": ["azb_Arab"], "sah": ["sah_Cyrl"], "pnb": ["pnb_Arab"], "su": ["sun_Latn"],
    "bpy": ["bpy_Beng"], "pms": ["pms_Latn"], "ilo": ["ilo_Latn"], "wuu": ["wuu_Hani"], "ku": ["kmr_Latn"],
    "ps": ["pbt_Arab", "pus_Arab"], "ie": ["ile_Latn"], "xmf": ["xmf_Geor"], "yue": ["yue_Hani"],
    "gom": ["gom_Deva"], "li": ["lim_Latn"], "mwl": ["mwl_Latn"], "kw": ["cor_Latn"], "sd": ["snd_Arab"],
    "hsb": ["hsb_Latn"], "scn": ["scn_Latn"], "gd": ["gla_Latn"], "pam": ["pam_Latn"],
    "bh": ["bho_Deva"],  # "Bihari", a group: Bhojpuri, its largest member
    "mai": ["mai_Deva"], "vec": ["vec_Latn"], "mt": ["mlt_Latn"], "dv": ["div_Thaa"], "wa": ["wln_Latn"],
    "mzn": ["mzn_Arab"], "am": ["amh_Ethi"], "qu": ["quy_Latn", "quz_Latn"], "eml": ["egl_Latn", "eml_Latn"],
    "cbk": ["cbk_Latn"], "tk": ["tuk_Latn"], "rm": ["roh_Latn"], "os": ["oss_Cyrl"], "vls": ["vls_Latn"],
    "yo": ["yor_Latn"], "lo": ["lao_Laoo"], "lez": ["lez_Cyrl"], "so": ["som_Latn"], "myv": ["myv_Cyrl"],
    "diq": ["diq_Latn"], "mrj": ["mrj_Cyrl"], "dsb": ["dsb_Latn"], "frr": ["frr_Latn"], "ht": ["hat_Latn"],
    "gn": ["gug_Latn", "grn_Latn"], "bxr": ["bxr_Cyrl", "bua_Cyrl"], "kv": ["kpv_Cyrl", "kom_Cyrl"],
    "sc": ["srd_Latn", "sro_Latn", "src_Latn"], "nah": ["nah_Latn", "nhe_Latn"], "krc": ["krc_Cyrl"],
    "bcl": ["bcl_Latn"], "nap": ["nap_Latn"], "gv": ["glv_Latn"], "av": ["ava_Cyrl"], "rue": ["rue_Cyrl"],
    "xal": ["xal_Cyrl"], "pfl": ["pfl_Latn"], "dty": ["dty_Deva"], "hif": ["hif_Latn"], "co": ["cos_Latn"],
    "lrc": ["lrc_Arab"], "vep": ["vep_Latn"], "tyv": ["tyv_Cyrl"],
}

# Sentence-ending punctuation of each script, beyond ".!?" (Unicode Sentence_Terminal characters in use
# for it): FineWeb's and C4's "line ends in terminal punctuation" test reads these per document.
BASE_TERMINALS = ".!?"
SCRIPT_TERMINALS: dict[str, str] = {
    "Hani": "。！？．｡", "Jpan": "。！？．｡", "Hang": "。！？",
    "Deva": "।॥", "Beng": "।॥", "Guru": "।॥", "Orya": "।॥", "Gujr": "।॥",
    "Arab": "؟۔؞؛", "Ethi": "።፧፨", "Mymr": "။၊", "Khmr": "។៕", "Tibt": "།༎", "Armn": "։՜՞",
    "Grek": ";", "Thaa": "", "Sinh": "෴", "Laoo": "", "Thai": "", "Hebr": "", "Geor": "", "Cyrl": "", "Latn": "",
    "Taml": "", "Telu": "", "Knda": "", "Mlym": "", "Syrc": "܀܁܂", "Tfng": "", "Cans": "᙮", "Mong": "᠃᠉",
}

# English is not in FineWeb-2 (a non-English corpus): FineWeb's English settings, the same as the stages'
# defaults today (Gopher, Rae et al. 2021, appendix A and table A1; FineWeb, Penedo et al. 2024).
ENGLISH = {
    "fineweb2": None, "script": "Latn",
    "source": "english",
    "reference": "Gopher (Rae et al. 2021, appendix A, table A1) and FineWeb (Penedo et al. 2024): the stages' "
                 "English defaults; stop words: Gopher's eight",
    "language_score": 0.65, "dup_line_frac": 0.3, "line_punct_thr": 0.12, "new_line_ratio": 0.3,
    "char_dup_ratio": 0.01, "min_avg_word_length": 3, "max_avg_word_length": 10, "max_non_alpha_words_ratio": 0.8,
    "dup_n_grams": {"5": 0.15, "6": 0.14, "7": 0.13, "8": 0.12, "9": 0.11, "10": 0.1},
    "top_n_grams": {"2": 0.2, "3": 0.18, "4": 0.16},
    "stop_words": ["the", "be", "to", "of", "and", "that", "have", "with"],
}

# Korean is segmented at spaces here (eojeol: a word with its particles attached), while FineWeb-2's
# kor_Hang stop words are Kiwi morphemes (의, 는, 을...) that a whitespace word never equals: with them the
# stop-word rule drops most clean Korean text. These are frequent eojeol-level function words instead
# (written for this project; FineWeb-2's list is kept as `fineweb2_stop_words`).
KOREAN_EOJEOL_STOP_WORDS = (  # noqa: SIM905 (a list of words reads better as one string)
    "수 있는 것 및 등 그 이 더 또한 있다 하는 한 위해 대한 통해 있습니다 합니다 그리고 때문에 같은 이런 모든 어떤 "
    "다른 많은 할 될 된 되는 가장 함께 그러나 하지만 또 잘 다시 없는 있을 아니라 있고 있어 것이 것을 수도 이번 우리"
).split()

# FineWeb-2's tel_Telu stop words come from Wikipedia's village stubs ("<X> గ్రామం ... మండల కేంద్రం నుండి N
# కి.మీ. దూరంలో ఉంది"): village, headquarters, at a distance, and కి / మీ from కి.మీ. (km). Its four real function
# words (నుండి, ఉన్నాయి, ఉంది, ఈ) and the two postposition / pronoun (కి, మీ) are kept, the three content words
# replaced by frequent function words (and, also, a, that, but, or, for, after, only, not...; written for this
# project). With FineWeb-2's list a quarter of three-sentence windows of real Telugu had two stop words.
TELUGU_STOP_WORDS = (  # noqa: SIM905
    "నుండి కి ఉన్నాయి మీ ఉంది ఈ మరియు కూడా ఒక ఆ అని అనే ఉన్న కానీ లేదా అయితే కోసం తర్వాత చాలా అది ఇది వారు తన "
    "మాత్రమే లేదు కాదు చేసిన ద్వారా గురించి వరకు మీద అతను ఆమె"
).split()

# Stop words written here where FineWeb-2's cannot serve: (words, why), FineWeb-2's kept as `fineweb2_stop_words`.
WRITTEN_STOP_WORDS = {
    "ko": (KOREAN_EOJEOL_STOP_WORDS, "curation (eojeol-level function words); FineWeb-2's are morphemes"),
    "te": (TELUGU_STOP_WORDS, "curation (function words); FineWeb-2's are mostly words of Wikipedia's village stubs"),
}

# What FineWeb-2's pipeline (fineweb-2-pipeline.py) sets alike for every language, beside its configs: the
# FineWeb quality filter's duplicated line characters at 0.1 ("changed from 0.01 in fineweb english").
FINEWEB2_PIPELINE = {"char_dup_ratio": 0.1}

NUMERIC_FIELDS = ("language_score", "dup_line_frac", "line_punct_thr", "new_line_ratio", "min_avg_word_length",
                  "max_avg_word_length", "max_non_alpha_words_ratio")
NGRAM_FIELDS = ("dup_n_grams", "top_n_grams")


def config_dir(argv: list[str]) -> Path:
    if len(argv) > 1:
        return Path(argv[1])
    root = os.environ.get("CURATION_TESTDATA")
    base = Path(root) if root else Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
    return base / "fineweb2" / "configs"


def lingua_languages() -> dict[str, str]:
    """ISO 639-1 -> 639-3 of the languages the langid stage's second opinion (lingua) can output beyond
    lid.176's labels (nb, zu, xh, ...): they get settings too."""
    from lingua import Language

    return {lang.iso_code_639_1.name.lower(): lang.iso_code_639_3.name.lower() for lang in Language.all()}


def settings_of(config: dict) -> dict:
    out = {field: config[field] for field in NUMERIC_FIELDS}
    for field in NGRAM_FIELDS:
        out[field] = {str(n): frac for n, frac in config[field]}
    out["stop_words"] = list(config.get("stopwords") or [])
    return {**out, **FINEWEB2_PIPELINE}


def median_settings(configs: list[dict]) -> dict:
    out = {field: round(statistics.median(c[field] for c in configs), 3) for field in NUMERIC_FIELDS}
    for field in NGRAM_FIELDS:
        ns = sorted({n for c in configs for n, _ in c[field]})
        out[field] = {str(n): round(statistics.median(f for c in configs for m, f in c[field] if m == n), 3)
                      for n in ns}
    out["stop_words"] = []  # no stop words shared by a script: the stop-word rule needs a language
    return {**out, **FINEWEB2_PIPELINE}


def chars_per_word_by_language(folder: Path) -> dict[str, float]:
    """Characters per word of each language with sentences in `folder` (`<code>.txt`, one sentence a line: the
    Leipzig sentences of the test data), words as the filters split them."""
    from curation.lang.words import chars_per_word

    return {p.stem: chars_per_word(p.read_text(encoding="utf-8").splitlines(), p.stem)
            for p in sorted(folder.glob("*.txt"))}


def stop_word_share(text: str, stop_words: list[str]) -> float:
    """The share of a text's words (`\\w+`, lowercased) that are the language's stop words: how much of real text
    they make (the langid stage asks a text labelled by lingua alone for half of it)."""
    words = re.findall(r"\w+", text.lower())
    stops = {w.lower() for w in stop_words}
    return round(sum(w in stops for w in words) / len(words), 4) if words else 0.0


def main(argv: list[str]) -> None:
    folder = config_dir(argv)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 1,929 files in seconds, not half a minute
    configs = {p.stem: yaml.load(p.read_text(encoding="utf-8"), Loader=loader)  # a safe loader
               for p in sorted(folder.glob("*.yml"))}
    if not configs:
        msg = f"no FineWeb-2 configs in {folder}"
        raise SystemExit(msg)
    languages = {}
    for code, candidates in LID176_TO_FINEWEB2.items():
        subset = next((c for c in candidates if c in configs), None)
        script = (subset or candidates[0]).split("_")[1]
        entry = {"fineweb2": subset, "script": script}
        if subset is not None:
            entry.update(settings_of(configs[subset]))
        elif code == "en":
            entry = ENGLISH
        if code in WRITTEN_STOP_WORDS:
            entry["fineweb2_stop_words"] = entry["stop_words"]
            entry["stop_words"], entry["stop_words_source"] = WRITTEN_STOP_WORDS[code]
        iso3 = (subset or candidates[0]).split("_")[0]
        others = {other: f"{iso3}_{other}" for other in TWO_SCRIPTS.get(code, ()) if other != script}
        if found := {other: {"fineweb2": name, **settings_of(configs[name])}
                     for other, name in others.items() if name in configs}:
            entry["other_scripts"] = found  # Serbian in Latin script: srp_Latn's stop words, not srp_Cyrl's
        languages[code] = entry
    for code, iso3 in lingua_languages().items():
        subset = next((name for name in configs if name.split("_")[0] == iso3), None)
        if code not in languages and subset is not None:
            languages[code] = {"fineweb2": subset, "script": subset.split("_")[1], "from": "lingua",
                               **settings_of(configs[subset])}
    sentences = folder.parents[1] / "langid" / "sentences"
    per_word = chars_per_word_by_language(sentences)
    english_per_word = round(per_word.get("en", 0.0), 3)
    for code, entry in languages.items():
        if (path := sentences / f"{code}.txt").is_file() and entry.get("stop_words"):
            entry["stop_word_share"] = stop_word_share(path.read_text(encoding="utf-8"), entry["stop_words"])
        if per_word.get(code) and english_per_word:
            entry["short_line_length"] = scaled_short_line(per_word[code], english_per_word)
            for other in entry.get("other_scripts", {}).values():  # measured in one script, as long in the other
                other["short_line_length"] = entry["short_line_length"]
    by_script: dict[str, list[dict]] = {}
    for name, config in configs.items():
        by_script.setdefault(name.split("_")[1], []).append(config)
    scripts = {}
    for script in sorted({*by_script, *SCRIPT_TERMINALS}):
        pool = by_script.get(script) or list(configs.values())
        measured = [e["short_line_length"] for e in languages.values()
                    if e.get("script") == script and "short_line_length" in e]
        scripts[script] = {
            **median_settings(pool),
            "short_line_length": round(statistics.median(measured)) if measured else SHORT_LINE,
            "terminal_punctuation": BASE_TERMINALS + SCRIPT_TERMINALS.get(script, ""),
            "fineweb2_subsets": len(by_script.get(script, [])),
        }
    data = {
        "source": "FineWeb-2 per-language filter configs, https://github.com/huggingface/fineweb-2 (configs/*.yml)",
        "license": "Apache-2.0 (FineWeb-2); derived by curation/lang/data/make_settings.py",
        "method": "languages: the FineWeb-2 subset each lid.176 label maps to (fineweb2: null where it has none); "
                  "scripts: medians over all FineWeb-2 subsets of the script (all subsets where it has none), "
                  "stop words empty; terminal_punctuation: .!? plus the script's Unicode sentence terminals; "
                  "char_dup_ratio: 0.1 everywhere but English (FineWeb-2's pipeline, fineweb-2-pipeline.py, sets it "
                  "for every language; FineWeb English's is 0.01); short_line_length: FineWeb's 30 characters "
                  "scaled by the language's characters per word over English's on the Leipzig sentences of the test "
                  "data (langid/sentences), its script's median where it has none, 30 without either",
        "fineweb2_configs": len(configs),
        "lid176_labels": len(LID176_TO_FINEWEB2),
        "notes": "language_score is FineWeb-2's minimum GlotLID confidence, not lid.176's; FineWeb-2's word-based "
                 "settings (stop words, word lengths, n-gram fractions) were computed with its own word tokenizers "
                 "(datatrove word_tokenizers.py: spaCy/jieba for zh, spaCy/Sudachi mode A for ja, Kiwi morphemes for "
                 "ko, pythainlp newmm for th, khmer-nltk, laonlp, botok for bo)",
        "english_chars_per_word": english_per_word or None,
        "default": {**median_settings(list(configs.values())), "terminal_punctuation": BASE_TERMINALS,
                    "short_line_length": SHORT_LINE},
        "languages": languages,
        "scripts": scripts,
    }
    out = Path(__file__).with_name("settings.json")
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    missing = sorted(c for c, e in languages.items() if "language_score" not in e)
    print(f"{len(languages)} languages, {len(scripts)} scripts -> {out}; without FineWeb-2 settings: {missing}")


if __name__ == "__main__":
    main(sys.argv)
