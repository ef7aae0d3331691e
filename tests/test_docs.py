"""The README and the pages under ``docs/``: every relative link resolves, and the README stays short.

A link is a markdown link or image (``[text](target)``, ``![alt](target)``) or an HTML
``href``/``src`` outside code. Its target, taken relative to the file it is in, must exist;
a ``#anchor`` into a markdown file (or into the same file) must name one of its headings,
slugged as GitHub slugs them: lower-case, punctuation dropped, each space a ``-``, and a
repeated heading numbered ``-1``, ``-2``… Links with a scheme (``https:``, ``mailto:``) are
not followed.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from benchmarks import registry

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


def hits(pattern: re.Pattern[str], paths: list[Path]) -> list[str]:
    """``file:line: text`` for every match of ``pattern`` in ``paths``."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.parent.name}/{path.name}:{number}: {m.group()}" for m in pattern.finditer(line)]
    return found


def machine_paths(paths: list[Path]) -> list[str]:
    """``file:line: path`` for every machine path in ``paths``."""
    return hits(MACHINE_PATH, paths)


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


#: An issue tracker's number or a run named after one: "issue 35", "issues 12", "#35", "_before34", "before 34".
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\d+|(?<![\w&/])#\d+\b|_before_?\d+|\bbefore\s\d{2}\b", re.I)


def issue_numbers(paths: list[Path]) -> list[str]:
    """``file:line: text`` for every issue number in ``paths``."""
    return hits(ISSUE_NUMBER, paths)


def stored_results() -> list[Path]:
    return sorted(p for p in (ROOT / "eval" / "results").iterdir() if p.is_file())


def test_no_issue_number_in_the_readme_docs_or_results() -> None:
    """README, docs and stored results say what the software does now, not which ticket a run
    belonged to."""
    texts = [path for path in stored_results() if path.suffix in (".json", ".md")]
    assert texts
    assert issue_numbers([*documents(), ROOT / "CHANGELOG.md", *texts]) == []


def test_the_issue_number_check_catches_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("fixed in issue 35, see #35 and run_before34.json, as before 34 runs\n"
                    "## Heading [link](#t1t5-the-ir-baselines) &#8212; before 2 cores, p95 1,732 ms\n", encoding="utf-8")
    assert [hit.split(": ")[1] for hit in issue_numbers([page])] == ["issue 35", "#35", "_before34", "before 34"]


# --- stored results and the registry of quoted figures ---------------------------------------


RESULTS = ROOT / "eval" / "results"
#: ``<task>_<system>_<split>``, read from the right (eval/results/README.md).
SYSTEMS = ("shipped", "trained", "recipes", "ir", "example", "fixture", "base")
SPLITS = ("dev", "test", "train", "nosplit")
RESULT_NAME = re.compile(rf"^[a-z0-9][a-z0-9_-]*_(?:{'|'.join(SYSTEMS)})_(?:{'|'.join(SPLITS)})\.(?:json|png)$")
NOT_RESULTS = {"README.md", "registry.json"}
SECTION = re.compile(r"<!-- registry: begin -->\n(.*?)<!-- registry: end -->", re.S)


def results_named() -> list[Path]:
    return [path for path in stored_results() if path.name not in NOT_RESULTS]


def same_spacing(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_stored_results_are_named_by_task_system_and_split() -> None:
    names = [path.name for path in results_named()]
    assert names and [name for name in names if not RESULT_NAME.match(name)] == []


def test_every_stored_result_says_how_when_and_where_it_was_made() -> None:
    missing = {}
    for path in results_named():
        if path.suffix == ".json":
            record = json.loads(path.read_text(encoding="utf-8"))
            lacking = [key for key in ("command", "commit", "machine", "date") if not record.get(key)]
            if lacking:
                missing[path.name] = lacking
    assert missing == {}


def test_every_registered_file_exists_and_every_stored_file_is_cited() -> None:
    entries = registry.load()
    assert entries
    assert sorted({e["file"] for e in entries} - {p.name for p in results_named()}) == []
    quoted_in = "\n".join(path.read_text(encoding="utf-8") for path in documents())
    uncited = [p.name for p in results_named() if p.name not in {e["file"] for e in entries} and p.name not in quoted_in]
    assert uncited == [], f"stored results no document cites: {uncited}"


def test_every_registered_figure_is_its_stored_value_and_is_quoted_where_it_says() -> None:
    entries = registry.load()
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    wrong = []
    for e in entries:
        doc = same_spacing((ROOT / e["doc"]).read_text(encoding="utf-8"))
        value = registry.formatted(e)
        if value != e["quoted"]:
            wrong.append(f"{e['id']}: stored {value}, quoted {e['quoted']}")
        if e["quoted"] not in e["context"]:
            wrong.append(f"{e['id']}: {e['quoted']!r} is not in its context")
        if same_spacing(e["context"]) not in doc:
            wrong.append(f"{e['id']}: {e['doc']} no longer says {e['context']!r}")
    assert wrong == []


def test_the_readme_figures_are_registered() -> None:
    """Every number in the README's results table has a registry entry quoting it."""
    readme = [e for e in registry.load() if e["doc"] == "README.md"]
    table = [line for _, line in prose(README.read_text(encoding="utf-8"))
             if line.startswith("| paper, IR+BERT") or line.startswith("| **ours") or line.startswith("| ours")
             or line.startswith("| paper, human")]
    assert len(table) == 4
    for line in table:
        cells = line.split("|")[2:7]
        figures = re.findall(r"\d+\.\d", " ".join(cells))
        registered = [e["quoted"] for e in readme if e["context"] in line]
        assert sorted(figures) == sorted(registered), line


def test_every_stored_result_a_document_names_exists() -> None:
    named = re.compile(r"(?:eval/results/)?\b([a-z0-9][\w-]*_(?:" + "|".join(SPLITS) + r")\.(?:json|png))\b")
    missing = sorted({f"{path.name}: {m.group(1)}" for path in documents()
                      for m in named.finditer(path.read_text(encoding="utf-8"))
                      if not (RESULTS / m.group(1)).exists()})
    assert missing == []


def test_the_evaluation_page_shows_the_registry_as_rendered() -> None:
    page = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = SECTION.search(page)
    assert section, "docs/evaluation.md has no registry section"
    assert section.group(1) == registry.render()


def test_the_registry_check_catches_a_changed_figure(tmp_path: Path) -> None:
    (tmp_path / "x_shipped_test.json").write_text(json.dumps({"command": "c", "t": {"f1": 56.58, "ms": 1731.96}}))
    entry = {"file": "x_shipped_test.json", "path": ["t", "f1"], "digits": 1}
    assert registry.formatted(entry, tmp_path) == "56.6"
    assert registry.formatted({**entry, "path": ["t", "ms"], "digits": 0, "thousands": True}, tmp_path) == "1,732"
    assert registry.formatted({**entry, "path": ["t", "ms"], "digits": 2, "scale": 0.001}, tmp_path) == "1.73"
    assert registry.written(41.05, 1) == "41.1" and registry.written(41.05, 1, printed=True) == "41.0"
    (tmp_path / "x_shipped_test.json").write_text(json.dumps({"command": "c", "t": {"f1": 56.66}}))
    assert registry.formatted(entry, tmp_path) != "56.6"
