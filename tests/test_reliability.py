"""Never silently wrong: each case a hostile review found (issue 14), reproduced on the fixture.

Every test asserts one of two outcomes, a clear one-line error or the right answer, and
that nothing stored was lost: kills in the middle of a swap, one-bit flips in every kind
of artefact, ids with line separators, read-only and full folders, concurrent writers
with a reader, and pickles where perspectrum keeps its models.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from perspectrum import _io, integrity
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel
from perspectrum.data import Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.models import shipped as shipping
from perspectrum.models.store import load_ranker
from perspectrum.models.evidence_ranker import RANKER_FILE
from tests.conftest import write_dataset

ROOT = Path(__file__).resolve().parents[1]
PAIRS = [("Zoos should be banned", "Keeping animals in cages is cruel"), ("Tax fast food", "Obesity costs money")]


def python(code: str, *args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter at the repository root."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def flip(path: Path, bit: int) -> bytes:
    """Flip one bit of ``path`` (counted from the start, wrapping); return the old bytes."""
    data = path.read_bytes()
    changed = bytearray(data)
    changed[(bit // 8) % len(data)] ^= 1 << (bit % 8)
    path.write_bytes(bytes(changed))
    return data


def bits(path: Path, count: int = 3) -> list[int]:
    """``count`` bit positions of ``path``, spread over the file (seeded by its name)."""
    rng = np.random.default_rng(sum(path.name.encode()))
    return [int(b) for b in rng.integers(0, path.stat().st_size * 8, count)]


def leftovers(parent: Path, name: str) -> list[str]:
    """What sits beside ``name`` besides its link, the version it points at and its lock."""
    final = parent / name
    live = final.resolve().name if final.is_symlink() else None
    return sorted(p.name for p in parent.iterdir()
                  if p.name.startswith(f".{name}.") and p.name not in (live, f".{name}.lock"))


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("reliability")


@pytest.fixture(scope="module")
def dataset(fixture_root):
    return load_dataset(write_dataset(fixture_root / "data"), verify=False)


@pytest.fixture(scope="module")
def pool(dataset) -> Pool:
    return Pool.from_dataset(dataset, "perspectives")


# --------------------------------------------------------------------------- crash in a swap
STEPS = ["write", "written", "moved aside", "swapped"]
KILL = """
import os, sys
from pathlib import Path
from perspectrum import _io
final, step = Path(sys.argv[1]), sys.argv[2]
_io.fault_hook = lambda name: os._exit(9) if name == step else None
_io.atomic_folder(final, lambda tmp: (tmp / "content.txt").write_text("new"))
"""


@pytest.mark.parametrize("legacy", [True, False], ids=["real-folder", "link"])
@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_of_a_swap_leaves_the_old_or_the_new_folder(tmp_path, step, legacy) -> None:
    final = tmp_path / "stance"
    if legacy:  # as older versions wrote it: a real folder, moved aside during the swap
        final.mkdir()
        (final / "content.txt").write_text("old")
    else:
        _io.atomic_folder(final, lambda tmp: (tmp / "content.txt").write_text("old"))
    run = python(KILL, str(final), step)
    killed = step != "moved aside" or legacy
    assert run.returncode == (9 if killed else 0), run.stderr
    found = _io.current(final)
    assert found is not None
    assert (found / "content.txt").read_text() == ("new" if step == "swapped" or not killed else "old")
    _io.tidy(final)  # a reader's courtesy cleans up; the next writer would too
    assert leftovers(tmp_path, "stance") == [] and _io.current(final) is not None
    _io.atomic_folder(final, lambda tmp: (tmp / "content.txt").write_text("next"))
    assert (final / "content.txt").read_text() == "next" and leftovers(tmp_path, "stance") == []


def test_a_kill_between_the_renames_of_an_older_index_keeps_it_usable(tmp_path, fixture_root, pool) -> None:
    store = IndexStore(tmp_path)
    expected = store.build(pool, "bm25")[0].search("nuclear waste", 3)
    folder = tmp_path / "perspectives" / "bm25"
    real = folder.resolve()
    folder.unlink()
    real.rename(folder)  # the real folder an older version left
    code = KILL.replace('_io.atomic_folder(final, lambda tmp: (tmp / "content.txt").write_text("new"))', """
from perspectrum.data import Pool, load_dataset
from perspectrum.index import IndexStore
pool = Pool.from_dataset(load_dataset(sys.argv[3], verify=False), "perspectives")
IndexStore(sys.argv[4]).build(pool, "bm25")""")
    run = python(code, str(folder), "moved aside", str(fixture_root / "data"), str(tmp_path))
    assert run.returncode == 9, run.stderr
    assert not folder.exists()  # the moment the old scheme lost the index for good
    assert store.check(pool, "bm25") is None
    assert store.open(pool, "bm25", build_missing=False).search("nuclear waste", 3) == expected


# --------------------------------------------------------------------------- one-bit flips
def test_a_flipped_bit_in_any_index_file_is_caught_or_harmless(tmp_path, pool, encoder) -> None:
    store = IndexStore(tmp_path)
    store._encoder = encoder
    for kind in ("bm25", "dense"):
        expected = store.build(pool, kind)[0].search("nuclear waste is dangerous", 5)
        folder = (tmp_path / "perspectives" / kind).resolve()
        for path in sorted(folder.iterdir()):
            for bit in bits(path):
                original = flip(path, bit)
                try:
                    problem = store.check(pool, kind)
                    if problem is None:  # e.g. a digit of build_seconds: answers must not move
                        assert IndexStore(tmp_path).open(pool, kind, build_missing=False) \
                            .search("nuclear waste is dangerous", 5) == expected, (path.name, bit)
                    else:
                        assert "corrupt" in problem or "incomplete" in problem or "stale" in problem
                finally:
                    path.write_bytes(original)
        assert store.check(pool, kind) is None


def test_an_emptied_or_short_list_of_sums_is_refused(tmp_path, pool) -> None:
    store = IndexStore(tmp_path)
    store.build(pool, "bm25")
    meta_path = tmp_path / "perspectives" / "bm25" / "meta.json"
    meta = json.loads(meta_path.read_text())
    for files in ({}, {k: v for k, v in meta["files"].items() if k != "vocab.index.json"}):
        meta_path.write_text(json.dumps({**meta, "files": files}))
        assert "incomplete" in store.check(pool, "bm25") or "corrupt" in store.check(pool, "bm25")
        with pytest.raises(PerspectrumError, match="perspectrum index build"):
            store.open(pool, "bm25", build_missing=False)
    # a file the list does not name is as suspicious as a missing one
    meta_path.write_text(json.dumps(meta))
    (tmp_path / "perspectives" / "bm25" / "extra.npy").write_bytes(b"\0")
    assert "corrupt" in store.check(pool, "bm25")


def test_a_damaged_sentence_cache_is_split_again(tmp_path, dataset, capsys) -> None:
    store = IndexStore(tmp_path)
    evidence = Pool.from_dataset(dataset, "evidence")
    expected = store.sentences(evidence)
    cache = tmp_path / "sentences" / "pool.json"
    text = cache.read_text()
    first = expected.texts[0]
    cache.write_text(text.replace(json.dumps(first), json.dumps(first.upper()), 1))
    assert store.sentences(evidence) == expected
    assert "damaged" in capsys.readouterr().err


@pytest.fixture
def models(trained_dir, tmp_path) -> Path:
    """A private copy of the quick-trained models (links copied as links)."""
    return Path(shutil.copytree(trained_dir[2], tmp_path / "models", symlinks=True))


def test_what_a_crashed_training_left_goes_when_the_model_loads(models) -> None:
    from perspectrum.models.store import load_task

    (models / ".relevance.v-crashed").mkdir()
    (models / ".relevance.v-crashed" / "model.safetensors").write_bytes(b"half")
    (models / ".relevance.tmp-older").mkdir()  # an older version's temporary folder
    load_task(models, "relevance")
    assert leftovers(models, "relevance") == []


def test_a_flipped_bit_in_a_model_folder_is_caught_or_harmless(models) -> None:
    folder = models / "relevance"
    expected = CrossEncoderModel.load(folder).score(PAIRS)
    meta = json.loads((folder / META_FILE).read_text())
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(meta["files"])
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):  # read at every start
        original = flip(folder / name, bits(folder / name, 1)[0])
        with pytest.raises(integrity.Damaged, match=name):
            CrossEncoderModel.load(folder)
        (folder / name).write_bytes(original)
    # the weights are read only to make the traced copy; with the copy gone, a flip is caught
    original = flip(folder / "model.safetensors", 12345)
    assert np.array_equal(CrossEncoderModel.load(folder).score(PAIRS), expected)  # the copy answers
    copy = _copy_of(folder)
    copy.unlink()
    with pytest.raises(integrity.Damaged, match="model.safetensors"):
        CrossEncoderModel.load(folder)
    (folder / "model.safetensors").write_bytes(original)
    assert np.abs(CrossEncoderModel.load(folder).score(PAIRS) - expected).max() < 1e-6


def _copy_of(folder: Path) -> Path:
    """Where the traced copy of the model in ``folder`` is cached."""
    from perspectrum.encoders import traced

    meta = json.loads((folder / META_FILE).read_text())
    copy = traced._key(folder, meta.get("quantize", True), meta["files"])
    assert copy.is_file()
    return copy


def test_a_flipped_bit_in_a_traced_copy_is_caught_and_the_copy_made_again(models, capsys) -> None:
    folder = models / "equivalence"
    expected = CrossEncoderModel.load(folder).score(PAIRS)
    copy = _copy_of(folder)
    flip(copy, bits(copy, 1)[0])
    capsys.readouterr()
    assert np.abs(CrossEncoderModel.load(folder).score(PAIRS) - expected).max() < 1e-6
    assert "damaged" in capsys.readouterr().err
    assert integrity.sha256_file(copy) == json.loads(copy.with_suffix(".json").read_text())["sha256"]


def test_a_flipped_bit_in_the_ranker_is_caught(models) -> None:
    load_ranker(models)
    path = models / "evidence" / RANKER_FILE
    flip(path, bits(path, 1)[0])
    with pytest.raises(integrity.Damaged, match=RANKER_FILE):
        load_ranker(models)


@pytest.fixture
def shipped_copy(shipped_set, tmp_path, monkeypatch) -> Path:
    """A copy of the (quick) shipped set that the test may damage, named by ``$PERSPECTRUM_SHIPPED``."""
    copy = Path(shutil.copytree(shipped_set.resolve(), tmp_path / "shipped"))
    monkeypatch.setenv(shipping.SOURCE_ENV, str(copy))
    return copy


def _unpacks_or_refuses(models: Path) -> str | None:
    """Unpack the shipped set into ``models``: ``None`` when it unpacked, else the one-line error,
    after checking that nothing half-unpacked is left to be read."""
    try:
        shipping.unpack(models)
    except PerspectrumError as exc:
        assert "\n" not in str(exc)
        assert shipping.current(models) is not None and not (models / shipping.FOLDER).exists()
        return str(exc)
    return None


def test_a_flipped_bit_in_any_shipped_file_is_caught(shipped_copy, tmp_path) -> None:
    """Every file the shipped set holds, its card too, one bit flipped at a time: unpacking
    refuses in one line naming the damaged model and leaves nothing unpacked to fall back on."""
    files = sorted(p for p in shipped_copy.rglob("*") if p.is_file())
    assert any(p.name == "README.md" for p in files)
    for n, path in enumerate(files):
        original = flip(path, bits(path, 1)[0])
        try:
            refused = _unpacks_or_refuses(tmp_path / f"models-{n}")
            assert refused is not None, path
            named = path.parent.name if path.parent != shipped_copy else "shipped models"
            assert named in refused and ("damaged" in refused or "missing" in refused), (path, refused)
        finally:
            path.write_bytes(original)


def _reseal(folder: Path) -> None:
    """Record a forged model folder's sums (and its meta's in the manifest), as a forger would."""
    meta = json.loads((folder / META_FILE).read_text())
    meta["files"] = integrity.record(folder, skip=(META_FILE, "README.md"))
    (folder / META_FILE).write_text(json.dumps(meta))
    manifest = folder.parent / shipping.MANIFEST
    listed = json.loads(manifest.read_text())
    listed["files"][f"{folder.name}/{META_FILE}"] = integrity.sha256_file(folder / META_FILE)
    manifest.write_text(json.dumps(listed))


def test_a_shipped_model_that_would_leave_weights_untrained_is_refused(shipped_copy, tmp_path) -> None:
    """A difference file that forgets a weight, or keeps every weight but no change, loads on
    its base without a murmur from transformers: unpacking refuses both, naming the model."""
    from safetensors.torch import load_file, safe_open

    from perspectrum.train.pack import write_delta

    delta = shipped_copy / "relevance" / shipping.DELTA_FILE
    tensors = load_file(str(delta))
    with safe_open(str(delta), "pt") as handle:
        names = [tuple(n) for n in json.loads(handle.metadata()["names"])]
    head = next(name for name, base in names if not base and f"full/{name}" in tensors)
    write_delta(delta, {k: v for k, v in tensors.items() if k != f"full/{head}"},
                [n for n in names if n[0] != head])
    _reseal(shipped_copy / "relevance")
    assert "relevance" in _unpacks_or_refuses(tmp_path / "forgot")
    changes = {k: v for k, v in tensors.items() if k.startswith("full/")}  # the base's weights, a trained head
    write_delta(delta, changes, names)
    _reseal(shipped_copy / "relevance")
    refused = _unpacks_or_refuses(tmp_path / "unchanged")
    assert "shipped relevance model scores" in refused and "not the recorded" in refused


# --------------------------------------------------------------------------- no pickle
class _Payload:
    """A pickle that writes a file when it is loaded: what any code run by a pickle could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))


def test_a_pickle_where_models_live_is_never_run(tmp_path, shipped_copy) -> None:
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Payload(marker))
    # a shipped difference swapped for a pickle, and the sums edited to match
    (shipped_copy / "stance" / shipping.DELTA_FILE).write_bytes(payload)
    _reseal(shipped_copy / "stance")
    assert "cannot read the weight difference" in _unpacks_or_refuses(tmp_path / "models")
    # and the evidence ranker's arrays swapped for pickled objects
    ranker = shipped_copy / "evidence" / RANKER_FILE
    np.save(tmp_path / "objects.npy", np.array([_Payload(marker)], dtype=object), allow_pickle=True)
    (tmp_path / "objects.npy").rename(ranker)
    _reseal(shipped_copy / "evidence")
    with pytest.raises(PerspectrumError):
        load_ranker(shipped_copy)
    assert not marker.exists()


# --------------------------------------------------------------------------- ids, pools
SEPARATORS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


def test_ids_with_any_line_separator_survive_a_reopen(tmp_path) -> None:
    words = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper", "kiwi",
             "lemon"]
    ids = tuple(f"id{sep}{n}" for n, sep in enumerate([*SEPARATORS, ""]))
    pool = Pool("perspectives", ids, tuple(f"{w} grows in the orchard" for w in words))
    IndexStore(tmp_path).build(pool, "bm25")
    reopened = IndexStore(tmp_path).open(pool, "bm25", build_missing=False)
    assert reopened.doc_ids == list(ids)
    for doc_id, word in zip(ids, words):
        assert reopened.search(word, 1)[0].doc_id == doc_id


def test_a_pool_of_stopwords_and_emoji_is_one_clear_error(tmp_path) -> None:
    pool = Pool("perspectives", (1, 2, 3), ("the and of", "😀 😀 🙃", "is it was"))
    with pytest.raises(PerspectrumError, match="no word BM25 can index"):
        IndexStore(tmp_path).build(pool, "bm25")
    assert not (tmp_path / "perspectives" / "bm25").exists()


# --------------------------------------------------------------------------- read-only, full
@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder every user may read (pytest's own is private to its user)."""
    folder = Path(tempfile.mkdtemp(prefix="perspectrum-ro-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


BUILD = """
import sys
from perspectrum.config import BM25Params
from perspectrum.data import Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.index import IndexStore
pool = Pool.from_dataset(load_dataset(sys.argv[1], verify=False), "perspectives")
try:
    IndexStore(sys.argv[2], bm25=BM25Params(k1=1.5)).build(pool, "bm25")
except PerspectrumError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""


def _sound_index_in(folder: Path, dataset_dir: Path, pool: Pool) -> IndexStore:
    shutil.copytree(dataset_dir, folder / "data")
    store = IndexStore(folder / "indexes")
    store.build(pool, "bm25")
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return store


def test_a_full_disk_is_one_line_and_the_old_index_stays(shared_tmp, fixture_root, pool, dataset) -> None:
    store = _sound_index_in(shared_tmp, fixture_root / "data", pool)

    def small_files() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))  # a disk that fills after 300 bytes a file

    run = python(BUILD, str(shared_tmp / "data"), str(shared_tmp / "indexes"), preexec_fn=small_files)
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stderr.startswith(f"cannot write {shared_tmp / 'indexes' / 'perspectives' / 'bm25'}: File too large")
    assert store.check(pool, "bm25") is None and leftovers(shared_tmp / "indexes" / "perspectives", "bm25") == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device that is always full")
@pytest.mark.parametrize("how", ["numpy", "python"])
def test_a_full_disk_says_so_in_words_whoever_noticed(tmp_path, how) -> None:
    """numpy reports a short write as bare counts ("80943 requested and 4064 written", no
    errno) and Python as ENOSPC; either is "no space left on device", naming the target,
    and the old file stays whole."""
    target = _io.write_json(tmp_path / "kept.json", {"old": True})

    def fill(tmp: Path) -> None:  # the bytes go to a full device, as they would on a full disk
        if how == "numpy":
            np.zeros(80943).tofile("/dev/full")
        else:
            with open("/dev/full", "w") as full:
                full.write("x" * 80943)

    with pytest.raises(PerspectrumError) as caught:
        _io.atomic_write(target, fill)
    assert str(caught.value) == (f"cannot write {target}: no space left on device; "
                                 "free some space there and run the command again")
    assert json.loads(target.read_text()) == {"old": True} and [p.name for p in tmp_path.iterdir()] == ["kept.json"]


def test_a_short_write_under_a_file_size_limit_is_file_too_large(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_io, "_file_size_limited", lambda: True)  # `ulimit -f`: the disk is not full
    error = _io.cannot_write(tmp_path / "x.npy", OSError("80943 requested and 4064 written"))
    assert str(error) == f"cannot write {tmp_path / 'x.npy'}: File too large"


def _without_override() -> None:
    """In the child, before it runs Python: drop the capabilities that let root write where
    permissions forbid (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER) from its bounding
    set, which is what root keeps across ``exec``; a 0555 folder is then read-only to it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_read_only_index_folder_is_one_line_and_the_old_index_stays(shared_tmp, fixture_root, pool) -> None:
    store = _sound_index_in(shared_tmp, fixture_root / "data", pool)
    for path in [shared_tmp / "indexes", *(shared_tmp / "indexes").rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o555)
    try:  # root writes anywhere: its writer gives that power up first
        run = python(BUILD, str(shared_tmp / "data"), str(shared_tmp / "indexes"),
                     preexec_fn=_without_override if os.geteuid() == 0 else None)
    finally:
        for path in [shared_tmp / "indexes", *(shared_tmp / "indexes").rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "cannot write" in run.stderr and "Permission denied" in run.stderr
    assert store.check(pool, "bm25") is None


# --------------------------------------------------------------------------- concurrency
WRITER = """
import sys, time
from perspectrum.data import Pool, load_dataset
from perspectrum.index import IndexStore
pool = Pool.from_dataset(load_dataset(sys.argv[1], verify=False), "perspectives")
store, until, built = IndexStore(sys.argv[2]), time.monotonic() + float(sys.argv[3]), 0
while time.monotonic() < until:
    store.build(pool, "bm25")
    built += 1
print(built)
"""
READER = """
import sys, time
from perspectrum.data import Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.index import IndexStore
pool = Pool.from_dataset(load_dataset(sys.argv[1], verify=False), "perspectives")
until, reads, failures = time.monotonic() + float(sys.argv[3]), 0, []
while time.monotonic() < until:
    try:
        hit = IndexStore(sys.argv[2]).open(pool, "bm25", build_missing=False).search("nuclear waste", 1)[0]
        assert hit.doc_id == int(sys.argv[4]), hit
        reads += 1
    except (PerspectrumError, OSError, AssertionError) as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
print(reads, len(failures), failures[:3])
"""


@pytest.mark.slow  # three processes for six seconds
def test_two_writers_and_a_reader_share_an_index_folder(tmp_path, fixture_root, pool) -> None:
    best = IndexStore(tmp_path).build(pool, "bm25")[0].search("nuclear waste", 1)[0].doc_id
    args = [str(fixture_root / "data"), str(tmp_path), "6", str(best)]
    running = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for code in (WRITER, WRITER, READER)]
    results = [process.communicate(timeout=120) for process in running]
    for process, (out, err) in zip(running, results):
        assert process.returncode == 0 and "Traceback" not in err, err
    assert all(int(out) >= 2 for out, _ in results[:2])  # both writers got their turns
    reads, failures, examples = results[2][0].split(" ", 2)
    assert int(failures) == 0 and int(reads) >= 10, examples
    assert IndexStore(tmp_path).check(pool, "bm25") is None
    assert leftovers(tmp_path / "perspectives", "bm25") == []


# --------------------------------------------------------------------------- permissions
@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_files_and_folders_follow_the_umask(tmp_path, mask, file_mode, dir_mode) -> None:
    previous = os.umask(mask)
    try:
        written = _io.write_json(tmp_path / "result.json", {"ok": True})
        folder = _io.atomic_folder(tmp_path / "model", lambda tmp: (tmp / "weights").write_bytes(b"w"))
    finally:
        os.umask(previous)
    assert written.stat().st_mode & 0o777 == file_mode
    assert folder.resolve().stat().st_mode & 0o777 == dir_mode
    assert (folder / "weights").stat().st_mode & 0o777 == file_mode
