"""Sharing models: list, export → install round trips (path, file:// and loopback HTTP), and
every refusal (damaged, tampered, truncated, other data, other version) leaving the installed
models exactly as they were."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perspectrum import Pipeline
from perspectrum.models.bundle import MANIFEST, export_models, install_models, inventory
from perspectrum.cli.app import app
from perspectrum.data import data_checksum
from perspectrum.errors import PerspectrumError
from perspectrum.models.scorers import models_present

runner = CliRunner()
CHECKSUM = "a" * 64


def fake_models(root: Path, checksum: str = CHECKSUM) -> Path:
    """A models folder with the bundle's layout (no real weights: sums and swaps are the point)."""
    for task in ("relevance", "stance", "equivalence", "evidence"):
        (root / task).mkdir(parents=True)
        (root / task / "perspectrum.json").write_text(json.dumps(
            {"task": task, "base_model": "m", "data_checksum": checksum, "dev": {"f1": 50.0}}))
        (root / task / "model.safetensors").write_bytes(task.encode() * 1000)
    (root / "evidence" / "ranker.npz").write_bytes(b"ranker")
    (root / "stance" / "members" / "seed-14").mkdir(parents=True)
    (root / "stance" / "members" / "seed-14" / "model.safetensors").write_bytes(b"member")
    (root / "pipeline.json").write_text(json.dumps({"settings": {}}))
    (root / "base" / "mpnet").mkdir(parents=True)  # local, never bundled
    (root / "base" / "mpnet" / "config.json").write_text("{}")
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _hidden(root: Path) -> list[str]:
    """What lies hidden beside ``root`` besides its writers' lock and the version it links to."""
    return sorted(p.name for p in root.parent.iterdir()
                  if p.name.startswith(".") and not p.name.endswith(".lock") and p != root.resolve())


def rewrite(bundle: Path, out: Path, change) -> Path:
    """Copy a bundle, passing each (name, bytes) through ``change`` (``None`` drops it)."""
    with tarfile.open(bundle, "r:gz") as source, tarfile.open(out, "w:gz") as target:
        for member in source.getmembers():
            changed = change(member.name, source.extractfile(member).read())
            if changed is not None:
                info = tarfile.TarInfo(member.name)
                info.size = len(changed)
                target.addfile(info, io.BytesIO(changed))
    return out


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    models = fake_models(tmp_path / "team")
    export_models(models, tmp_path / "bundle.tar.gz", CHECKSUM)
    return tmp_path / "bundle.tar.gz"


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """Models already installed on the user's machine, which every refused install must keep."""
    root = fake_models(tmp_path / "mine", checksum=CHECKSUM)
    (root / "relevance" / "model.safetensors").write_bytes(b"my own relevance model")
    return root


def test_inventory_names_the_system_and_sizes(tmp_path: Path) -> None:
    assert inventory(tmp_path / "none")["system"] == "shipped (unpacked by perspectrum setup)"
    found = inventory(fake_models(tmp_path / "m"))
    assert found["system"] == "trained"
    by_name = {e["name"]: e for e in found["entries"]}
    assert set(by_name) == {"relevance", "stance", "equivalence", "evidence", "pipeline.json"}
    assert by_name["stance"]["size_bytes"] == len("stance" * 1000) + len(b"member") + len(
        (tmp_path / "m" / "stance" / "perspectrum.json").read_bytes())
    assert by_name["evidence"]["data_checksum"] == CHECKSUM


def test_export_lists_every_file_with_its_sum_and_leaves_local_files_out(bundle: Path, tmp_path: Path) -> None:
    with tarfile.open(bundle) as archive:
        names = set(archive.getnames())
        manifest = json.loads(archive.extractfile(MANIFEST).read())
    assert names == {MANIFEST, *manifest["files"]}
    assert "stance/members/seed-14/model.safetensors" in names and not any(n.startswith("base/") for n in names)
    source = tmp_path / "team" / "evidence" / "ranker.npz"
    assert manifest["files"]["evidence/ranker.npz"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert manifest["data_checksum"] == CHECKSUM and manifest["system"] == "trained"


def test_export_refuses_models_trained_on_other_data(tmp_path: Path) -> None:
    with pytest.raises(PerspectrumError, match="other data"):
        export_models(fake_models(tmp_path / "m"), tmp_path / "b.tar.gz", "b" * 64)
    with pytest.raises(PerspectrumError, match="nothing to export"):
        export_models(tmp_path / "empty", tmp_path / "b.tar.gz", CHECKSUM)
    assert not (tmp_path / "b.tar.gz").exists()


def test_install_replaces_the_models_and_keeps_local_files(bundle: Path, installed: Path, tmp_path: Path) -> None:
    install_models(str(bundle), installed, CHECKSUM)
    assert snapshot(installed) == snapshot(tmp_path / "team")  # the team's models, and the local base kept
    install_models(bundle.resolve().as_uri(), tmp_path / "fresh" / "models", CHECKSUM)  # file:// into a new folder
    assert snapshot(tmp_path / "fresh" / "models") == {k: v for k, v in snapshot(installed).items()
                                                      if not k.startswith("base/")}


@pytest.mark.parametrize("damage, message", [
    ("corrupt", "damaged or truncated"),
    ("wrong-sum", "does not match its SHA-256"),
    ("extra-file", "does not list"),
    ("escape", "outside the models' folders"),
    ("other-data", "other data"),
    ("other-version", "cannot use"),
    ("no-manifest", "no manifest.json"),
])
def test_refused_bundles_leave_the_installed_models_intact(bundle: Path, installed: Path, tmp_path: Path,
                                                           damage: str, message: str) -> None:
    before = snapshot(installed)
    bad = tmp_path / f"{damage}.tar.gz"
    if damage == "corrupt":
        data = bytearray(bundle.read_bytes())
        data[len(data) // 2: len(data) // 2 + 64] = b"\x00" * 64
        bad.write_bytes(bytes(data))
    elif damage == "wrong-sum":
        rewrite(bundle, bad, lambda n, b: b[:-1] + b"!" if n == "evidence/ranker.npz" else b)  # same size
    elif damage == "extra-file":
        _append(bundle, bad, "stance/extra.bin", b"not in the manifest")
    elif damage == "escape":
        _append(bundle, bad, "../outside.txt", b"escape")
    else:
        def manifest(name: str, body: bytes) -> bytes | None:
            if name != MANIFEST:
                return body
            if damage == "no-manifest":
                return None
            data = json.loads(body)
            data.update({"other-data": {"data_checksum": "b" * 64},
                         "other-version": {"perspectrum_version": "9.0.0"}}[damage])
            return json.dumps(data).encode()
        rewrite(bundle, bad, manifest)
    with pytest.raises(PerspectrumError, match=message):
        install_models(str(bad), installed, CHECKSUM)
    assert snapshot(installed) == before
    # no leftovers: hidden beside it are only its writers' lock and the version it links to
    assert [p.name for p in installed.parent.iterdir()
            if p.name.startswith(".") and not p.name.endswith(".lock") and p != installed.resolve()] == []


def _append(bundle: Path, out: Path, name: str, body: bytes) -> None:
    """``bundle`` with one more member, ``name``, that its manifest does not list."""
    with tarfile.open(bundle, "r:gz") as source, tarfile.open(out, "w:gz") as target:
        for member in source.getmembers():
            target.addfile(member, source.extractfile(member))
        info = tarfile.TarInfo(name)
        info.size = len(body)
        target.addfile(info, io.BytesIO(body))


@contextmanager
def serve(body: bytes, announce: int | None = None) -> Iterator[str]:
    """A loopback HTTP server that sends ``body`` once per request, announcing ``announce`` bytes."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(200)
            self.send_header("Content-Length", str(announce if announce is not None else len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/models.tar.gz"
    finally:
        server.shutdown()
        server.server_close()


def test_install_over_http_and_a_truncated_download(bundle: Path, installed: Path, tmp_path: Path) -> None:
    before = snapshot(installed)
    data = bundle.read_bytes()
    with serve(data[: len(data) // 2], announce=len(data)) as url:
        with pytest.raises(PerspectrumError, match="truncated|broke off"):
            install_models(url, installed, CHECKSUM)
    assert snapshot(installed) == before
    with serve(data) as url:
        install_models(url, installed, CHECKSUM)
    assert snapshot(installed) == snapshot(tmp_path / "team")
    with pytest.raises(PerspectrumError, match="cannot install from ftp://"):
        install_models("ftp://example.invalid/b.tar.gz", installed, CHECKSUM)


def test_cli_round_trip_gives_identical_discover_output(trained_dir, tmp_path: Path) -> None:
    data, indexes, models = trained_dir
    out = tmp_path / "shared.tar.gz"
    common = ["--data-dir", str(data)]
    result = runner.invoke(app, ["models", "export", str(out), "--models-dir", str(models), *common])
    assert result.exit_code == 0, result.output
    fresh = tmp_path / "elsewhere" / "models"
    result = runner.invoke(app, ["models", "install", out.as_uri(), "--models-dir", str(fresh), *common])
    assert result.exit_code == 0, result.output
    listed = runner.invoke(app, ["models", "list", "--models-dir", str(fresh), "--json"])
    assert json.loads(listed.stdout)["system"] == "trained"
    claim = "Animals should have legal rights"
    answers = []
    for folder in (models, fresh):
        found = Pipeline.load(data, indexes, folder, verify=False).discover(claim).to_dict()
        found.pop("timings")
        answers.append(found)
    assert answers[0] == answers[1] and answers[0]["perspectives"]
    assert data_checksum(data) == json.loads((fresh / "relevance" / "perspectrum.json").read_text())["data_checksum"]


def test_cli_refusal_is_one_line(bundle: Path, data_dir: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["models", "install", str(bundle), "--models-dir", str(tmp_path / "m"),
                                 "--data-dir", str(data_dir)])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "other data" in result.output
    assert not (tmp_path / "m").exists()


def test_cli_list_shows_each_model_and_the_system(tmp_path: Path) -> None:
    result = runner.invoke(app, ["models", "list", "--models-dir", str(fake_models(tmp_path / "m"))],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "discover uses: trained" in result.output and "F1 50.0" in result.output
    assert all(task in result.output for task in ("relevance", "stance", "equivalence", "evidence"))


@contextmanager
def trickle(announce: int, every: float, most: int) -> Iterator[str]:
    """A loopback HTTP server that announces ``announce`` bytes, then sends one every ``every`` s
    (at most ``most``), as a stalled or hostile server does."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(200)
            self.send_header("Content-Length", str(announce))
            self.end_headers()
            try:
                for _ in range(most):
                    self.wfile.write(b"x")
                    time.sleep(every)
            except OSError:  # the client gave up
                pass
            self.close_connection = True

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/models.tar.gz"
    finally:
        server.shutdown()
        server.server_close()


def test_a_download_that_outlasts_its_deadline_is_stopped(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perspectrum.models import bundle as bundles

    before = snapshot(installed)
    monkeypatch.setattr(bundles, "DOWNLOAD_DEADLINE_SECONDS", 1.0, raising=False)
    with trickle(announce=10_000, every=0.25, most=40) as url:
        # not the deadline, the server's end would say "truncated" (40 of 10,000 bytes)
        with pytest.raises(PerspectrumError, match=r"gave up on the download of .* after 1 s"):
            install_models(url, installed, CHECKSUM)
    assert snapshot(installed) == before and _hidden(installed) == []


# ------------------------------------------------------------- issue 33: a hostile fault run
KILL_INSTALL = """
import os, sys
from perspectrum import _io
from perspectrum.models.bundle import install_models
_io.fault_hook = lambda name: os._exit(9) if name == sys.argv[1] else None
install_models(sys.argv[2], sys.argv[3], sys.argv[4])
"""


def _killed_install(step: str, bundle: Path, root: Path) -> None:
    """Run an install of ``bundle`` into ``root`` in a fresh process killed at ``step``."""
    from tests.test_reliability import python

    run = python(KILL_INSTALL, step, str(bundle), str(root), CHECKSUM)
    assert run.returncode == 9, run.stderr


@pytest.mark.parametrize("reader", ["list", "load"])
@pytest.mark.parametrize("step", ["write", "written", "moved aside", "swapped"])
def test_a_crash_at_any_step_of_install_leaves_the_old_or_the_new_models_findable(
        bundle: Path, installed: Path, tmp_path: Path, data_dir: Path, step: str, reader: str) -> None:
    old, new = snapshot(installed), snapshot(tmp_path / "team")
    _killed_install(step, bundle, installed)
    if reader == "list":
        result = runner.invoke(app, ["models", "list", "--models-dir", str(installed), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["system"] == "trained"
    else:  # what discover does first: resolve the folder and refuse one that cannot answer
        pipe = Pipeline.load(data_dir, tmp_path / "indexes", installed, verify=False)
        assert models_present(pipe.models_dir)
    assert snapshot(installed) in (old, new)
    install_models(str(bundle), installed, CHECKSUM)  # the next install completes, from either state
    assert snapshot(installed) == new and _hidden(installed) == []


def test_the_next_install_removes_what_an_interrupted_one_left(bundle: Path, installed: Path) -> None:
    _killed_install("written", bundle, installed)  # the download and the unpacked version are left behind
    assert any("bundle-" in name for name in _hidden(installed))
    install_models(str(bundle), installed, CHECKSUM)
    assert _hidden(installed) == []


def _manifest_change(change):
    def rewrite_manifest(name: str, body: bytes) -> bytes | None:
        if name != MANIFEST:
            return body
        data = json.loads(body)
        change(data)
        return json.dumps(data).encode()
    return rewrite_manifest


def test_a_bundle_without_the_files_its_models_need_is_refused(bundle: Path, installed: Path,
                                                               tmp_path: Path) -> None:
    before = snapshot(installed)
    empty = rewrite(bundle, tmp_path / "empty.tar.gz",
                    lambda n, b: _manifest_change(lambda m: m.update(files={}, sizes={}))(n, b)
                    if n == MANIFEST else None)
    with pytest.raises(PerspectrumError, match="lacks relevance/perspectrum.json, which its relevance model needs"):
        install_models(str(empty), installed, CHECKSUM)
    nothing = rewrite(bundle, tmp_path / "nothing.tar.gz",
                      lambda n, b: _manifest_change(lambda m: m.update(entries=[], files={}, sizes={}))(n, b)
                      if n == MANIFEST else None)
    with pytest.raises(PerspectrumError, match="names no models"):
        install_models(str(nothing), installed, CHECKSUM)
    assert snapshot(installed) == before and _hidden(installed) == []


def stance_only(root: Path) -> Path:
    """A models folder holding one model, stance (fake weights: sums and merges are the point)."""
    (root / "stance").mkdir(parents=True)
    (root / "stance" / "perspectrum.json").write_text(json.dumps({"task": "stance", "data_checksum": CHECKSUM}))
    (root / "stance" / "model.safetensors").write_bytes(b"a stance model of the team's")
    return root


def test_a_bundle_of_one_model_merges_by_model_unless_told_to_replace(installed: Path, tmp_path: Path) -> None:
    export_models(stance_only(tmp_path / "team"), tmp_path / "stance.tar.gz", CHECKSUM)
    before = snapshot(installed)
    result = install_models(str(tmp_path / "stance.tar.gz"), installed, CHECKSUM)
    assert result["kept"] == ["relevance", "equivalence", "evidence", "pipeline.json"]
    assert result["removed"] == []
    after = snapshot(installed)
    kept = {name: digest for name, digest in before.items() if not name.startswith("stance/")}
    assert after == {**kept, **snapshot(tmp_path / "team")}  # the other installed models are still there
    result = install_models(str(tmp_path / "stance.tar.gz"), installed, CHECKSUM, replace=True)
    assert result["removed"] == ["relevance", "equivalence", "evidence", "pipeline.json"]
    assert snapshot(installed) == {**snapshot(tmp_path / "team"),
                                   "base/mpnet/config.json": before["base/mpnet/config.json"]}


def test_cli_install_says_which_models_it_kept_and_replace_removes_them(installed: Path, tmp_path: Path,
                                                                        data_dir: Path) -> None:
    checksum = data_checksum(data_dir)
    for task in ("relevance", "stance", "equivalence", "evidence"):
        meta = installed / task / "perspectrum.json"
        meta.write_text(meta.read_text().replace(CHECKSUM, checksum))
    team = stance_only(tmp_path / "team")
    (team / "stance" / "perspectrum.json").write_text(json.dumps({"task": "stance", "data_checksum": checksum}))
    export_models(team, tmp_path / "stance.tar.gz", checksum)
    common = ["--models-dir", str(installed), "--data-dir", str(data_dir)]
    merged = runner.invoke(app, ["models", "install", str(tmp_path / "stance.tar.gz"), *common])
    assert merged.exit_code == 0, merged.output
    assert "kept relevance, equivalence, evidence, pipeline.json" in " ".join(merged.output.split())
    assert (installed / "relevance" / "perspectrum.json").is_file()
    replaced = runner.invoke(app, ["models", "install", str(tmp_path / "stance.tar.gz"), "--replace", *common])
    assert replaced.exit_code == 0, replaced.output
    assert "removed relevance, equivalence" in " ".join(replaced.output.split())
    assert not (installed / "relevance").exists() and (installed / "stance" / "model.safetensors").is_file()


def _bomb(bundle: Path, out: Path, zeros: int) -> Path:
    """``bundle`` with evidence/ranker.npz swapped for ``zeros`` zero bytes, its manifest unchanged."""
    with tarfile.open(bundle, "r:gz") as source, tarfile.open(out, "w:gz", compresslevel=1) as target:
        for member in source.getmembers():
            body = source.extractfile(member).read()
            if member.name == "evidence/ranker.npz":
                body = bytes(zeros)
            info = tarfile.TarInfo(member.name)
            info.size = len(body)
            target.addfile(info, io.BytesIO(body))
    return out


def test_a_decompression_bomb_is_refused_before_it_is_unpacked(bundle: Path, installed: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from perspectrum.models import bundle as bundles

    before = snapshot(installed)
    bomb = _bomb(bundle, tmp_path / "bomb.tar.gz", 32 << 20)
    assert bomb.stat().st_size < 200_000  # 32 MiB of zeros compress to a few dozen KB
    written = []
    real_open = Path.open

    def counting_open(self: Path, mode: str = "r", *args, **kwargs):  # what the installer writes
        handle = real_open(self, mode, *args, **kwargs)
        if "w" in mode and self.name == "ranker.npz":
            written.append(self)
        return handle

    monkeypatch.setattr(Path, "open", counting_open)
    with pytest.raises(PerspectrumError, match=r"evidence/ranker.npz in the bundle is 33,554,432 bytes, "
                                               r"not the 6 its manifest declares"):
        install_models(str(bomb), installed, CHECKSUM)
    monkeypatch.undo()
    assert written == [] and snapshot(installed) == before and _hidden(installed) == []
    monkeypatch.setattr(bundles, "MAX_UNPACKED_BYTES", 1000, raising=False)
    with pytest.raises(PerspectrumError, match=r"would unpack to [\d,]+ bytes, more than the 1,000 allowed"):
        install_models(str(bundle), installed, CHECKSUM)
    assert snapshot(installed) == before and _hidden(installed) == []


@pytest.mark.parametrize("body", [b"\x00\x00\xfe\xff\x00\x00\x00{", b"\xff\xfe{\x00", b"\x89PNG\r\n", b"{]"])
def test_a_garbage_manifest_is_not_a_perspectrum_bundle(bundle: Path, installed: Path, tmp_path: Path,
                                                         body: bytes) -> None:
    bad = rewrite(bundle, tmp_path / "garbage.tar.gz", lambda n, b: body if n == MANIFEST else b)
    with pytest.raises(PerspectrumError) as raised:
        install_models(str(bad), installed, CHECKSUM)
    assert str(raised.value) == f"{bad} is not a perspectrum bundle (its manifest is not UTF-8 JSON)"
