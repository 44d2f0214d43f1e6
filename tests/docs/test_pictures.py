"""The pictures the README and the docs show are the ones bin/docs-pictures makes from a
real run of today's code: none is left out of the script (and so drawn by hand or by an
older version), and each is a picture a browser can show."""

from __future__ import annotations

import re

from PIL import Image

from tests.support.docs import REPO

SHOWN = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")


def shown_pictures() -> dict[str, list[str]]:
    """Each picture's file name, and the pages that show it."""
    out: dict[str, list[str]] = {}
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for target in SHOWN.findall(path.read_text()):
            out.setdefault(target.rsplit("/", 1)[-1], []).append(str(path.relative_to(REPO)))
    return out


def test_every_picture_shown_is_one_bin_docs_pictures_writes():
    script = (REPO / "bin" / "docs-pictures").read_text()
    written = set(re.findall(r'DOCS / "([\w.-]+\.png)"', script))
    shown = shown_pictures()
    assert {"dashboard.png", "report-pareto.png", "report-search-progress.png"} <= set(shown)
    assert set(shown) == written, f"shown: {shown}; bin/docs-pictures writes {sorted(written)}"
    for name in shown:
        with Image.open(REPO / "docs" / name) as im:
            assert im.format == "PNG" and im.width >= 400 and im.height >= 200, name
