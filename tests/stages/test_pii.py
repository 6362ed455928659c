"""PII redaction: e-mail, IP and phone placeholders, counts, and the traps that must stay untouched."""

from __future__ import annotations

import pytest

from curation import schema
from curation.apply import run_stage
from curation.schema import documents_table
from curation.stages.pii import PiiRedaction, find_phones


def redact(text: str, **params: object) -> str:
    return run_stage(PiiRedaction(**params), documents_table([text])).column("text")[0].as_py()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Write to jane.doe+news@mail.example.co.uk today.", "Write to <EMAIL> today."),
        ("Mail deploy@example.com: it answers.", "Mail <EMAIL>: it answers."),  # a colon then a space: no scp path
        ("電話：03－1234－5678、携帯 090‑1234‑5678", "電話：<PHONE>、携帯 <PHONE>"),  # full-width, non-breaking hyphens
        ("<a href='mailto:Max.Müller@gmx.de'>", "<a href='mailto:<EMAIL>'>"),
        ("contact: info@exämple.de.", "contact: <EMAIL>."),
        ("Server at 93.184.216.34, port 80", "Server at <IP>, port 80"),
        ("http://203.0.114.7:8080/admin", "http://<IP>:8080/admin"),
        ("ping 1.2.3.4 failed", "ping <IP> failed"),  # a short quad with a network word
        ("IPv6 2a00:1450:4001:80b::200e works", "IPv6 <IP> works"),
        ("[2606:2800:220:1:248:1893:25c8:1946]:443", "[<IP>]:443"),
        ("Call +49 30 12345678 now", "Call <PHONE> now"),
        ("Ruf an: +44 20 7946 0958.", "Ruf an: <PHONE>."),
        ("Office (415) 555-2671 or 415-555-2671", "Office <PHONE> or <PHONE>"),
        ("toll free 1-800-555-0199", "toll free <PHONE>"),
        ("Tel.: 030 12345678, Fax 030/1234567", "Tel.: <PHONE>, Fax <PHONE>"),
        ("Telefon (089) 123 456-78", "Telefon <PHONE>"),
        ("☎ 06 12 34 56 78", "☎ <PHONE>"),
        # national numbers after "or": a trunk 0 and space-parted groups (they stayed where the + form went)
        ("Ring +44 20 7946 0958 or 020 7946 0958.", "Ring <PHONE> or <PHONE>."),
        ("Appelez le 01 23 45 67 89 ou +33 1 23 45 67 89.", "Appelez le <PHONE> ou <PHONE>."),
        ("聯絡電話：03-584-7231\u3000行動: 0937-141993", "聯絡電話：<PHONE>\u3000行動: <PHONE>"),  # hyphens, as Asia
    ],
)
def test_pii_is_redacted(text: str, expected: str):
    assert redact(text) == expected


TRAPS = [
    "Released as version 10.0.0.1 and v1.2.3.4, build 4.0.30319.1",
    "Mozilla/5.0 Chrome/120.0.0.0 Safari/537.36",
    "See section 4.1.2.3 and § 1.2.3.4; table 2.1.1.4",
    "Outline item 1.2.3.4 of the plan",  # a short quad without a network word
    "Dates 2024-01-15, 15.01.2024, 01/15/2024 and 2024/01/15 10:30",
    "ISBN 978-3-16-148410-0 and ISBN 0-306-40615-2, cited 0-306-40615-2",
    "Price $1,299.99 or 1.299,00 € or EUR 12 345 678",
    "Serial 12345678901234 and order 4839201",
    "Coordinates 52.5200, 13.4050 and 40.7128 -74.0060, Lat/long +40.7128 -74.0060, GPS: +51.5074 -0.1278",
    "Years 1990-2000, 2000 - 2010 and 1914/1918",
    "Times 12:30:45, 10:15 and the ratio 3:2:1",
    "C++ std::vector, Python a[1::2], and hex dead::beef",
    "Retina logo@2x.png and icon@3x.jpg, user@localhost, @handle",
    "Private 192.168.1.1, 10.0.0.1, 127.0.0.1, 172.16.5.4, fe80::1, 2001:db8::1",
    "Public resolvers 8.8.8.8 and 1.1.1.1 in the DNS settings",
    "Broadcast 255.255.255.255 and netmask 255.255.255.0",
    "MAC 00:1A:2B:3C:4D:5E",
    "Score 3 - 1, pages 123-456, population 8 336 817",
    "Bank code 370 400 44, a card number that fails Luhn 4111 1111 1111 1112",
    "Tracking 4111111111111111 shipped, EAN 4006381333931, 16 digits 1234 5678 9012 3456",  # no card word, no Luhn
    "订单号 110105194912310029, 编号 990105194912310021",  # 18 digits, a wrong check and no province
    "QQ 2013 版本, QQ群 123456, QQ音乐 10000 首; WeChat account, 微信 Android 版, wx-small",
    "系统版本为HarmonyOS 4.0.0.126, 固件版本4.0.0.126, MIUI 12.5.1.0 稳定版",  # versions, not addresses
    "DNS服务器设置为114.114.114.114或223.5.5.5, 备用119.29.29.29",  # China's public resolvers, as Google's
    "总额15000000000元, 订单号13800138000, 编号 13912345678",  # money and order numbers shaped as mobiles
    "Order #415-555-2671, invoice no. 212-555-0148, ZIP 94043-1351, SSN-like 123-45-6789",
    # SSH logins are no mailboxes: redacted, the commands no longer ran
    "git clone git@github.com:user/repo.git, then ssh -T git@gitlab.com; scp app.tar deploy@example.com:/srv/app",
    # versions said in other languages
    "ядро WSL стало версии 5.15.133.1; Yeni sürüm 1.2.3.4, DNS olarak; wersja 10.0.19045.3693; phiên bản 2.0.1.5",
    # the GPL's address (a ZIP+4 code), a login to a host, versions of requirements and changelogs, a date and `::`
    "51 Franklin Street, Fifth Floor, Boston, MA 02110-1301 USA; ssh -i key.pem ec2-user@ec2.example-host.com",
    "numpy==1.26.4.1, pip>=20.0.2.1\ndpkg (1.15.5.4) unstable; urgency=low\nBuilt Oct 25 2000:: ok",
    # identifiers holding WeChat's `wx` and `vx`, and code after `vx:` on the next line
    "find_package(wxWidgets) ${wxWidgets_LIBRARIES} __vxworks__\nif not vx:\n    assert x_value",
]


@pytest.mark.parametrize("text", TRAPS)
def test_false_positive_traps_stay_untouched(text: str):
    assert redact(text) == text


def test_counts_per_kind_and_never_drops():
    texts = [
        "a@b.example.org and c@d.example.org, call +1 415 555 2671",
        "nothing to see",
        None,
        "server 93.184.216.34",
    ]
    out = run_stage(PiiRedaction(), documents_table(texts))
    assert out.column(schema.REASON).to_pylist() == [None] * 4
    assert out.column("text").to_pylist() == [
        "<EMAIL> and <EMAIL>, call <PHONE>",
        "nothing to see",
        None,
        "server <IP>",
    ]
    counts = {k: out.column(schema.count_column("pii", k)).to_pylist() for k in ("email", "ip", "phone")}
    assert counts == {"email": [2, 0, 0, 0], "ip": [0, 0, 0, 1], "phone": [1, 0, 0, 0]}


def test_kinds_placeholders_policy_and_drop_option():
    text = "mail x@y.com, ip 93.184.216.34, lan 192.168.0.1, tel +49 30 1234567"
    assert redact(text, redact=["email"]) == "mail <EMAIL>, ip 93.184.216.34, lan 192.168.0.1, tel +49 30 1234567"
    assert redact(text, placeholders={"ip": "[IP]"}, ip_policy="all") == (
        "mail <EMAIL>, ip [IP], lan [IP], tel <PHONE>"
    )
    out = run_stage(PiiRedaction(max_redactions=2), documents_table([text, "x@y.com"]))
    assert out.column(schema.REASON).to_pylist() == ["too_much_pii", None]
    detail = out.column(schema.DETAIL).to_pylist()[0]
    assert detail == "3 redactions (email 1, ip 1, phone 1), more than max_redactions 2"


def test_an_email_wins_over_the_ip_or_phone_inside_it():
    assert redact("user@[93.184.216.34] and +49301234567@sms.example.com") == "user@[<IP>] and <EMAIL>"


@pytest.mark.parametrize(("text", "phone"), [
    ("联系电话：010-62751234", "010-62751234"), ("手机：13800138000", "13800138000"),
    ("電話番号：03-1234-5678", "03-1234-5678"), ("전화: 02-1234-5678", "02-1234-5678"),
    ("тел.: 8 (495) 123-45-67", "8 (495) 123-45-67"), ("फ़ोन: 9876543210", "9876543210"),
    ("هاتف: 0612345678", "0612345678"),
    # everyday wordings: Arabic's article, Hindi's and Urdu's "number", Russian inflected, Greek, Hebrew, Bengali,
    # Tamil, Korean, Spanish, Portuguese, Italian, Polish, Indonesian
    ("رقم الهاتف: 0501234567", "0501234567"), ("फोन नंबर 9876543210 पर", "9876543210"),
    ("فون نمبر 0300-1234567 پر", "0300-1234567"), ("Справки по телефону 8 (495) 123-45-67.", "8 (495) 123-45-67"),
    ("στο τηλ. 210 3214567", "210 3214567"), ("לפרטים: טלפון 03-6123456", "03-6123456"),
    ("মোবাইল ০১৭১১-২৩৪৫৬৭", "০১৭১১-২৩৪৫৬৭"), ("தொலைபேசி: 044-2345 6789", "044-2345 6789"),
    ("문의: 02-123-4567", "02-123-4567"), ("en el Tfno. 912 345 678", "912 345 678"),
    ("pelo celular (11) 91234-5678.", "(11) 91234-5678"), ("cellulare 333 1234567.", "333 1234567"),
    ("Kontakt: tel. kom. 601 234 567", "601 234 567"), ("hubungi HP/WA 0812-3456-7890.", "0812-3456-7890"),
])
def test_a_phone_word_of_the_page_s_own_language_says_phone(text, phone):
    """The words were European only: a Chinese, Japanese, Korean, Russian, Hindi or Arabic contact number stayed."""
    assert [text[a:b] for a, b in find_phones(text)] == [phone]
    assert find_phones("这部手机 2024 年上市") == [] and find_phones("тел. 2023 год") == []  # a year stays a year


@pytest.mark.parametrize(("text", "expected"), [
    # an address glued to the words of a script written without spaces: only the address goes (the sentence before
    # it went too, or, followed by them, the address stayed)
    ("如有任何问题请随时发送邮件至support@example.com", "如有任何问题请随时发送邮件至<EMAIL>"),
    ("お問い合わせくださいinfo@example.com", "お問い合わせください<EMAIL>"),
    ("문의사항은이메일로보내주세요help@example.com", "문의사항은이메일로보내주세요<EMAIL>"),
    ("zhangwei@qq.com是我的邮箱", "<EMAIL>是我的邮箱"), ("メールはtanaka@example.co.jpまで。", "メールは<EMAIL>まで。"),
    ("ติดต่อsomchai@example.co.thได้เลย", "ติดต่อ<EMAIL>ได้เลย"),
    ("Пишите наivan@mail.ru сегодня", "Пишите на<EMAIL> сегодня"),  # Latin glued to Cyrillic
    ("почта@пример.рф и müller@beispiel.de", "<EMAIL> и <EMAIL>"),  # addresses in one script each stay whole
    ("服务器地址是93.184.216.34，请勿泄露。", "服务器地址是<IP>，请勿泄露。"),
    ("我的电话是13812345678，座机010-12345678。", "我的电话是<PHONE>，座机<PHONE>。"),
    ("電話番号は090-1234-5678です。", "電話番号は<PHONE>です。"), ("电话+86 138 1234 5678。", "电话<PHONE>。"),
    ("电话：１３８１２３４５６７８", "电话：<PHONE>"),  # full-width digits
])
def test_pii_glued_to_text_without_spaces_is_found_and_only_it_goes(text: str, expected: str):
    assert redact(text) == expected


@pytest.mark.parametrize(("text", "phone"), [
    ("برای اطلاعات بیشتر با شماره ۰۹۱۲ ۳۴۵ ۶۷۸۹ تماس بگیرید.", "۰۹۱۲ ۳۴۵ ۶۷۸۹"),  # Persian digits
    ("للاستفسار اتصل على الرقم ٠١٢٣ ٤٥٦ ٧٨٩٠ خلال ساعات العمل.", "٠١٢٣ ٤٥٦ ٧٨٩٠"),  # Arabic-Indic
    ("যোগাযোগ করুন ০১৭১১-২৩৪৫৬৭ নম্বরে", "০১৭১১-২৩৪৫৬৭"),  # Bengali
    ("फोन: ०२२ २४१२ ३४५६ पर", "०२२ २४१२ ३४५६"),  # Devanagari
])
def test_a_number_in_its_script_s_own_digits_is_judged_as_its_ascii_twin(text: str, phone: str):
    """Only a phone word made these phones: in their ASCII twins' shapes (a trunk 0, groups), they stayed."""
    assert [text[a:b] for a, b in find_phones(text)] == [phone]
    assert find_phones("سال ۱۴۰۲ و ۱۴۰۳") == [] and find_phones("मूल्य ₹ १२,४५०") == []


def test_an_ip_in_full_width_digits_is_no_crash():
    """`ipaddress` reads ASCII digits only: a quad of full-width digits beside a real address raised."""
    assert redact("ip server ５.２.３.４ and 93.184.216.34") == "ip server ５.２.３.４ and <IP>"


def test_two_numbers_in_one_run_are_two_phones():
    """Read as one run of 20 digits, `030 1234567 / 030 7654321` was no phone at all, and a number followed by a
    bracketed note had unbalanced brackets: both numbers stayed."""
    for text, phones in [("Tel. 030 1234567 / 030 7654321", ["030 1234567", "030 7654321"]),
                         ("Телефон: (495) 123-45-67 / 123-45-68", ["(495) 123-45-67", "123-45-68"]),
                         ("Tel. 030 1234567 (2019)", ["030 1234567"]), ("pages 123 / 456, 2010 / 2020", [])]:
        assert [text[a:b] for a, b in find_phones(text)] == phones


@pytest.mark.parametrize(("text", "expected"), [
    # a resident identity number (check character X), glued to its Chinese words
    ("我的身份证号是11010519491231002X，请保密。", "我的身份证号是<NATIONAL_ID>，请保密。"),
    ("公民身份号码 440524198801010011", "公民身份号码 <NATIONAL_ID>"),
    # cards printed as cards are, or after a card word in any shape
    ("Card: 4111 1111 1111 1111, exp 12/27", "Card: <CARD>, exp 12/27"),
    ("pay with 5500-0000-0000-0004 today", "pay with <CARD> today"),
    ("Amex 3782 822463 10005", "Amex <CARD>"),
    ("信用卡号码4111111111111111到期", "信用卡号码<CARD>到期"),
    ("银行卡：6222 0212 3456 7890 128", "银行卡：<CARD>"),
    # QQ numbers and WeChat IDs, the word kept
    ("加微信abc_123领取红包", "加微信<MESSENGER_ID>领取红包"),
    ("微信号：zhangsan88，QQ：12345678", "微信号：<MESSENGER_ID>，QQ：<MESSENGER_ID>"),
    ("联系QQ 10001 或 wechat: john_doe", "联系QQ <MESSENGER_ID> 或 wechat: <MESSENGER_ID>"),
])
def test_identity_and_card_numbers_and_messenger_handles_are_redacted(text: str, expected: str):
    """A Chinese page's identity card, bank card, QQ and WeChat numbers stayed in the text (only e-mail, IP and
    phone numbers were redacted)."""
    assert redact(text) == expected


def test_new_kinds_are_counted_and_can_be_left_out():
    text = "身份证 11010519491231002X, card 4111 1111 1111 1111, QQ 12345678"
    out = run_stage(PiiRedaction(), documents_table([text]))
    counts = {k: out.column(schema.count_column("pii", k)).to_pylist()[0] for k in ("national_id", "card", "messenger")}
    assert counts == {"national_id": 1, "card": 1, "messenger": 1}
    assert redact(text, redact=["email", "ip", "phone"]) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("联系方式：13800138000", "联系方式：<PHONE>"),
    ("请致电13800138000或拨打138 0013 8000", "请致电<PHONE>或拨打<PHONE>"),
    ("联系人：张先生 13800138000", "联系人：张先生 <PHONE>"),
    ("手机/微信：138-0013-8000", "手机/微信：<PHONE>"),
    ("电话：（010）87654321", "电话：<PHONE>"),
])
def test_chinese_mobile_numbers_in_any_wording_and_full_width_brackets(text: str, expected: str):
    """A mainland mobile number stayed unless 手机 or 电话 came right before it (联系方式, 拨打, 致电 and a contact's
    name did not count), and a landline in full-width brackets stayed."""
    assert redact(text) == expected
