"""The command tree changes only on purpose: every command path with its parameters (name,
option strings, argument or option), compared with the reviewed snapshot
(``tests/fixtures/cli_tree.json``, first taken before the CLI was split into one module per
command). A change to the tree is made by writing the snapshot again,
``python -m tests.test_cli_tree --update``, and shows in the diff beside the code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer.main

from perspectrum.cli.app import app

SNAPSHOT = Path(__file__).parent / "fixtures" / "cli_tree.json"


def walk(command: Any, path: tuple[str, ...] = ()) -> dict[str, list[list[Any]]]:
    """Every leaf command's path (``"data check"``) and its sorted parameters, each as
    ``[name, sorted option strings, "option" or "argument"]``, as the snapshot stores them."""
    if hasattr(command, "commands"):
        found: dict[str, list[list[Any]]] = {}
        for name, sub in sorted(command.commands.items()):
            found |= walk(sub, (*path, name))
        return found
    return {" ".join(path): sorted([p.name, sorted(p.opts + p.secondary_opts), p.param_type_name]
                                   for p in command.params)}


def differences(expected: dict[str, Any], found: dict[str, Any]) -> list[str]:
    """What ``found`` has that ``expected`` does not, and the other way round."""
    problems = [f"missing command: {path}" for path in sorted(expected.keys() - found.keys())]
    problems += [f"unexpected command: {path}" for path in sorted(found.keys() - expected.keys())]
    for path in sorted(expected.keys() & found.keys()):
        if found[path] != expected[path]:
            problems.append(f"{path}: parameters {found[path]} != snapshot {expected[path]}")
    return problems


def test_the_command_tree_matches_the_snapshot() -> None:
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert differences(expected, walk(typer.main.get_command(app))) == []


def test_the_comparison_catches_a_new_a_missing_and_a_renamed_option() -> None:
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    found = walk(typer.main.get_command(app))
    assert differences(expected, found) == [] and "setup" in found and "score" in found
    assert differences(expected, {**found, "serve setup": []}) == ["unexpected command: serve setup"]
    assert differences(expected, {k: v for k, v in found.items() if k != "tune"}) == ["missing command: tune"]
    renamed = {**found, "search": [p if p[0] != "k" else ["k", ["--k"], "option"] for p in found["search"]]}
    assert [line.split(":")[0] for line in differences(expected, renamed)] == ["search"]


def test_the_tree_loads_without_the_heavy_layers() -> None:
    """Building the whole tree (what ``perspectrum --help`` does) imports no model library,
    web framework, or the eval, train and serve layers: every command imports them when run."""
    heavy = ("torch", "transformers", "sentence_transformers", "fastapi", "uvicorn", "ray",
             "perspectrum.eval", "perspectrum.train", "perspectrum.serve")
    code = ("import sys, typer.main\nfrom perspectrum.cli.app import app\ntyper.main.get_command(app)\n"
            f"print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in {heavy!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    SNAPSHOT.write_text(json.dumps(walk(typer.main.get_command(app)), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
