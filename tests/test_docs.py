"""The README and the pages under ``docs/``: every relative link resolves, and the README stays short.

A link is a markdown link or image (``[text](target)``, ``![alt](target)``) or an HTML
``href``/``src`` outside code. Its target, taken relative to the file it is in, must exist;
a ``#anchor`` into a markdown file (or into the same file) must name one of its headings,
slugged as GitHub slugs them: lower-case, punctuation dropped, each space a ``-``, and a
repeated heading numbered ``-1``, ``-2``… Links with a scheme (``https:``, ``mailto:``) are
not followed.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 250

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
HTML_LINK = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def prose(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of the lines of ``text`` outside fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)[0] * len(opened.group(1))
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
        else:
            lines.append((number, line))
    return lines


def without_code_spans(text: str) -> str:
    """``text`` with inline code made inert: brackets and parentheses inside it become spaces,
    so code that looks like a link is not one, while a code span inside a link's text keeps
    the link whole."""
    return CODE_SPAN.sub(lambda m: m.group(0).translate(str.maketrans("[]()<>", "      ")), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger's rule)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    kept = "".join(c for c in text
                   if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2).strip())
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """``(line number, target)`` of every link in ``path`` outside code."""
    out = []
    for number, line in prose(path.read_text(encoding="utf-8")):
        line = without_code_spans(line)
        out += [(number, m.group(1)) for m in LINK.finditer(line)]
        out += [(number, m.group(1)) for m in HTML_LINK.finditer(line)]
    return out


def broken(path: Path) -> list[str]:
    """Every link of ``path`` that does not resolve, as ``file:line: target (why)``."""
    problems = []
    for number, target in links(path):
        if SCHEME.match(target):
            continue
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{where} (no such file)")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{where} (no heading with that anchor in {destination.name})")
    return problems


def test_every_relative_link_resolves() -> None:
    problems = [problem for path in documents() for problem in broken(path)]
    assert problems == [], "broken links:\n" + "\n".join(problems)


def test_the_links_are_found() -> None:
    """The check has something to check: the README links to every page under docs/."""
    targets = {target.partition("#")[0] for _, target in links(README)}
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert pages and pages <= targets, sorted(pages - targets)


def test_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; at most {README_MAX_LINES}"


@pytest.mark.parametrize("heading, anchor", [
    ("Install", "install"),
    ("JSON output (schema 1)", "json-output-schema-1"),
    ("Fine-tuning: `perspectrum train`", "fine-tuning-perspectrum-train"),
    ("models list / export / install", "models-list--export--install"),
    ("End to end: strict and found", "end-to-end-strict-and-found"),
    ("T1–T5, the IR baselines", "t1t5-the-ir-baselines"),
    ("Many claims: `discover-batch`", "many-claims-discover-batch"),
])
def test_slugs_follow_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_check_catches_what_it_guards(tmp_path: Path) -> None:
    """A missing file, a missing heading and a link hidden in code: only the first two count."""
    (tmp_path / "other.md").write_text("# Other page\n\n## A section: here\n\n```\n# not a heading\n```\n",
                                       encoding="utf-8")
    (tmp_path / "picture.png").write_bytes(b"")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n"
                    "[fine](other.md#a-section-here) ![fine](picture.png) [fine](#page) [web](https://x.org/y)\n"
                    "[gone](missing.md) ![gone](missing.png) [no heading](other.md#not-a-heading)\n"
                    "[no anchor here](#elsewhere) `[in code](missing.md)`\n"
                    "```\n[in a fence](missing.md)\n```\n", encoding="utf-8")
    problems = broken(page)
    assert [p.split(": ", 1)[1].split(" (")[0] for p in problems] == [
        "missing.md", "missing.png", "other.md#not-a-heading", "#elsewhere"]


#: A path that names one machine's folders: a home, a scratch folder, a checkout's absolute place.
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:work|tmp|root|home|Users|mnt|var/folders)/[\w.-]", re.I)


def machine_paths(paths: list[Path]) -> list[str]:
    """``file:line: path`` for every machine path in ``paths``."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.parent.name}/{path.name}:{number}: {m.group()}" for m in MACHINE_PATH.finditer(line)]
    return found


def test_no_machine_path_in_the_readme_docs_or_results() -> None:
    """README, docs and stored results say what a reader can run anywhere: placeholders
    (MODELS, OUT.json), never where one machine kept its folders."""
    results = sorted((ROOT / "eval" / "results").glob("*.json"))
    assert results
    assert machine_paths([*documents(), *results]) == []


def test_the_machine_path_check_catches_one(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("run `bench --json /tmp/out.json` or `--models-dir /work/state/models`\n"
                    "caches live in ~/.cache/perspectrum/traced/ and eval/results/x.json\n", encoding="utf-8")
    assert [hit.split(": ")[1] for hit in machine_paths([page])] == ["/tmp/o", "/work/s"]
