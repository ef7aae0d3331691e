"""The command tree stays as it was: every command path with its parameters (name, option
strings, argument or option), compared with the snapshot taken before the CLI was split
into one module per command (``tests/fixtures/cli_tree.json``).

Only the commands in :data:`NEW` may appear beyond the snapshot (they are being added
elsewhere); the test passes with or without them and fails on any other difference.
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
#: Command paths that may be added to the tree without a new snapshot.
NEW = {"setup", "score"}


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
    """What ``found`` has that ``expected`` does not, and the other way round; a path in
    :data:`NEW` may be present (with any parameters) or not."""
    problems = [f"missing command: {path}" for path in sorted(expected.keys() - found.keys())]
    problems += [f"unexpected command: {path}" for path in sorted(found.keys() - expected.keys() - NEW)]
    for path in sorted(expected.keys() & found.keys()):
        if found[path] != expected[path]:
            problems.append(f"{path}: parameters {found[path]} != snapshot {expected[path]}")
    return problems


def test_the_command_tree_matches_the_snapshot() -> None:
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert NEW.isdisjoint(expected)
    assert differences(expected, walk(typer.main.get_command(app))) == []


def test_only_the_new_commands_may_be_added() -> None:
    """The comparison lets ``setup`` and ``score`` in, and catches anything else."""
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    found = walk(typer.main.get_command(app))
    assert differences(expected, {**found, "setup": [], "score": [["x", ["--x"], "option"]]}) == []
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
