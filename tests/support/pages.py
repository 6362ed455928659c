"""Made-up pages for tests that need a run to last a while."""

from __future__ import annotations


def slow_page(i: int, rows: int = 3000) -> bytes:
    """A page that takes trafilatura about half a second (3,000 rows): enough to kill a run in the middle."""
    cells = "".join(f"<div><p>Row {j} of page {i}, some words.</p><table><tr><td>{j}</td></tr></table></div>"
                    for j in range(rows))
    return f"<html><body><article><h1>Page {i}</h1>{cells}</article></body></html>".encode()
