"""Numbers that identify a person, found where their checksum or the word before them says so.

- Mainland China's resident identity number (GB 11643-1999): 17 digits and a check character (0-9 or X) of
  ISO 7064 MOD 11-2, whose digits 7-14 are a real birth date and whose first two a province's code. A random run
  of 18 digits passes all three about once in 3,000 times.
- Payment card numbers (ISO/IEC 7812): 13-19 digits that pass the Luhn check and begin as a card network's do
  (Visa 4, Mastercard 51-55 and 2221-2720, American Express 34 and 37, UnionPay 62, Discover 6011 and 65, JCB
  3528-3589, Diners 36 and 38). Luhn passes one random number in ten, so a number counts only when written as cards
  are printed (groups of 4, or Amex's 4-6-5, parted alike by spaces or hyphens) or after a card word (`card`,
  `卡号`, `信用卡`, `Kreditkarte`...) in any shape.
- QQ numbers and WeChat IDs, the contact handles of Chinese pages (`加微信 abc_123`, `QQ号 12345678`): only right
  after their words, as nothing else tells them from other numbers and names.

Presidio's credit-card recognizer (regex and Luhn) and the GB 11643 checksum were read for their rules; no code taken.
"""

from __future__ import annotations

import datetime
import re

# a run of ASCII digits, alone: no digit or Latin letter glued to it (Han glued to it is how Chinese writes it)
_RESIDENT_ID = re.compile(r"(?<![0-9A-Za-z])[1-8]\d{16}[0-9Xx](?![0-9A-Za-z])")
_PROVINCES = frozenset(
    (11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54,
     61, 62, 63, 64, 65, 71, 81, 82, 83)
)  # fmt: skip
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"

_CARD = re.compile(r"(?<![0-9A-Za-z.,/+-])\d(?:[ -]?\d){12,18}(?![0-9A-Za-z]|[.,/-]\d)")
_GROUPED = re.compile(r"^\d{4}(?P<s>[ -])\d{4}(?P=s)\d{4}(?P=s)\d{1,7}$|^\d{4}(?P<a>[ -])\d{6}(?P=a)\d{5}$")
_NETWORKS = re.compile(  # Visa, Mastercard, Amex, UnionPay, Discover, JCB, Diners
    r"^(?:4|5[1-5]|2(?:22[1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)|3[47]|62|6011|65|35(?:2[89]|[3-8]\d)|3[68])"
)
_CARD_WORD_BEFORE = re.compile(
    r"(?i)(?:\b(?:card|cards|credit|debit|visa|mastercard|amex|unionpay|cc|karte|kreditkarte|kartennummer|carte|"
    r"tarjeta|cartão|carta|kaart|карта|карты|карту|номер карты)\b|卡号|卡號|银行卡|銀行卡|信用卡|借记卡|借記卡|储蓄卡|"
    r"儲蓄卡|银联|銀聯|카드|カード)[^\n\d]{0,12}$"
)

# after a colon, 是 or 号 any handle; after the word alone (`加微信abc_123`) one with a digit or an underscore, as
# `WeChat account` or `微信 Android` are words
_SAID = r"(?:[ \t]*(?:号|號|id|ID))?[ \t]*[:：是为為][ \t]*"  # `WeChat ID: x`, `微信号：x`
_QQ = re.compile(r"(?i)(?<![A-Za-z])(?:qq|扣扣)(?:号码|號碼|号|號)?(?:\s*[:：是为為]\s*|\s*)([1-9]\d{4,10})(?!\d)")
# a Latin word is one (`wxWidgets_LIBRARIES`, `__vxworks__` are none) and needs a space before a handle; a handle is on
# its word's line (`if not vx:` then `assert x` on the next is code)
_WECHAT = re.compile(
    rf"(?i)(?:微信|威信|薇信|(?<![A-Za-z0-9_])(?:wechat|weixin|wx|vx)(?=[^A-Za-z0-9_]))(?:{_SAID}"
    r"([A-Za-z][A-Za-z0-9_-]{5,19})|(?:号|號)?[ \t]*((?=[A-Za-z-]*[\d_])[A-Za-z][A-Za-z0-9_-]{5,19}))(?![A-Za-z0-9_-])"
)


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def luhn(number: str) -> bool:
    """Whether a string of digits passes the Luhn check (ISO/IEC 7812-1)."""
    total = 0
    for i, c in enumerate(reversed(number)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def is_resident_id(value: str) -> bool:
    """Whether 18 characters are a valid mainland resident identity number (province, birth date, check)."""
    if len(value) != 18 or not value[:17].isdigit() or int(value[:2]) not in _PROVINCES:
        return False
    try:
        born = datetime.date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    if not 1900 <= born.year <= datetime.date.today().year:
        return False
    check = sum(int(c) * w for c, w in zip(value[:17], _ID_WEIGHTS, strict=True)) % 11
    return _ID_CHECK[check] == value[17].upper()


def find_resident_ids(text: str) -> list[tuple[int, int]]:
    """Spans of mainland China resident identity numbers."""
    return [m.span() for m in _RESIDENT_ID.finditer(text) if is_resident_id(m.group())]


def find_cards(text: str) -> list[tuple[int, int]]:
    """Spans of payment card numbers: Luhn-valid, a network's prefix, printed as cards are or after a card word."""
    spans = []
    for m in _CARD.finditer(text):
        value = m.group()
        number = _digits(value)
        if not (13 <= len(number) <= 19 and _NETWORKS.match(number) and luhn(number)):
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _GROUPED.match(value) or _CARD_WORD_BEFORE.search(text, max(line_start, m.start() - 30), m.start()):
            spans.append(m.span())
    return spans


def find_messenger_ids(text: str) -> list[tuple[int, int]]:
    """Spans of QQ numbers and WeChat IDs right after their words (the handle only, the word kept)."""
    spans = [m.span(1) for m in _QQ.finditer(text)]
    spans += [m.span(1) if m.group(1) else m.span(2) for m in _WECHAT.finditer(text)]
    return sorted(spans)
