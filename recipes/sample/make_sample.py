"""Write the bundled quickstart sample: two small crawl WARC files and one JSONL file.

The pages and notes are written for this project (no third-party text). Besides ordinary
articles the crawl holds what real crawls hold: request records, a revisit, an image, a 404,
a navigation-only page, a page too short to keep, a windows-1252 page without a declared
charset, and a record clipped mid-body. Run `python recipes/sample/make_sample.py` to rebuild;
the output is deterministic.
"""

from __future__ import annotations

import gzip
import json
import uuid
from pathlib import Path

HERE = Path(__file__).parent
DATE = "2026-11-01T12:00:00Z"

ARTICLES = {
    "river-restoration": (
        "How a small town brought its river back",
        [
            "For most of the last century the river that runs through the town was treated as a drain. "
            "Concrete walls were poured along both banks, the meanders were cut off, and the water was "
            "pushed through a straight channel as quickly as possible.",
            "Ten years ago a group of residents began asking whether the channel had to stay that way. "
            "They walked the banks with hydrologists, counted the birds that still nested in the reeds, "
            "and collected old photographs that showed gravel bars where children once played.",
            "The restoration itself took three summers. Crews removed two kilometres of concrete, "
            "reconnected an old oxbow, and planted willows and alders along the new banks. The first "
            "flood after the work spread across the meadow instead of the high street, which convinced "
            "even the sceptics on the council.",
            "Today trout spawn again below the old mill, and the school uses the river as an outdoor "
            "classroom. The residents say the hardest part was not the digging but the patience: a river "
            "needs several floods before it settles into a shape of its own.",
        ],
    ),
    "sourdough": (
        "Notes on keeping a sourdough starter alive",
        [
            "A starter is a community of wild yeasts and lactic acid bacteria living in flour and water. "
            "It does not need to be fed at precise hours, but it does need to be fed regularly, and it "
            "rewards a cook who pays attention to smell and texture rather than to the clock.",
            "In a warm kitchen a starter kept on the counter wants fresh flour once or twice a day. In "
            "the refrigerator it can wait a week or more. When it has been neglected, a layer of grey "
            "liquid collects on top; pour it off, discard most of the starter, and feed the rest twice "
            "before baking with it.",
            "Whole rye flour makes a starter more vigorous than white wheat flour, because rye carries "
            "more of the microbes and the sugars they live on. Many bakers feed with a mixture of the two.",
            "The best test of readiness is simple: drop a spoonful into water. If it floats, the starter "
            "holds enough gas to raise a loaf. If it sinks, give it a few more hours.",
        ],
    ),
    "night-sky": (
        "Why the night sky is darker in winter in the mountains",
        [
            "Observers who travel to high valleys in winter often remark that the stars look sharper and "
            "more numerous than they do in summer. Several effects work together to produce that "
            "impression.",
            "Cold air holds less water vapour, so less light is scattered on its way through the "
            "atmosphere. Snow cover reflects the little artificial light that exists, but in remote valleys "
            "there is so little of it that the reflection hardly matters. Long nights also give the eye "
            "more time to adapt to the dark.",
            "Altitude helps as well. At two thousand metres roughly a fifth of the atmosphere lies below "
            "the observer, and with it most of the dust and haze. The faint band of the Milky Way, which "
            "disappears above most cities, becomes an obvious feature of the sky.",
            "Astronomers still prefer dry summer nights for long exposures, because winter brings wind and "
            "ice to the telescope. For the naked eye, though, a clear night in January is hard to beat.",
        ],
    ),
    "bicycle-maintenance": (
        "Five checks before a long bicycle ride",
        [
            "A long ride is more pleasant when nothing on the bicycle squeaks, rubs or slips. Five quick "
            "checks catch most of the problems that end a day early.",
            "First, squeeze each tyre and compare the pressure with the range printed on the sidewall. "
            "Second, spin each wheel and watch the gap between rim and brake pads; a wobble means a spoke "
            "needs attention. Third, pull both brake levers hard and make sure they stop well short of the "
            "handlebar.",
            "Fourth, look at the chain. A dry chain sounds gritty and wears the cassette; a drop of oil on "
            "each link, wiped off after a minute, is enough. Fifth, lift the bicycle a few centimetres and "
            "let it fall onto its tyres. Anything that rattles is loose and should be tightened before you "
            "leave.",
            "Carry a spare tube, tyre levers and a small pump. They weigh little and turn a puncture from "
            "the end of a ride into a ten-minute pause.",
        ],
    ),
    "library-history": (
        "The lending library that started in a barber shop",
        [
            "The public library of the district began in 1911 as a shelf of donated books in the back of "
            "a barber shop. Customers could borrow a volume while they waited and return it on their next "
            "visit, and the barber kept a ledger of who had taken what.",
            "Within five years the shelf had grown into a room above the shop, and a committee of "
            "volunteers took over the ledger. They introduced a small annual fee, which paid for "
            "newspapers and for a stove to keep the reading room warm in winter.",
            "The present building opened in 1956 with money raised by a lottery and a grant from the "
            "city. Its reading room still has the stove, now decorative, and the original ledger is kept in "
            "a glass case near the entrance.",
            "Librarians say that the ledger is the most popular object in the building. Visitors search it "
            "for the names of grandparents and are often surprised by what their families read.",
        ],
    ),
    "tide-pools": (
        "What lives in a tide pool",
        [
            "Twice a day the sea withdraws from rocky shores and leaves behind pools of water that become "
            "small, harsh worlds. Their temperature and salinity change quickly, and their inhabitants must "
            "tolerate conditions that would kill animals of the open sea.",
            "Anemones close into jelly-like knobs to keep from drying out. Limpets clamp onto the rock and "
            "seal their shells with a film of mucus. Small crabs hide under stones and come out to feed "
            "only when the tide returns.",
            "The pools nearest the low-water line are the richest, because they are exposed for the "
            "shortest time. There, sea stars, sponges and bright red algae share the space with fish that "
            "spend their whole lives in a few square metres.",
            "Visitors are asked to turn stones back the way they found them. The underside of a stone is "
            "a home, and a stone left upside down exposes its residents to the sun and to gulls.",
        ],
    ),
}

NAV = """<header><nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li>
<li><a href="/about">About us</a></li><li><a href="/contact">Contact</a></li></ul></nav></header>"""
FOOTER = """<footer><p>Copyright 2026 Example Gazette. All rights reserved.</p>
<p><a href="/privacy">Privacy</a> | <a href="/terms">Terms of use</a> | <a href="/cookies">Cookies</a></p></footer>"""


def page(title: str, paragraphs: list[str], charset: str | None = "utf-8") -> str:
    meta = f'<meta charset="{charset}">' if charset else ""
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html>\n<html><head>{meta}<title>{title} | Example Gazette</title></head><body>{NAV}"
        f'<main><article><h1>{title}</h1>\n{body}\n</article></main>'
        f'<aside><h3>Most read</h3><ul><li><a href="/a">Ten gardening tips</a></li></ul></aside>{FOOTER}'
        "</body></html>\n"
    )


def warc_record(kind: str, url: str | None, block: bytes, extra: dict[str, str] | None = None,
                declared_length: int | None = None) -> bytes:
    key = f"{kind}:{url}:{len(block)}:{(extra or {}).get('WARC-Refers-To', '')}"
    headers = {
        "WARC-Type": kind,
        "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, key)}>",
        "WARC-Date": DATE,
    }
    if url:
        headers["WARC-Target-URI"] = url
    headers.update(extra or {})
    headers["Content-Type"] = {
        "response": "application/http; msgtype=response",
        "request": "application/http; msgtype=request",
        "revisit": "application/http; msgtype=response",
    }.get(kind, "application/warc-fields")
    headers["Content-Length"] = str(declared_length if declared_length is not None else len(block))
    head = "WARC/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return gzip.compress(head.encode() + block + b"\r\n\r\n", mtime=0)


def http_response(body: bytes, content_type: str = "text/html; charset=utf-8", status: str = "200 OK") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def fetch(url: str, response: bytes) -> list[bytes]:
    host = url.split("/")[2]
    request = f"GET /{url.split('/', 3)[3]} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: curation-sample\r\n\r\n".encode()
    return [warc_record("request", url, request), warc_record("response", url, response)]


def crawl_files() -> dict[str, list[bytes]]:
    site = "https://gazette.example.org/"
    items = list(ARTICLES.items())
    first, second = [warc_record("warcinfo", None, b"software: curation sample writer\r\n")], []
    for i, (slug, (title, paragraphs)) in enumerate(items):
        (first if i % 2 == 0 else second).extend(
            fetch(site + slug, http_response(page(title, paragraphs).encode()))
        )
    first += fetch(site + "logo.png", http_response(b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png"))
    first += fetch(site + "missing", http_response(b"<html><body>Not found</body></html>", status="404 Not Found"))
    first.append(warc_record("revisit", site + "river-restoration", b"HTTP/1.1 200 OK\r\n\r\n",
                             {"WARC-Profile": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"}))
    menu = "<!DOCTYPE html><html><head><title>Sections</title></head><body>" + NAV + FOOTER + "</body></html>"
    second += fetch(site + "sections", http_response(menu.encode()))
    short = page("Closed on Monday", ["The reading room is closed on Monday for cleaning."])
    second += fetch(site + "notice", http_response(short.encode()))
    # An undeclared legacy encoding: no charset in the HTTP header nor in the page.
    legacy = page("Café culture along the old canal", [
        "Along the old canal the cafés open early. Fishermen stop for a café crème before dawn, and by "
        "nine the terraces are full of students, retirees and tourists who have read about the pâtisserie "
        "on the corner, whose croissants are said to be the best in the région.",
        "The owners say the secret is patience: the dough rests for a whole night, and the butter comes "
        "from a dairy two villages away. Nobody on the canal is in a hurry, and that, perhaps, is the "
        "real attraction of the place.",
    ], charset=None).encode("cp1252")
    second += fetch(site + "canal-cafes", http_response(legacy, "text/html"))
    # A record whose body was cut off mid-transfer: it declares more bytes than it holds.
    clipped = http_response(page("An article that was cut off", ["This text never arrives in full."]).encode())
    second.append(warc_record("response", site + "cut-off", clipped[:200], declared_length=len(clipped)))
    return {"crawl-00000.warc.gz": first, "crawl-00001.warc.gz": second}


NOTES = [
    {"text": "Field notes, day one. The path above the lake was still frozen at seven in the morning, so we "
     "waited for the sun before crossing the scree. By ten the snow had softened enough to kick steps, and "
     "we reached the hut shortly after noon. The warden told us that the pass had been closed for two days "
     "last week because of wind, and that a group from the valley had turned back at the first ridge.",
     "url": "https://notes.example.org/day-1", "author": "field team", "license": "CC0-1.0"},
    {"text": "Field notes, day two. Fog in the morning, then clear. We counted forty-two chamois on the slope "
     "opposite the hut, most of them yearlings, and a pair of golden eagles circling above the ridge. In the "
     "afternoon the warden showed us the spring that feeds the hut; it has never run dry, even in the hot "
     "summer three years ago when the lake dropped by a metre and the lower pastures turned brown.",
     "url": "https://notes.example.org/day-2", "author": "field team", "license": "CC0-1.0"},
    {"text": "Too short to keep.", "url": "https://notes.example.org/stub", "author": "field team"},
    {"title": "a record without any text field", "url": "https://notes.example.org/empty"},
    {"text": "Recipe card. Soak the beans overnight, then simmer them with a bay leaf, an onion cut in half and "
     "a splash of olive oil until they are soft but not broken, about ninety minutes. Salt only at the end, "
     "because salt added early keeps the skins tough. Serve with bread toasted over the fire, rubbed with a "
     "clove of garlic, and a plate of bitter greens dressed with lemon and more of the oil.",
     "url": "https://notes.example.org/beans", "author": "kitchen", "license": "CC0-1.0"},
]


def notes_file() -> bytes:
    lines = [json.dumps(n, ensure_ascii=False) for n in NOTES]
    lines.insert(3, '{"text": "a line cut off in the middle')
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


def main() -> None:
    for name, records in crawl_files().items():
        (HERE / name).write_bytes(b"".join(records))
    (HERE / "notes.jsonl.gz").write_bytes(notes_file())


if __name__ == "__main__":
    main()
