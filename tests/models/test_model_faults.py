"""Shipped and installed models under faults: never a silent fall-back, never other answers unsaid.

The shipped set's checks (sums, card, base, scores on fixed pairs) run on a copy of the
package's own shipped models, damaged one way at a time; the cross-encoders that need their
base are composed one at a time on MiniLM (the relevance and equivalence models' base, which
a package carries), never on MPNet. Every refusal is one line naming the model. The
``models install`` cases use the small fake bundles of ``test_bundle``: data checksums of
kept and bundled models, what older versions left, and a download that crawls.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perspectrum import integrity
from perspectrum.cli.app import app
from perspectrum.encoders.base_models import MINILM
from perspectrum.encoders.cross_encoder import META_FILE
from perspectrum.errors import PerspectrumError
from perspectrum.integrity import CARD
from perspectrum.models import bundle as bundles
from perspectrum.models import shipped as shipping
from perspectrum.models.bundle import export_models, install_models
from perspectrum.models.store import render_card
from tests.models.test_bundle import (CHECKSUM, _hidden, _manifest_change, fake_models, rewrite, snapshot,
                                      stance_only, trickle)

TASKS = ("relevance", "stance", "equivalence", "evidence")


# ------------------------------------------------------------------ the shipped set, damaged
@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the package's shipped models that the test may damage, named by ``$PERSPECTRUM_SHIPPED``."""
    monkeypatch.delenv(shipping.SOURCE_ENV, raising=False)
    copy = Path(shutil.copytree(shipping.source(), tmp_path / "shipped"))
    monkeypatch.setenv(shipping.SOURCE_ENV, str(copy))
    return copy


def checked(origin: Path) -> str | None:
    """Run every check unpacking makes before it composes a model (the manifest, then each
    model's sums and card): ``None`` when all pass, else the one-line refusal."""
    try:
        shipping.check_manifest(origin)
        for task in TASKS:
            shipping._sealed_files(origin / task, task)
    except PerspectrumError as exc:
        assert "\n" not in str(exc)
        return str(exc)
    return None


def unpack_one(origin: Path, task: str, models_dir: Path) -> str | None:
    """Unpack one shipped cross-encoder (sums, card, base, scores on the fixed pairs) into
    ``models_dir``: ``None`` when it unpacked, else the one-line refusal."""
    target = models_dir / task
    try:
        shipping._unpack_task(task, origin / task, target, models_dir)
    except PerspectrumError as exc:
        assert "\n" not in str(exc)
        return str(exc)
    assert (target / META_FILE).is_file()
    return None


def reseal(folder: Path, meta_changes: dict | None = None) -> None:
    """Record a changed model folder's sums (and its meta's in the manifest), with its meta
    changed by ``meta_changes`` and its card rewritten to match: a forged, self-consistent folder."""
    meta = {**json.loads((folder / META_FILE).read_text()), **(meta_changes or {})}
    meta["files"] = integrity.record(folder, skip=(META_FILE, CARD))
    (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    try:
        card = shipping.shipped_card(meta) if "shipped" in meta else render_card(meta)
    except KeyError:  # no card renders for a base perspectrum does not know: the old one stays
        pass
    else:
        (folder / CARD).write_text(card, encoding="utf-8")
    manifest = folder.parent / shipping.MANIFEST
    listed = json.loads(manifest.read_text())
    listed["files"][f"{folder.name}/{META_FILE}"] = integrity.sha256_file(folder / META_FILE)
    manifest.write_text(json.dumps(listed))


def named(path: Path, origin: Path) -> str:
    """What a refusal about ``path`` must name: its model, or the shipped models as a whole."""
    return path.parent.name if path.parent != origin else "shipped models"


def test_the_package_passes_every_check_and_its_cards_read_as_their_metas(package_copy: Path) -> None:
    assert checked(package_copy) is None
    for task in TASKS:  # the card check compares each card with its meta's rendering
        meta = json.loads((package_copy / task / META_FILE).read_text())
        rendered = shipping.shipped_card(meta) if task != "evidence" else render_card(meta)
        assert (package_copy / task / CARD).read_text(encoding="utf-8") == rendered


def test_a_flipped_byte_anywhere_in_the_shipped_set_is_refused_naming_its_model(package_copy: Path) -> None:
    """Each file (differences, heads, configs, tokenizers, metas, cards, sums, settings), a byte
    flipped at its start, middle and end in turn: refused in one line naming the model; the
    card too (it says what the model is, so a changed card is a damaged model)."""
    files = sorted(p for p in package_copy.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {shipping.DELTA_FILE, CARD, META_FILE, "ranker.npz", "config.json",
                                      shipping.MANIFEST, "pipeline.json"}
    for path in files:
        original = path.read_bytes()
        for at in (0, len(original) // 2, len(original) - 1):
            changed = bytearray(original)
            changed[at] ^= 0x01
            path.write_bytes(bytes(changed))
            try:
                refused = checked(package_copy)
                assert refused is not None, (path, at)
                assert named(path, package_copy) in refused and "damaged" in refused, (path, refused)
            finally:
                path.write_bytes(original)
    assert checked(package_copy) is None


def test_a_missing_shipped_file_is_refused_naming_its_model(package_copy: Path) -> None:
    for path in sorted(p for p in package_copy.rglob("*") if p.is_file()):
        hidden = path.with_name(path.name + ".away")
        path.rename(hidden)
        try:
            refused = checked(package_copy)
            assert refused is not None and ("missing" in refused or "no shipped models" in refused), (path, refused)
            assert named(path, package_copy) in refused or path.name == shipping.MANIFEST, (path, refused)
        finally:
            hidden.rename(path)


def test_a_card_or_meta_from_another_model_is_refused(package_copy: Path) -> None:
    card = package_copy / "relevance" / CARD
    original = card.read_bytes()
    shutil.copy2(package_copy / "equivalence" / CARD, card)  # another model's card
    refused = checked(package_copy)
    assert refused is not None and "shipped relevance model is damaged" in refused and "card" in refused
    card.write_bytes(original)
    # the equivalence model's meta in relevance's folder, with the sums forged to match
    shutil.copy2(package_copy / "equivalence" / META_FILE, package_copy / "relevance" / META_FILE)
    reseal(package_copy / "relevance")
    refused = checked(package_copy)
    assert refused is not None and "relevance" in refused and "'equivalence' model, not 'relevance'" in refused


def test_a_card_naming_a_base_perspectrum_does_not_know_is_one_line(package_copy: Path, tmp_path: Path) -> None:
    reseal(package_copy / "relevance", {"base_model": "someone/another-encoder"})
    for refused in (checked(package_copy), unpack_one(package_copy, "relevance", tmp_path / "models")):
        assert refused is not None and "shipped relevance model is damaged" in refused and "card" in refused
    assert not (tmp_path / "models" / "relevance").exists()


@pytest.mark.slow
def test_a_card_from_another_base_model_is_refused(package_copy: Path, tmp_path: Path) -> None:
    """The stance model (a difference over MPNet) carded as a MiniLM model, sums forged to
    match: its difference names weights MiniLM does not have, so it does not fit."""
    reseal(package_copy / "stance", {"base_model": MINILM})
    refused = unpack_one(package_copy, "stance", tmp_path / "models")
    assert refused is not None and "shipped stance model does not fit its base" in refused
    assert "another base" in refused and not (tmp_path / "models" / "stance").exists()


def _delta(folder: Path) -> tuple[dict, list]:
    from safetensors.torch import load_file, safe_open

    path = folder / shipping.DELTA_FILE
    with safe_open(str(path), "pt") as handle:
        names = [tuple(n) for n in json.loads(handle.metadata()["names"])]
    return load_file(str(path)), names


@pytest.mark.slow
def test_a_difference_that_loads_but_leaves_the_base_untrained_is_refused(package_copy: Path,
                                                                          tmp_path: Path) -> None:
    """Each loads on MiniLM with every weight accounted for; only the scores on the fixed
    pairs (``check_pairs``) tell them from the packed model, and they refuse each."""
    import torch

    from perspectrum.encoders.base_models import base_folder
    from perspectrum.models.deltas import base_weights
    from perspectrum.train.pack import write_delta

    folder = package_copy / "relevance"
    assert unpack_one(package_copy, "relevance", tmp_path / "good") is None  # as shipped: it unpacks
    tensors, names = _delta(folder)
    base = base_weights(base_folder(MINILM, tmp_path))
    # a difference of zeros: every change zero, every stored weight the base's own, the head zero
    untrained = {}
    for key, value in tensors.items():
        name = key.split("/", 1)[1]
        source = dict(names).get(name)
        if key.startswith("full/") and source in base:
            untrained[key] = base[source].clone()
        elif key.endswith("/scale"):
            untrained[key] = value
        else:
            untrained[key] = torch.zeros_like(value)
    write_delta(folder / shipping.DELTA_FILE, untrained, names)
    reseal(folder)
    refused = unpack_one(package_copy, "relevance", tmp_path / "zeros")
    assert refused is not None and "shipped relevance model scores" in refused and "not the recorded" in refused
    # another model's difference on the same base (equivalence's), its sums forged to match
    shutil.copy2(package_copy / "equivalence" / shipping.DELTA_FILE, folder / shipping.DELTA_FILE)
    reseal(folder)
    refused = unpack_one(package_copy, "relevance", tmp_path / "other")
    assert refused is not None and "shipped relevance model scores" in refused
    assert not (tmp_path / "zeros" / "relevance").exists() and not (tmp_path / "other" / "relevance").exists()


@pytest.mark.slow
def test_a_refused_shipped_set_leaves_nothing_unpacked_to_fall_back_on(package_copy: Path, tmp_path: Path) -> None:
    """Through :func:`shipping.unpack`: a damaged set writes no ``shipped/`` folder, so the
    pipeline's readiness check names why, and nothing weaker answers in its place."""
    card = package_copy / "stance" / CARD
    card.write_text(card.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(PerspectrumError, match="shipped stance model is damaged") as refused:
        shipping.unpack(tmp_path / "models")
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "models" / shipping.FOLDER).exists()
    assert shipping.unprepared(tmp_path / "models") == f"the shipped models are not unpacked in " \
                                                       f"{tmp_path / 'models' / shipping.FOLDER}"


# ------------------------------------------------------------------ models install
def test_a_bundle_whose_models_were_trained_on_other_data_than_its_manifest_says_is_refused(
        tmp_path: Path) -> None:
    installed = fake_models(tmp_path / "mine")
    before = snapshot(installed)
    team = fake_models(tmp_path / "team")
    export_models(team, tmp_path / "bundle.tar.gz", CHECKSUM)
    other = json.dumps({"task": "stance", "base_model": "m", "data_checksum": "b" * 64}).encode()

    def forged(name: str, body: bytes) -> bytes:
        import hashlib

        if name == "stance/perspectrum.json":
            return other
        return _manifest_change(lambda m: (m["files"].update({"stance/perspectrum.json": hashlib.sha256(
            other).hexdigest()}), m["sizes"].update({"stance/perspectrum.json": len(other)})))(name, body)

    bundle = rewrite(tmp_path / "bundle.tar.gz", tmp_path / "forged.tar.gz", forged)
    with pytest.raises(PerspectrumError, match="bundle's stance model was trained on other data") as refused:
        install_models(str(bundle), installed, CHECKSUM)
    assert "\n" not in str(refused.value)
    assert snapshot(installed) == before and _hidden(installed) == []


def test_installed_models_kept_beside_a_bundle_must_share_its_data(tmp_path: Path) -> None:
    installed = fake_models(tmp_path / "mine")
    meta = installed / "relevance" / META_FILE
    meta.write_text(meta.read_text().replace(CHECKSUM, "c" * 64))  # trained on other data
    before = snapshot(installed)
    export_models(stance_only(tmp_path / "team"), tmp_path / "stance.tar.gz", CHECKSUM)
    with pytest.raises(PerspectrumError, match="installed relevance model, which the bundle does not replace, "
                                               "was trained on other data") as refused:
        install_models(str(tmp_path / "stance.tar.gz"), installed, CHECKSUM)
    assert "--replace" in str(refused.value) and "\n" not in str(refused.value)
    assert snapshot(installed) == before and _hidden(installed) == []
    done = install_models(str(tmp_path / "stance.tar.gz"), installed, CHECKSUM, replace=True)
    assert "relevance" in done["removed"] and not (installed / "relevance").exists()


def test_download_folders_older_versions_left_are_tidied(tmp_path: Path) -> None:
    installed = fake_models(tmp_path / "mine")
    export_models(fake_models(tmp_path / "team"), tmp_path / "bundle.tar.gz", CHECKSUM)
    stale = time.time() - bundles.OLD_LEFTOVER_SECONDS - 60

    def left(name: str, files: dict[str, bytes], age: float | None) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for file, body in files.items():
            (folder / file).write_bytes(body)
            if age is not None:
                os.utime(folder / file, (age, age))
        if age is not None:
            os.utime(folder, (age, age))
        return folder

    old = left(".bundle-k3j2", {"bundle.tar.gz": b"half a download"}, stale)
    empty = left(".bundle-7q1x", {}, stale)
    growing = left(".bundle-live", {"bundle.tar.gz": b"a download still arriving"}, None)
    foreign = left(".bundle-mine", {"notes.txt": b"someone's own file"}, stale)
    install_models(str(tmp_path / "bundle.tar.gz"), installed, CHECKSUM)
    assert not old.exists() and not empty.exists()
    assert (growing / "bundle.tar.gz").is_file() and (foreign / "notes.txt").is_file()


def test_a_crawling_download_is_abandoned_at_the_speed_floor(tmp_path: Path) -> None:
    installed = fake_models(tmp_path / "mine")
    before = snapshot(installed)
    # a byte every 0.05 s for up to 200 bytes (10 s): the floor of 1,000 bytes a second over
    # 0.3 s stops it after the first window (the deadline, an hour, is far away)
    with trickle(announce=10_000, every=0.05, most=200) as url:
        with pytest.raises(PerspectrumError, match=r"fewer than 1,000 bytes a second over 0.3 s") as refused:
            install_models(url, installed, CHECKSUM, speed_limit=1000, speed_time=0.3)
    assert "\n" not in str(refused.value)
    assert snapshot(installed) == before and _hidden(installed) == []
    # a server that sends its headers and then nothing: the read waits one window, not a minute
    with trickle(announce=10_000, every=5, most=2) as url:  # one byte, then silence
        with pytest.raises(PerspectrumError, match="fewer than 1,000 bytes a second over 0.3 s"):
            install_models(url, installed, CHECKSUM, speed_limit=1000, speed_time=0.3)
    assert snapshot(installed) == before and _hidden(installed) == []


def test_the_speed_floor_lets_a_download_that_keeps_up_through(tmp_path: Path) -> None:
    installed = fake_models(tmp_path / "mine")
    team = fake_models(tmp_path / "team")
    (team / "relevance" / "model.safetensors").write_bytes(b"the team's relevance model")
    export_models(team, tmp_path / "bundle.tar.gz", CHECKSUM)
    from tests.models.test_bundle import serve

    with serve((tmp_path / "bundle.tar.gz").read_bytes()) as url:
        install_models(url, installed, CHECKSUM, speed_limit=1000, speed_time=0.3)
    assert snapshot(installed) == snapshot(team)
    with pytest.raises(PerspectrumError, match="speed limit"):
        install_models(url, installed, CHECKSUM, speed_limit=-1)


def test_cli_install_takes_the_speed_floor_and_says_why_it_gave_up(tmp_path: Path, data_dir: Path) -> None:
    from perspectrum.cli import models as cli_models

    assert (cli_models.LOW_SPEED_LIMIT, cli_models.LOW_SPEED_SECONDS) == (bundles.LOW_SPEED_LIMIT,
                                                                          bundles.LOW_SPEED_SECONDS)
    installed = fake_models(tmp_path / "mine")
    before = snapshot(installed)
    with trickle(announce=10_000, every=0.05, most=200) as url:
        result = CliRunner().invoke(app, ["models", "install", url, "--models-dir", str(installed), "--data-dir",
                                          str(data_dir), "--speed-limit", "1000", "--speed-time", "0.3"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "Traceback" not in result.output, result.output
    assert len(errors) == 1 and "fewer than 1,000 bytes a second over 0.3 s" in errors[0], result.output
    assert snapshot(installed) == before
