"""Every citation resolves inside the repository: a cited doc section (``docs/X.md "Section"``
or ``docs/X.md#anchor``) in src/, tests/, bench/, .ci/, proto/, docs/ or the README names a
heading that exists, every repository path named there exists, and nothing cites a file the
repository does not have (design notes, style guides or specs kept elsewhere)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "agentcoord"

# A comment or docstring line break inside a citation: the newline, then the next line's
# indentation and comment leader (``#``, ``//``, ``*``).
_BREAK = r"\n[ \t]*(?:#|//|\*)?[ \t]*"
# docs/X.md then either #anchor, or a quoted section title; the title may follow a comma, may sit
# on the next line of a comment or docstring, and may itself wrap onto the next line.
CITATION = re.compile(
    r"docs/(?P<file>[\w.-]+\.md)"
    rf"(?:#(?P<anchor>[\w-]+)|,?[ \t]*(?:{_BREAK})?\"(?P<section>[^\"\n]+(?:{_BREAK}[^\"\n]+)?)\")"
)
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")

# Files that are not in the repository: the design notes, the house style, the notes on
# outside tools, and the specs the tools were first written against. Their rationale lives in
# docs/; a comment that cites them sends its reader nowhere.
_OUTSIDE = ("DESIGN", "STYLE", "FACTS")
FOREIGN = re.compile(
    r"\b(?:" + "|".join(_OUTSIDE) + r")\.md\b"  # a design note kept elsewhere
    r"|(?i:\bseeds?[\s#*/]+\d{3}\b)"  # a numbered spec: "seed" and three digits, wrapped or not
    r"|(?<![\w.-])seeds[/]"  # the specs' folder
)

# A path from the repository's root (``tests/claude/test_channels.py``, ``bench/store.py``), or
# one inside the package from its own root (``tools/_acting.py``). A path written inside
# another (``~/.claude/...``, ``<state>/kube/``) or with a placeholder or a glob stops before it.
_TOP = ("src/agentcoord", "tests", "bench", "docs", "proto", "systemd", ".ci")
_SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "proto")
ROOT_PATH = re.compile(
    r"(?<![\w./~$>-])(?P<path>(?:" + "|".join(re.escape(t) for t in _TOP) + r")/[\w./-]*\w)"
)
PACKAGE_PATH = re.compile(
    r"(?<![\w./~$>-])(?P<path>(?:" + "|".join(_SUBPACKAGES) + r")/[\w/-]*\w\.py)\b"
)
# What the benchmark writes when it runs (``bench/run`` -> ``bench/REPORT.md``); named by the
# docs before a first run makes it.
GENERATED = {"bench/REPORT.md", "bench/COMPARE.md", "bench/latency.png", "bench/throughput.png"}

THIS = Path(__file__).resolve()


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
    """The README, the docs, and every source, test, benchmark and CI file, the wire format's
    definitions (proto/) with them."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for ext in ("py", "html", "js", "css"):
        files += sorted(PACKAGE.rglob(f"*.{ext}"))
    files += sorted((ROOT / "tests").rglob("*.py"))
    files += sorted(p for p in (ROOT / "bench").iterdir() if p.suffix in (".py", ".md", ""))
    files += sorted(p for p in (ROOT / ".ci").iterdir() if p.is_file())
    files += sorted(p for p in (ROOT / "proto").rglob("*") if p.suffix in (".proto", ".py"))
    return [f for f in files if f.is_file()]


def _where(path: Path, text: str, pos: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, pos) + 1}"


def prose(path: Path, text: str) -> list[tuple[int, str]]:
    """The parts of ``text`` that are prose, with their offsets: all of it for Markdown and
    scripts, the comments and docstrings of a Python module (its other strings are data, such
    as the paths a test creates)."""
    if path.suffix != ".py":
        return [(0, text)]
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        body = tok.string.lstrip("rbuRBU")
        if tok.type == tokenize.COMMENT or (
            tok.type == tokenize.STRING and body.startswith(('"""', "'''"))
        ):
            out.append((starts[tok.start[0] - 1] + tok.start[1], tok.string))
    return out


def citations() -> list[tuple[str, str, str | None, str | None]]:
    """Each doc citation in the sources' prose: where, the doc, and its section or anchor."""
    out = []
    for path in sources():
        if path.resolve() == THIS:  # its examples cite docs/X.md
            continue
        text = path.read_text(errors="replace")
        for offset, part in prose(path, text):
            for m in CITATION.finditer(part):
                section = m.group("section")
                if section is not None:  # a title wrapped over two lines reads as one
                    section = re.sub(_BREAK, " ", section)
                where = _where(path, text, offset + m.start())
                out.append((where, m.group("file"), section, m.group("anchor")))
    return out


def foreign_citations() -> list[str]:
    """Where a file names something outside the repository, with what it names."""
    out = []
    for path in sources():
        if path.resolve() == THIS:  # its patterns name them
            continue
        text = path.read_text(errors="replace")
        out += [f"{_where(path, text, m.start())}: {m.group(0)!r}" for m in FOREIGN.finditer(text)]
    return out


def missing_paths() -> list[str]:
    """Repository paths named in the sources' prose that do not exist."""
    out = []
    for path in sources():
        if path.resolve() == THIS:  # its examples name paths that need not exist
            continue
        text = path.read_text(errors="replace")
        for offset, part in prose(path, text):
            for pattern, base in ((ROOT_PATH, ROOT), (PACKAGE_PATH, PACKAGE)):
                for m in pattern.finditer(part):
                    name = m.group("path").rstrip(".")
                    if name in GENERATED or (base / name).exists():
                        continue
                    out.append(f"{_where(path, text, offset + m.start())}: {name}")
    return out


CITATIONS = citations()


def test_citations_are_found() -> None:
    """The scan finds the known citation forms, so an empty scan cannot pass silently."""
    forms = {(bool(section), bool(anchor)) for _, _, section, anchor in CITATIONS}
    assert (True, False) in forms  # docs/X.md "Section"
    assert (False, True) in forms  # docs/X.md#anchor
    assert any(where.startswith("tests/") for where, *_ in CITATIONS)
    assert any(where.startswith("bench/") for where, *_ in CITATIONS)


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


def test_the_wire_format_is_scanned() -> None:
    """The .proto files and the code generated from them are among the scanned sources, so a
    comment there is held to the same rules."""
    scanned = {p.relative_to(ROOT).as_posix() for p in sources()}
    assert "proto/agent/v1/agent.proto" in scanned
    assert "proto/gen.py" in scanned
    assert "src/agentcoord/proto/agent/v1/agent_pb2.py" in scanned
    assert any(where.startswith("proto/") for where, *_ in CITATIONS)


def test_nothing_cites_a_file_outside_the_repository() -> None:
    """No comment, docstring or doc cites a design note, style guide or spec the repository
    does not hold."""
    assert foreign_citations() == []


def test_foreign_citations_are_recognised() -> None:
    """The pattern catches each form such a citation takes, so the check above can fail."""
    names = [f"{n}.md" for n in _OUTSIDE]
    # Built from parts, so that this file does not read as such a citation itself.
    numbered = [f"seed {1:03}", f'Seed {0:03} "claim"', f"seed\n    # {3:03}", "seeds" + "/0.txt"]
    for text in [*names, *numbered]:
        assert FOREIGN.search(text), text
    for text in ["random seed", "seed URLs", "nkey seed file", "DESIGNS.md", "docs/store.md"]:
        assert not FOREIGN.search(text), text


def test_named_paths_exist() -> None:
    """Every repository path a source names (``tests/x.py``, ``bench/y.py``, a package module
    such as ``tools/_acting.py``) exists, so a renamed or removed file is not cited on."""
    assert missing_paths() == []


def test_path_patterns_find_paths() -> None:
    """The path patterns match a root path and a package path, and skip paths inside others."""
    assert ROOT_PATH.search("see tests/claude/test_channels.py.")
    assert PACKAGE_PATH.search("(tools/_acting.py)")
    assert not ROOT_PATH.search("~/.claude/projects/x")
    assert not ROOT_PATH.search("a/tests/b")
    assert not PACKAGE_PATH.search("tests/tools/test_args.py")
