"""The `url` stage: domain, URL and word block lists matched against documents' URLs."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import ValidationError

from curation import schema
from curation.apply import bypass_column, run_stage
from curation.schema import documents_table
from curation.stages.url import UrlFilter


def run(stage: UrlFilter, urls: list[str | None]) -> list[dict]:
    """The stage's output rows in the order of `urls` (`run_stage` puts the rows it judged first)."""
    batch = documents_table(["text"] * len(urls))
    batch = batch.set_column(batch.schema.get_field_index("url"), "url", pa.array(urls, pa.string()))
    rows = {row["id"]: row for row in run_stage(stage, batch).to_pylist()}
    return [rows[i] for i in batch.column("id").to_pylist()]


def judged(stage: UrlFilter, urls: list[str | None]) -> list[tuple[str | None, str | None]]:
    return [(row[schema.REASON], row[schema.DETAIL]) for row in run(stage, urls)]


def write(path: Path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
    return str(path)


def test_a_domain_blocks_itself_and_every_host_below_it(tmp_path):
    domains = write(tmp_path / "domains.gz", "# adult\nexample.com\nsub.site.org\n\n")
    stage = UrlFilter(domains=[domains])
    assert judged(stage, ["http://example.com/", "https://www.EXAMPLE.com:8443/a?b#c", "http://a.b.example.com.",
                          "http://user:pw@example.com/", "example.com/no-scheme", "http://site.org/",
                          "http://x.sub.site.org/p", "http://notexample.com/", "http://example.com.au/"]) == [
        ("blocked_domain", "example.com"), ("blocked_domain", "example.com"), ("blocked_domain", "example.com"),
        ("blocked_domain", "example.com"), ("blocked_domain", "example.com"), (None, None),
        ("blocked_domain", "sub.site.org"), (None, None), (None, None)]


def test_domain_lists_are_read_in_the_forms_people_have(tmp_path):
    """Hosts files, adblock lines, wildcards, trailing dots, IDNs written in Unicode, IP addresses, CRLF."""
    text = ("0.0.0.0 ads.one.net tracker.two.net  # a hosts file\r\n||three.io^\r\n*.four.org\r\n.five.fr\r\n"
            "six.de.\r\nbücher.de\r\n10.1.2.3\r\n")
    stage = UrlFilter(domains=[write(tmp_path / "hosts.txt", text)])
    urls = ["http://ads.one.net/", "http://tracker.two.net/", "http://cdn.three.io/", "http://four.org/",
            "http://www.five.fr/", "http://six.de/", "http://xn--bcher-kva.de/", "http://www.bücher.de/",
            "http://10.1.2.3/x", "http://0.0.0.0/", "http://one.net/", "http://2.3/"]
    assert [reason for reason, _ in judged(stage, urls)] == ["blocked_domain"] * 9 + [None] * 3


def test_a_url_blocks_itself_and_every_url_below_it(tmp_path):
    urls = write(tmp_path / "urls", "site.com/videos\nhttp://www.other.net/a/b/\n")
    stage = UrlFilter(urls=[urls])
    assert judged(stage, ["http://site.com/videos", "https://www2.site.com/Videos/1.html?x=1", "http://site.com/",
                          "http://site.com/videos2", "http://other.net/a/b/c", "http://other.net/a",
                          "http://cdn.site.com/videos"]) == [
        ("blocked_url", "site.com/videos"), ("blocked_url", "site.com/videos"), (None, None), (None, None),
        ("blocked_url", "other.net/a/b"), (None, None), (None, None)]


def test_allowed_domains_are_never_blocked_by_the_lists(tmp_path):
    domains = write(tmp_path / "domains", "example.com\n")
    stage = UrlFilter(domains=[domains], allow=["docs.example.com"])
    assert [r for r, _ in judged(stage, ["http://docs.example.com/x", "http://a.docs.example.com/",
                                         "http://www.example.com/"])] == [None, None, "blocked_domain"]


def test_word_rules_read_the_url_s_words(tmp_path):
    hard = write(tmp_path / "banned.txt", "porn\n#ignored\nअश्लील\n")
    soft = write(tmp_path / "soft.txt", "sex\nhot\ngirls\n")
    sub = write(tmp_path / "sub.txt", "sex cam\n")
    stage = UrlFilter(words=[hard], soft_words=[soft], subwords=[sub])
    assert judged(stage, [
        "http://a.com/Free-PORN-videos", "http://a.com/free%20porn", "http://a.com/pornography-law",
        "http://news.com/sex-education", "http://a.com/hot_sex", "http://a.com/hot-girls-and-hot-sex",
        "http://my-sexcam.example/", "http://a.com/ignored", "http://a.in/%E0%A4%85%E0%A4%B6%E0%A5%8D%E0%A4%B2%E0%A5"
        "%80%E0%A4%B2-video"]) == [
        ("banned_word", "porn"), ("banned_word", "porn"), (None, None), (None, None),
        ("soft_banned_words", "hot, sex"), ("soft_banned_words", "girls, hot, sex"),
        ("banned_subword", "sexcam"), (None, None), ("banned_word", "अश्लील")]  # a word with vowel signs is one word


def test_documents_without_a_url_pass_unjudged_and_are_counted(tmp_path):
    stage = UrlFilter(domains=[write(tmp_path / "d", "example.com\n")])
    rows = run(stage, [None, "", "http://example.com/", "http://[::1"])
    assert [row[schema.REASON] for row in rows] == [None, None, "blocked_domain", None]
    assert [row[bypass_column("url", "no_url")] for row in rows] == [1, 1, None, None]


def _archive(path: Path, members: dict[str, str], link: tuple[str, str] | None = None) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
        if link:
            info = tarfile.TarInfo(link[0])
            info.type, info.linkname = tarfile.SYMTYPE, link[1]
            tar.addfile(info)
    return str(path)


def test_a_ut1_archive_is_read_by_category_and_its_links_are_not_followed(tmp_path):
    (tmp_path / "outside").write_text("outside.com\n")
    archive = _archive(tmp_path / "blacklists.tar.gz", {
        "blacklists/adult/domains": "adult.com\n", "blacklists/adult/urls": "host.net/adult\n",
        "blacklists/gambling/domains": "casino.com\n", "domains": "top.com\n", "blacklists/adult/README": "x.com\n",
    }, link=("blacklists/adult/domains", str(tmp_path / "outside")))
    urls = ["http://adult.com/", "http://host.net/adult/1", "http://casino.com/", "http://top.com/",
            "http://x.com/", "http://outside.com/"]
    every = [r for r, _ in judged(UrlFilter(blocklists=[archive]), urls)]
    assert every == ["blocked_domain", "blocked_url", "blocked_domain", "blocked_domain", None, None]
    adult = [r for r, _ in judged(UrlFilter(blocklists=[archive], categories=["adult"]), urls)]
    assert adult == ["blocked_domain", "blocked_url", None, "blocked_domain", None, None]
    # a misspelt category blocked nothing, without a word: refused before work, as a missing file is
    assert UrlFilter(blocklists=[archive], categories=["adult", "adlt"]).params.file_problems() == [
        (("categories", 1), "no archive of `blocklists` has a category 'adlt' (they have: adult, gambling)")]


def test_a_stage_without_a_list_is_refused():
    with pytest.raises(ValidationError, match="give at least one list"):
        UrlFilter()
    with pytest.raises(ValidationError, match="`categories` chooses folders of `blocklists` archives"):
        UrlFilter(words=["w.txt"], categories=["adult"])


def test_a_batch_s_hosts_and_paths_are_each_url_s():
    """The stage reads a batch's URLs with RE2 at once and list entries one by one: the same parts either way."""
    from curation import blocklists

    urls = ["http://user:p@ss@Example.COM:80/A/b/?q#f", "example.com/x", "http://[::1]/a", "http://[::1",
            "HTTP://www.Bücher.de./Ä", "localhost:8080/x", "  https://a.b.c/  ", ""]
    hosts, paths = blocklists.hosts_and_paths(pa.array(urls))
    assert [p if p else None for p in map(blocklists.url_parts, urls)] == [
        (h, p) if h else None for h, p in zip(hosts, paths, strict=True)]
    assert hosts[:5] == ["example.com", "example.com", "::1", None, "www.xn--bcher-kva.de"]


def test_hosts_are_encoded_as_browsers_do_and_paths_compared_decoded(tmp_path):
    """IDNA 2003 made straße.de strasse.de (another domain); a list's `/新闻` missed a WARC's `/%E6%96%B0%E9%97%BB`."""
    stage = UrlFilter(domains=[write(tmp_path / "d", "straße.de\n")],
                      urls=[write(tmp_path / "u", "news.example.cn/新闻/成人\nother.cn/%E6%88%90%E4%BA%BA\n")])
    assert [r for r, _ in judged(stage, [
        "https://xn--strae-oqa.de/", "https://straße.de/a", "https://strasse.de/",
        "http://news.example.cn/%E6%96%B0%E9%97%BB/%E6%88%90%E4%BA%BA/1.html", "http://other.cn/成人/2"])] == [
        "blocked_domain", "blocked_domain", None, "blocked_url", "blocked_url"]
