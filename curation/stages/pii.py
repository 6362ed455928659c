"""PII redaction: e-mail addresses, IP addresses (v4, v6), phone numbers, mainland China resident identity
numbers, payment card numbers and QQ/WeChat handles become placeholders.

Precision first: a placeholder where there was no PII damages the text for good, so every kind is
found by a regex (compiled once) and then confirmed.

- E-mail: a syntactically valid address whose top-level domain is a real one (the Public Suffix
  List shipped by `tld`, which trafilatura's `courlan` installs), so `logo@2x.png` stays; an SSH login
  (`git@github.com:user/repo.git`, `ssh -T git@gitlab.com`, `ssh -i key ec2-user@host`) is no mailbox and stays.
- IP: candidates are confirmed by `ipaddress`; by default (`ip_policy: global`) only globally
  routable unicast addresses are redacted, as in BigCode's StarCoder PII pipeline: private,
  loopback, link-local, shared (CGNAT), documentation, multicast and reserved ranges, and the
  well-known public DNS resolvers, identify no one and are kept (`ip_policy: all` redacts every
  valid address). A dotted quad is not an IP where context says version or section: after
  `v`, `version` (`версии`, `sürüm`, `wersja`... in other languages), `build`, `release`, `firmware`, a
  `Product/` user-agent token, `section`, `§`, `Art.`...; and a quad of single digits (1.2.3.4, an outline
  number) needs a network word nearby (ip, dns, server, host, ping, ...), as BigCode does for short quads.
- Phone: a run of digits and separators with 7-15 digits (E.164 allows at most 15) counts only
  when its shape or context says phone: `+` and a country code; the North American 3-3-4 shape
  with valid area and exchange codes; a national number written `(030) 123456` or `030/123456`;
  or any shape right after a phone word (Tel., phone, Fax, mobile, Handy, téléphone, ☎...).
  Dates, ISBNs, prices, coordinates, long bare numbers and year ranges have none of these; a
  number after `Order #`, `invoice no.`, `ZIP`, `IBAN`... is not a phone number in any shape. Digits of any
  script count (full-width, Arabic-Indic, Persian, Devanagari, Bengali...), judged as their ASCII twins. A
  national number without a phone word counts in the shapes above or as a trunk 0 and space-parted groups of
  10-11 digits (`020 7946 0958`, `01 23 45 67 89`), or hyphenated ones of 9-11 (`0937-141993`, `090-1234-5678`;
  not a US ZIP+4 code, `MA 02110-1301`, the GPL's address).
- Pages in scripts written without spaces glue addresses and numbers to their words (`发送至support@example.com`):
  those letters end an address, a quad or a number as a space does.
- Identity and card numbers by their checksums, QQ numbers and WeChat IDs after their words:
  `curation.text.identifiers`.

References: BigCode's `pii/utils/emails_ip_addresses_detection.py` (StarCoder, Li et al. 2023)
and NeMo Curator's PII modifier (Presidio recognizers for EMAIL_ADDRESS, IP_ADDRESS,
PHONE_NUMBER) - read for their policies, no code taken.
"""

from __future__ import annotations

import functools
import importlib.resources
import ipaddress
import re
import unicodedata
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curation.stages.base import Processed, Resources, Stage, StageParams, with_text
from curation.text.identifiers import find_cards, find_messenger_ids, find_resident_ids

Kind = Literal["email", "ip", "phone", "national_id", "card", "messenger"]
KINDS: tuple[Kind, ...] = ("email", "ip", "phone", "national_id", "card", "messenger")

# Letters of the scripts written without spaces (Han, kana, Hangul, Thai, Lao, Khmer, Burmese, Tibetan): a page in
# them glues an address or a number to the words around it (`发送至support@example.com`, `地址93.184.216.34，`), so
# they end one as a space would, and are no part of one (`至support` was the address's local part).
_UNSPACED = "\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3130-\u318f" \
            "\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = rf"[^\W{_UNSPACED}]"  # a letter, digit or underscore of a script written with spaces
_ALNUM = rf"[^\W_{_UNSPACED}]"
_EMAIL = re.compile(
    rf"(?<!{_WORD}|[.%+-])"
    rf"(?:{_WORD}|[%+-])+(?:\.(?:{_WORD}|[%+-])+)*"  # local part: no leading, trailing or doubled dot
    r"@"
    rf"(?:{_ALNUM}(?:(?:{_ALNUM}|-){{0,61}}{_ALNUM})?\.)+"  # domain labels
    rf"((?:(?!\d){_ALNUM}){{2,24}})"  # top-level domain: letters
    rf"(?!{_WORD}|-|\.{_ALNUM})"
)
# An SSH login is no mailbox, and redacting it breaks the command: git's hosting account (`ssh -T git@gitlab.com`)
# and a login followed by scp's `:path` (`git clone git@github.com:user/repo.git`, `scp f deploy@host.io:/srv`)
_SSH_LOGIN = re.compile(r"git@")
_LOGIN_COMMAND = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh|ssh-copy-id)\b[^\n]{0,80}\s$")  # `ssh -i k ec2-user@host`
_SCP_PATH = re.compile(r":[\w~/.-]")
# a Latin address glued to the words of another script before it (`Пишите наivan@mail.ru`): its local part begins
# where the Latin does
_LATIN_TAIL = re.compile(r"[A-Za-z0-9\u00c0-\u024f._%+-]+$")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"  # ASCII digits: `ipaddress` reads no other
_IPV4 = re.compile(rf"(?<!{_WORD}|\.)(?:{_OCTET}\.){{3}}{_OCTET}(?!{_WORD}|\.\w|-[A-Za-z])")
_IPV6 = re.compile(
    rf"(?<!{_WORD}|[:.])((?:[0-9A-Fa-f]{{0,4}}:){{2,7}}(?:[0-9A-Fa-f]{{1,4}}|(?:[0-9]{{1,3}}\.){{3}}[0-9]{{1,3}})?)"
    rf"(?!{_WORD}|:|\.\w)"
)
_PHONE = re.compile(rf"(?<!{_WORD}|[+/@.,-])(?:\+|[(（]\+?)?\d[\d \u00a0()（）.\/\u2013-]{{5,30}}\d"
                    rf"(?!{_WORD}|[.,]\d|[-\u2013]\d|@)")

_VERSION_BEFORE = re.compile(
    r"(?i)(?:\b(?:v|ver|vers|version|versions|versão|release|rel|build|rev|revision|firmware|fw|bios|"
    r"update|patch|sdk|api|kernel|driver|windows|android|ios|macos|chrome|firefox|safari|python|java|"
    r"section|sec|chapter|chap|ch|art|article|para|paragraph|clause|rule|figure|fig|table|step|item|"
    r"abschnitt|kapitel|ziffer|nr|no|"
    # version in other languages, inflected (версии 5.15.133.1, sürümü, wersji, phiên bản)
    r"верси\w*|версі\w*|sürüm\w*|wersj\w*|versi[oó]n\w*|versione|verze|verzi\w*|versio|phiên bản|"
    r"έκδοση|έκδοσης|εκδοση)\.?\s*[:#=]?\s*|"
    r"(?:גרסה|גרסת|إصدار|الإصدار|الاصدار|نسخه|संस्करण|वर्जन|เวอร์ชัน)\s*[:#=]?\s*|§\s*|[A-Za-z]/|"
    # Chinese, Japanese, Korean words for version and firmware; a system named ...OS or ...UI (HarmonyOS, MIUI)
    r"(?:版本号?|固件(?:版本)?|バージョン|버전)\s*[:：为為是は]?\s*|(?-i:[A-Za-z]*(?:OS|UI))\s+|"
    r"[=<>~!]=\s*)$"  # a requirement's comparison (`numpy==1.26.4.1`)
)
# a Debian changelog's heading: `dpkg (1.15.5.4) unstable; urgency=low`
_CHANGELOG_AFTER = re.compile(r"\)\s+[\w.-]+(?:\s+[\w.-]+)*;\s*urgency=")
_NETWORK_WORDS = re.compile(
    r"(?i)\b(?:ip|ips|ipv4|ip-adresse|address|addresses|addr|adresse|dns|server|servers|host|hostname|ping|"
    r"gateway|router|proxy|subnet|netmask|nameserver|firewall|tcp|udp|ssh|vpn|lan|wan|whois|traceroute)\b"
)
# Well-known public DNS resolvers: infrastructure everyone types into configs, not anyone's address.
_PUBLIC_RESOLVERS = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112", "208.67.222.222",
        "208.67.220.220", "4.2.2.1", "4.2.2.2", "64.6.64.6", "64.6.65.6", "94.140.14.14", "94.140.15.15",
        "76.76.19.19", "8.26.56.26", "8.20.247.20", "2001:4860:4860::8888", "2001:4860:4860::8844",
        "2606:4700:4700::1111", "2606:4700:4700::1001", "2620:fe::fe", "2620:fe::9",
        # China's: 114DNS, AliDNS, DNSPod, Baidu, CNNIC, 360
        "114.114.114.114", "114.114.115.115", "223.5.5.5", "223.6.6.6", "119.29.29.29", "182.254.116.116",
        "180.76.76.76", "1.2.4.8", "210.2.4.8", "101.226.4.6", "218.30.118.6", "2400:3200::1", "2400:3200:baba::1",
        "2402:4e00::",
    )
)  # fmt: skip

_PHONE_WORD_BEFORE = re.compile(
    r"(?i)(?:\b(?:tel|tele|telefon|telephone|telefone|telefono|teléfono|tél|téléphone|phone|phones|ph|fon|"
    r"fone|fax|telefax|mobil|mobile|mob|handy|cell|cellphone|cellulare|celular|cel|móvil|movil|tfno|tlf|telp|"
    r"call|ring|whatsapp|wa|hp|sms|hotline|rufnummer|telefonnummer|numéro|contact|kontakt|kom|komórka|"
    # Russian and Ukrainian (inflected: по телефону), Greek, Vietnamese
    r"тел|телефон\w*|моб|мобильн\w*|факс|τηλ|τηλέφωνο|κιν|κινητό|điện thoại|đt)\b|"
    # words a prefix may join (Arabic's article, Hebrew's prepositions), of Indic scripts (whose vowel signs a word
    # boundary splits), of Chinese, Japanese, Korean and Thai (inside a run of letters): no word boundary before them
    r"هاتف|جوال|موبايل|فاكس|تلفن|تماس|موبائل|فون|טלפון|נייד|פקס|फ़ोन|फोन|मोबाइल|दूरभाष|ফোন|মোবাইল|"
    r"தொலைபேசி|கைபேசி|ఫోన్|电话|電話|手机|手機|座机|座機|传真|傳真|热线|熱線|联系方式|聯繫方式|联系人|拨打|撥打|致电|致電|"
    r"携帯|전화|휴대폰|연락처|문의|팩스|"
    r"โทรศัพท์|โทร|☎|📞|✆)"
    r"[\s.:：#+\-]*(?:(?:(?:number|no|nr|nummer|num|numero|número|номер)\b\.?|नंबर|नम्बर|نمبر|رقم|شماره|מספר|"
    r"号码|號碼|番号|번호)[\s.:：]*)?"
    r"(?:[是为為は은는:：]\s*)?"  # 电话是 138..., 電話番号は 090-..., 번호는 010-...
    r"(?:\([^()]{1,12}\)[\s.:：]*)?$"
)
_NANP = re.compile(r"^(?:\+?1[ .-]?)?(?:\(([2-9]\d\d)\) ?|([2-9]\d\d)([ .-]))[2-9]\d\d([ .-])\d{4}$")
_NATIONAL = re.compile(r"^(?:[(（]0[1-9]\d{0,4}[)）] ?|0[1-9]\d{0,4} ?/ ?)\d[\d \u2013-]*\d$")
# a mainland Chinese mobile number, 1 and a carrier's digit, written whole or 3-4-4 (`138 0013 8000`)
_CN_MOBILE = re.compile(r"^1[3-9]\d(?:(?P<s>[ -]?)\d{4}(?P=s)\d{4})$")
# a trunk 0 and groups parted by spaces only, 10 or 11 digits: how Europe writes its own numbers (`020 7946 0958`,
# `030 12345678`, `01 23 45 67 89`); hyphens are an ISBN's (`0-306-40615-2`)
_TRUNK = re.compile(r"^0[1-9]\d{0,3}(?: \d{2,8}){1,4}$")
# or by hyphens, as East Asia writes them (`0937-141993`, `090-1234-5678`, `02-2345-6789`), groups of 3 digits or more
# after the area code (an ISBN's `0-306-40615-2` starts with a lone 0 and ends with a lone digit); not a US ZIP+4 code
# (`Boston, MA 02110-1301`: the GPL's address, in the header of every file under it)
_TRUNK_HYPHENS = re.compile(r"^0[1-9]\d{0,3}(?:-\d{3,8}){1,2}$")
_ZIP4 = re.compile(r"^\d{5}-\d{4}$")
_DATE = re.compile(  # 2024-01-15, 15.01.2024, 01/15/24, 1990-2000, optionally with a time
    r"^(?:\d{4}[./-]\d{1,2}[./-]\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4} ?[-/] ?\d{2,4})"
    r"(?:[ T]\d{1,2}(?:[:.]\d\d)*)?$"
)
_MONEY_BEFORE = re.compile(r"(?i)(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|jpy|rs|inr)\.?)\s*$")
_MONEY_AFTER = re.compile(
    r"(?i)\s*(?:[$€£¥₹%元円圆員亿万億萬원]|(?:usd|eur|euro|euros|dollars?|gbp|chf|jpy|kr|zł|rmb|cny)\b)")
_COUNTRY = re.compile(r"\+\s?(\d+)")
_BETWEEN = re.compile(r"\s+/\s+|\s+(?=\()")  # where a run of digits may hold two numbers, or a number and a bracket
_COORDINATES = re.compile(r"^[+-]?\d{1,3}\.\d{3,}[,;]?\s*[+-]?\d{1,3}\.\d{3,}$")  # +40.7128 -74.0060: a place
_ISBN_BEFORE = re.compile(r"(?i)\b(?:isbn|issn|ean|doi|isbn-1[03])\b[\s:#-]*$")
_ID_BEFORE = re.compile(  # order, invoice, case, account numbers shaped like phone numbers
    r"(?i)(?:#|\b(?:order|invoice|ref|reference|id|no|nr|art|item|sku|case|ticket|account|acct|kto|iban|blz|"
    r"patent|zip|plz|serial|aktenzeichen|az|rechnung|bestellung|kundennummer)\b\.?|"
    r"订单号?|訂單號?|单号|單號|编号|編號|账号|帳號|帐号|工号|學號|学号|批号|型号|型號)\s*[:#.：-]?\s*$"
)


@functools.lru_cache(maxsize=1)
def top_level_domains() -> frozenset[str] | None:
    """Top-level domains of the Public Suffix List that `tld` ships; None if it is not installed."""
    try:
        resource = importlib.resources.files("tld") / "res" / "effective_tld_names_public_only.dat.txt"
        lines = resource.read_text(encoding="utf-8").splitlines()
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None
    return frozenset(
        line.strip().rsplit(".", 1)[-1].lstrip("*!").lower()
        for line in lines
        if line.strip() and not line.startswith("//")
    )


def find_emails(text: str) -> list[tuple[int, int]]:
    """Spans of e-mail addresses with a real top-level domain, but SSH logins (`_SSH_LOGIN`, `_LOGIN_COMMAND`)."""
    tlds = top_level_domains()
    spans = []
    for m in _EMAIL.finditer(text):
        if tlds is not None and m.group(1).lower() not in tlds:
            continue
        if (_SSH_LOGIN.match(text, m.start()) or _SCP_PATH.match(text, m.end())
                or _LOGIN_COMMAND.search(text, max(0, m.start() - 100), m.start())):
            continue
        start, at = m.start(), text.index("@", m.start())
        local = text[start:at]
        if not local.isascii() and (latin := _LATIN_TAIL.search(local)) and latin.start() > 0:
            start += latin.start()
        spans.append((start, m.end()))
    return spans


def _keep_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, policy: str) -> bool:
    if policy == "all":
        return True
    return ip.is_global and not ip.is_multicast and not ip.is_reserved and ip not in _PUBLIC_RESOLVERS


def find_ips(text: str, policy: str = "global") -> list[tuple[int, int]]:
    """Spans of IPv4 and IPv6 addresses that parse, are not versions or section numbers, and the policy redacts."""
    spans = []
    for m in _IPV4.finditer(text):
        start, end = m.span()
        value = m.group(0)
        line_start = text.rfind("\n", 0, start) + 1
        if _VERSION_BEFORE.search(text, max(line_start, start - 24), start) or _CHANGELOG_AFTER.match(text, end):
            continue
        if all(len(octet) == 1 for octet in value.split(".")):
            window = text[max(0, start - 80) : end + 80]
            if not _NETWORK_WORDS.search(window):
                continue
        if _keep_ip(ipaddress.IPv4Address(value), policy):
            spans.append((start, end))
    for m in _IPV6.finditer(text):
        value = m.group(1)
        # two groups at least: `Oct 25 2000::` is a date before a colon
        if value.count(":") < 2 or not any(c.isdigit() for c in value) or sum(1 for g in value.split(":") if g) < 2:
            continue
        try:
            ip = ipaddress.IPv6Address(value)
        except ValueError:
            continue
        if _keep_ip(ip, policy):
            spans.append(m.span(1))
    return spans


def _is_phone(text: str, start: int, end: int, context: int | None = None) -> bool:
    """Whether `text[start:end]` is a phone number; `context`: where the words that say so end (its start)."""
    value = text[start:end]
    before = start if context is None else context
    digits = sum(c.isdigit() for c in value)
    opened, closed = value.count("(") + value.count("（"), value.count(")") + value.count("）")
    if not 7 <= digits <= 15 or "  " in value or opened != closed or "()" in value:
        return False
    if _DATE.match(value) or _COORDINATES.match(value) or _ISBN_BEFORE.search(text, max(0, before - 12), before):
        return False
    if _MONEY_BEFORE.search(text, max(0, before - 6), before) or _MONEY_AFTER.match(text, end, end + 8):
        return False
    if value.startswith("+"):
        first = _COUNTRY.match(value)
        return digits >= 8 and first is not None and first.group(1)[0] != "0"
    line_start = text.rfind("\n", 0, before) + 1
    if _PHONE_WORD_BEFORE.search(text, max(line_start, before - 40), before):
        return True
    if _ID_BEFORE.search(text, max(line_start, before - 24), before):
        return False
    if _CN_MOBILE.match(value):
        return True
    nanp = _NANP.match(value)
    if nanp:
        separators = {s for s in (nanp.group(3), nanp.group(4)) if s}
        return len(separators) == 1 or nanp.group(1) is not None  # 415-555-2671, (415) 555-2671; not 415.555-2671
    return ((bool(_NATIONAL.match(value)) and 9 <= digits <= 12) or (bool(_TRUNK.match(value)) and 10 <= digits <= 11)
            or (bool(_TRUNK_HYPHENS.match(value)) and 9 <= digits <= 11 and not _ZIP4.match(value)))


_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
_HYPHENS = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2212\ufe63\uff0d", "-"))


def ascii_digits(text: str) -> str:
    """`text` with every script's decimal digits as ASCII ones: one character for one, so its spans are the text's."""
    return _OTHER_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)


def find_phones(text: str) -> list[tuple[int, int]]:
    """Spans of phone numbers: digit runs whose shape or preceding word says phone (see the module doc). A run that is
    none may be two, or one and a bracket after it (`Tel. 030 1234567 / 030 7654321`, `030 1234567 (2019)`): its
    pieces are judged, the later ones by the words before the first."""
    # the shapes below are ASCII's (a trunk `0`): `۰۹۱۲ ۳۴۵ ۶۷۸۹` is `0912 345 6789`, Japanese `03－1234－5678`
    # (full-width hyphens) `03-1234-5678`; one character for one, so the spans are the text's
    text = ascii_digits(text).translate(_HYPHENS)
    spans = []
    for m in _PHONE.finditer(text):
        start, end = m.span()
        if _is_phone(text, start, end):
            spans.append((start, end))
            continue
        pieces, at = [], start
        for gap in _BETWEEN.finditer(text, start, end):
            pieces.append((at, gap.start()))
            at = gap.end()
        pieces.append((at, end))
        if len(pieces) > 1 and _is_phone(text, *pieces[0]):
            spans += [pieces[0], *(piece for piece in pieces[1:] if _is_phone(text, *piece, context=start))]
    return spans


_FINDERS = {"email": find_emails, "phone": find_phones, "national_id": find_resident_ids, "card": find_cards,
            "messenger": find_messenger_ids}


class PiiParams(StageParams):
    redact: list[Kind] = Field(
        default_factory=lambda: list(KINDS),
        description="Kinds of PII to redact: email, ip, phone, national_id (mainland China resident identity numbers), "
        "card (payment card numbers), messenger (QQ numbers and WeChat IDs)."
    )
    placeholders: dict[Kind, str] = Field(
        default_factory=dict,
        description="Replacement per kind (default <EMAIL>, <IP>, <PHONE>, <NATIONAL_ID>, <CARD>, <MESSENGER_ID>)."
    )
    ip_policy: Literal["global", "all"] = Field(
        "global",
        description="global: only globally routable unicast addresses (not private, reserved, documentation, "
        "multicast or public DNS resolvers; BigCode's policy); all: every valid address.",
    )
    max_redactions: int | None = Field(
        None, ge=0, description="Drop documents with more redactions than this (`too_much_pii`); default: never drop."
    )


DEFAULT_PLACEHOLDERS: dict[str, str] = {
    "email": "<EMAIL>", "ip": "<IP>", "phone": "<PHONE>", "national_id": "<NATIONAL_ID>", "card": "<CARD>",
    "messenger": "<MESSENGER_ID>",
}

# Cheap column-wise tests: only rows that could hold a kind go through its Python regex.
_MAY_HOLD = {
    "email": ("@", False),
    "ip": (r"\d\.\d{1,3}\.\d|[0-9A-Fa-f]:[0-9A-Fa-f]{0,4}:", True),
    # any script's digits (full-width ones too), any hyphen (`_HYPHENS`)
    "phone": (r"\p{Nd}[\p{Nd} \x{a0}().\/\x{2010}-\x{2013}\x{2212}\x{fe63}\x{ff0d}-]{5,}\p{Nd}", True),
    "national_id": (r"\d{17}[\dXx]", True),
    "card": (r"\d(?:[ -]?\d){12}", True),
    "messenger": (r"(?i)qq|扣扣|微信|威信|薇信|wechat|weixin|wx|vx", True),
}


class PiiRedaction(Stage):
    """Replace e-mail addresses, IP addresses, phone numbers, identity and card numbers and messenger handles with
    placeholders; never drops by default.

    Tallies per kind (`email`, `ip`, `phone`, `national_id`, `card`, `messenger`) go to stats.json under the stage's
    `counts`.
    """

    name = "pii"
    Params = PiiParams
    resources = Resources(cpus=0.5)
    count_keys = KINDS

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """Non-overlapping (start, end, kind) of the PII to redact, in text order (where two overlap, the
        kind earlier in `KINDS`)."""
        found: list[tuple[int, int, str]] = []
        for kind in KINDS:
            if kind not in self.params.redact:
                continue
            hits = find_ips(text, self.params.ip_policy) if kind == "ip" else _FINDERS[kind](text)
            for start, end in hits:
                if not any(start < e and s < end for s, e, _ in found):
                    found.append((start, end, kind))
        return sorted(found)

    def process(self, batch: pa.Table) -> Processed:
        p = self.params
        placeholders = {**DEFAULT_PLACEHOLDERS, **p.placeholders}
        column = pc.fill_null(batch.column("text"), "")
        candidates = np.zeros(batch.num_rows, dtype=bool)
        for kind in p.redact:
            pattern, is_regex = _MAY_HOLD[kind]
            test = pc.match_substring_regex if is_regex else pc.match_substring
            candidates |= test(column, pattern).to_numpy(zero_copy_only=False)
        counts = {kind: np.zeros(batch.num_rows, dtype=np.int64) for kind in KINDS}
        texts = batch.column("text").to_pylist()
        for i in np.flatnonzero(candidates):
            text = texts[i]
            spans = self.spans(text)
            if not spans:
                continue
            parts, at = [], 0
            for start, end, kind in spans:
                parts += [text[at:start], placeholders[kind]]
                at = end
                counts[kind][i] += 1
            texts[i] = "".join(parts) + text[at:]
        table = with_text(batch, pa.array(texts, pa.string()))
        reasons = pa.nulls(batch.num_rows, pa.string())
        details = None
        if p.max_redactions is not None:
            total = sum(counts.values())
            over = total > p.max_redactions
            reasons = pa.array(np.where(over, "too_much_pii", None), pa.string())
            details = pa.array([None if not over[i] else f"{total[i]} redactions (" + ", ".join(
                f"{kind} {counts[kind][i]}" for kind in KINDS if counts[kind][i]) + "), more than max_redactions "
                f"{p.max_redactions}" for i in range(batch.num_rows)], pa.string())
        return Processed(table, reasons, details, counts=counts)
