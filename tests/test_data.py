"""Loading, validation failures and download, on the tiny fixture (never the real data)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from perspectrum import data
from perspectrum.data import CLAIMS_FILE, EVIDENCE_FILE, SPLIT_FILE, Pool, download, load_dataset
from perspectrum.errors import PerspectrumError

from .conftest import CLAIMS, EVIDENCE, PERSPECTIVES, checksums_of


def test_loads_typed_records(dataset) -> None:
    assert len(dataset.claims) == len(CLAIMS)
    assert len(dataset.perspectives) == len(PERSPECTIVES)
    assert len(dataset.evidence) == len(EVIDENCE)
    counts = dataset.counts()
    assert (counts["train_claims"], counts["dev_claims"], counts["test_claims"]) == (6, 2, 2)
    zoo = dataset.claims[1]
    assert zoo.split == "train"
    assert zoo.clusters[0].pids == (1, 2) and zoo.clusters[0].stance == "UNDERMINE"
    assert zoo.gold_pids == frozenset({1, 2, 3})
    assert [c.cid for c in dataset.split("test")] == [9, 10]


def test_unknown_split_is_a_clear_error(dataset) -> None:
    with pytest.raises(PerspectrumError, match="unknown split 'valid'"):
        dataset.split("valid")


def test_verification_passes_for_matching_sums(data_dir: Path, monkeypatch) -> None:
    monkeypatch.setattr(data, "CHECKSUMS", checksums_of(data_dir))
    assert len(load_dataset(data_dir).claims) == len(CLAIMS)


def test_wrong_checksum_names_the_file(data_dir: Path) -> None:
    # the fixture is not the release, so its sums differ from the v1.0 ones the project keeps
    with pytest.raises(PerspectrumError, match=r"checksum mismatch for .*\.json.*--no-verify"):
        load_dataset(data_dir)


def test_missing_folder_and_missing_file(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(PerspectrumError, match="does not exist"):
        load_dataset(tmp_path / "nowhere", verify=False)
    (data_dir / EVIDENCE_FILE).unlink()
    with pytest.raises(PerspectrumError, match=f"missing data file .*{EVIDENCE_FILE}"):
        load_dataset(data_dir, verify=False)


def test_no_folder_given_points_to_the_env_var(monkeypatch) -> None:
    monkeypatch.delenv("PERSPECTRUM_DATA", raising=False)
    with pytest.raises(PerspectrumError, match="PERSPECTRUM_DATA"):
        load_dataset(None)


def test_env_var_is_used(data_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("PERSPECTRUM_DATA", str(data_dir))
    assert len(load_dataset(verify=False).claims) == len(CLAIMS)


def test_malformed_json_names_the_file(data_dir: Path) -> None:
    (data_dir / CLAIMS_FILE).write_text('[{"cId": 1,', encoding="utf-8")
    with pytest.raises(PerspectrumError, match=f"malformed JSON in .*{CLAIMS_FILE}"):
        load_dataset(data_dir, verify=False)


@pytest.mark.parametrize("line, reason", [
    ('{not json', "Expecting property name enclosed in double quotes at column 2"),
    ('{"id": 2, "text": "a\x01b"}', "Invalid control character at column 21"),
    ('{"id": 2, "text": "a\rb"}', "Invalid control character at column 21"),  # "\r" alone ends no JSON line
    ('{"id": 2, "text": "ab"', "Expecting ',' delimiter at column 23"),
])
def test_a_pool_line_that_is_not_json_names_line_column_and_reason(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "pool.jsonl"
    path.write_text(f'{{"id": 1, "text": "a"}}\n\n{line}\n', encoding="utf-8", newline="")
    with pytest.raises(PerspectrumError) as caught:
        Pool.from_jsonl(path, "perspectives")
    assert str(caught.value) == f"{path}, line 3: not valid JSON: {reason}"


def test_malformed_record_names_file_and_position(data_dir: Path) -> None:
    rows = json.loads((data_dir / EVIDENCE_FILE).read_text())
    del rows[3]["text"]
    (data_dir / EVIDENCE_FILE).write_text(json.dumps(rows))
    with pytest.raises(PerspectrumError, match=f"malformed record #3 in .*{EVIDENCE_FILE}"):
        load_dataset(data_dir, verify=False)


def test_bad_stance_and_unknown_split_value(data_dir: Path) -> None:
    claims = json.loads((data_dir / CLAIMS_FILE).read_text())
    claims[0]["perspectives"][0]["stance_label_3"] = "MAYBE"
    (data_dir / CLAIMS_FILE).write_text(json.dumps(claims))
    with pytest.raises(PerspectrumError, match="malformed record #0"):
        load_dataset(data_dir, verify=False)
    (data_dir / SPLIT_FILE).write_text(json.dumps({"1": "holdout"}))
    with pytest.raises(PerspectrumError, match=f"malformed data in .*{SPLIT_FILE}"):
        load_dataset(data_dir, verify=False)


def test_dangling_perspective_id_is_caught(data_dir: Path) -> None:
    claims = json.loads((data_dir / CLAIMS_FILE).read_text())
    claims[0]["perspectives"][0]["pids"].append(999)
    (data_dir / CLAIMS_FILE).write_text(json.dumps(claims))
    with pytest.raises(PerspectrumError, match="cites perspective 999"):
        load_dataset(data_dir, verify=False)


def test_pool_fingerprint_follows_content(dataset) -> None:
    pool = Pool.from_dataset(dataset, "perspectives")
    assert pool.ids == tuple(sorted(PERSPECTIVES))
    changed = Pool(pool.name, pool.ids, (pool.texts[0] + "!",) + pool.texts[1:])
    assert changed.fingerprint != pool.fingerprint
    assert Pool(pool.name, pool.ids, pool.texts).fingerprint == pool.fingerprint
    with pytest.raises(PerspectrumError, match="unknown pool"):
        Pool.from_dataset(dataset, "claims")


def test_download_verifies_and_writes_every_file(data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(data, "CHECKSUMS", checksums_of(data_dir))
    written = download(tmp_path / "got", base_url=data_dir.as_uri() + "/")
    assert sorted(p.name for p in written) == sorted(data.CHECKSUMS)
    assert all((tmp_path / "got" / name).read_bytes() == (data_dir / name).read_bytes() for name in data.CHECKSUMS)


def test_download_with_wrong_content_leaves_nothing(data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "got"
    with pytest.raises(PerspectrumError, match="checksum mismatch"):
        download(target, base_url=data_dir.as_uri() + "/")
    assert list(target.iterdir()) == []


def test_download_without_network_fails_in_one_line(tmp_path: Path) -> None:
    # port 9 (discard) on loopback: nothing listens, so the connection is refused at once
    with pytest.raises(PerspectrumError, match="cannot download http://127.0.0.1:9/") as info:
        download(tmp_path / "got", base_url="http://127.0.0.1:9/", timeout=5)
    assert "\n" not in str(info.value)


@pytest.mark.skipif(not os.environ.get("PERSPECTRUM_DATA"), reason="PERSPECTRUM_DATA not set")
def test_real_release_counts() -> None:
    """Where the real v1.0 files are present (CI), they verify and give the published counts."""
    counts = load_dataset().counts()
    assert (counts["claims"], counts["perspectives"], counts["evidence"]) == (907, 11112, 8092)
    assert (counts["train_claims"], counts["dev_claims"], counts["test_claims"]) == (541, 139, 227)
    assert (counts["test_clusters"], counts["test_pairs"]) == (1204, 2773)
