"""The package's layer contract, read from the code: every import of every module (imports
inside functions too) goes to the same layer or one below it, and no chain of imports
between files comes back to where it started.

Layers, bottom to top (``docs/architecture.md`` draws them):

foundation (``errors``, ``_checks``, ``_progress``, ``_io``, ``_memory``, ``config``, ``folders``, ``integrity``, ``_version``)
→ text and data → encoders → index → models → pipeline → batch → eval → train → serve → cli.

``perspectrum/__init__.py`` is the public face: it may re-export from up to the pipeline,
never from batch, eval, train, serve or cli, so ``import perspectrum`` stays the runtime.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import perspectrum

ROOT = Path(perspectrum.__file__).parent
LAYERS = ["foundation", "text", "encoders", "index", "models", "pipeline", "batch", "eval", "train", "serve", "cli"]
FOUNDATION = {"errors", "_checks", "_progress", "_io", "config", "folders", "integrity", "_version", "_memory"}
#: Packages only the layers above the runtime may import.
ABOVE_RUNTIME = ("perspectrum.batch", "perspectrum.eval", "perspectrum.train", "perspectrum.serve", "perspectrum.cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def layer(module: str) -> int | None:
    """The layer of a module (``None`` for the package's own ``__init__``/``__main__``)."""
    parts = module.split(".")[1:]
    if not parts or parts == ["__main__"]:
        return None
    head = parts[0]
    if head in FOUNDATION:
        return 0
    if head == "data":
        return LAYERS.index("text")
    return LAYERS.index(head)


def imports(module: str) -> set[str]:
    """The perspectrum modules ``module`` imports, anywhere in its file."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from perspectrum.x import y` may name a module y or a name y of module x
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != module}
    return found


GRAPH = {m: imports(m) for m in MODULES}


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        assert module == "perspectrum" or module.endswith("__main__") or layer(module) is not None, module


def test_no_import_reaches_a_higher_layer() -> None:
    offences = []
    for module, targets in GRAPH.items():
        own = layer(module)
        if own is None:
            continue
        for target in sorted(targets):
            theirs = layer(target)
            if theirs is not None and theirs > own:
                offences.append(f"{module} ({LAYERS[own]}) imports {target} ({LAYERS[theirs]})")
    assert offences == [], "\n".join(offences)


def test_the_public_face_is_the_runtime() -> None:
    assert not [t for t in GRAPH["perspectrum"] if t.startswith(ABOVE_RUNTIME)]
    code = "import sys, perspectrum; print(sorted(m for m in sys.modules if m.startswith(%r)))" % (ABOVE_RUNTIME,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _cycle() -> list[str] | None:
    """One import cycle between files, as the chain that closes it, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_cycle_between_files() -> None:
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_checks_catch_what_they_guard(monkeypatch) -> None:
    """The contract's own checks fail on a planted upward import and a planted cycle."""
    cyclic = {**GRAPH, "perspectrum.errors": {"perspectrum._io"}, "perspectrum._io": {"perspectrum.errors"}}
    monkeypatch.setitem(globals(), "GRAPH", cyclic)
    assert _cycle() in (["perspectrum._io", "perspectrum.errors", "perspectrum._io"],
                        ["perspectrum.errors", "perspectrum._io", "perspectrum.errors"])
    with_upward = {**GRAPH, "perspectrum.errors": {"perspectrum.cli.app"}}
    monkeypatch.setitem(globals(), "GRAPH", with_upward)
    try:
        test_no_import_reaches_a_higher_layer()
    except AssertionError as exc:
        assert "perspectrum.errors (foundation) imports perspectrum.cli.app (cli)" in str(exc)
    else:
        raise AssertionError("an upward import was not caught")
