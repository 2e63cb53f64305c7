"""Every citation of a doc section (``docs/X.md "Section"`` or ``docs/X.md#anchor``) in src/,
docs/ and the README names a heading that exists, so a reader sent there finds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]

# docs/X.md then either #anchor, or a quoted section title; the title may follow a comma and
# may sit on the next line of a comment or docstring (``#``, ``//``, ``*`` leaders).
CITATION = re.compile(
    r"docs/(?P<file>[\w.-]+\.md)"
    r"(?:#(?P<anchor>[\w-]+)|,?[ \t]*(?:\n[ \t]*(?:#|//|\*)?[ \t]*)?\"(?P<section>[^\"\n]+)\")"
)
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def headings(path: Path) -> list[str]:
    """The Markdown headings of ``path`` (lines inside fenced code are not headings)."""
    out: list[str] = []
    fenced = False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            out.append(m.group(2))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def sources() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for ext in ("py", "html", "js", "css"):
        files += sorted((ROOT / "src" / "agentcoord").rglob(f"*.{ext}"))
    return [f for f in files if "/proto/" not in str(f)]


def citations() -> list[tuple[str, str, str | None, str | None]]:
    out = []
    for path in sources():
        text = path.read_text(errors="replace")
        for m in CITATION.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{path.relative_to(ROOT)}:{line}"
            out.append((where, m.group("file"), m.group("section"), m.group("anchor")))
    return out


CITATIONS = citations()


def test_citations_are_found() -> None:
    """The scan finds the known citation forms, so an empty scan cannot pass silently."""
    forms = {(bool(section), bool(anchor)) for _, _, section, anchor in CITATIONS}
    assert (True, False) in forms  # docs/X.md "Section"
    assert (False, True) in forms  # docs/X.md#anchor


@pytest.mark.parametrize(
    ("where", "doc", "section", "anchor"), CITATIONS, ids=[c[0] for c in CITATIONS]
)
def test_cited_section_exists(
    where: str, doc: str, section: str | None, anchor: str | None
) -> None:
    """The cited doc exists and has the cited heading (by title, or by its anchor)."""
    path = ROOT / "docs" / doc
    assert path.is_file(), f"{where} cites docs/{doc}, which does not exist"
    titles = headings(path)
    if section is not None:
        assert section in titles, f"{where}: docs/{doc} has no heading {section!r}: {titles}"
    else:
        anchors = [slug(t) for t in titles]
        assert anchor in anchors, f"{where}: docs/{doc} has no anchor #{anchor}: {anchors}"
