"""`perspectrum setup` under faults: killed at every step, run twice at once or beside a
`discover`, on a disk that fills, and with its on-disk caches damaged.

Each case ends in one of two outcomes: the machine prepared as an uninterrupted run prepares
it (the same answer to a claim), or one line on stderr with what was there before still
sound. Everything runs on the ten-claim fixture; the setups that unpack models use the quick
models of ``shipped_set`` (so those tests are slow: the fixture trains them once per run).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from perspectrum import _io
from perspectrum.data import Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.index import sentence_vectors as kept_module
from perspectrum.index.sentence_vectors import SentenceVectors
from perspectrum.index.store import SENTENCE_CACHE, IndexStore
from perspectrum.models import shipped
from perspectrum.train.prepare import NEEDED
from tests.conftest import write_dataset

ROOT = Path(__file__).resolve().parents[2]
CLAIM = "Animals should have legal rights"
#: Each thing setup writes, as the folder or file it swaps in (relative to the machine's root).
ARTEFACTS = [f"indexes/{pool}/{kind}" for pool, kind in NEEDED] + [f"indexes/sentences/{SENTENCE_CACHE}",
                                                                   "models/shipped"]
#: The steps of writing each one (:func:`perspectrum._io.atomic_folder`'s, and the same three
#: around the sentence cache's file): before its files are written, after, after the swap.
STEPS = ("write", "written", "swapped")

#: `perspectrum setup` in a child process that dies (as by SIGKILL: ``os._exit``, no cleanup runs)
#: at its ``at``-th write step, noting which one in ``log``; ``at`` 0 kills nothing. With
#: ``$FULL_AT`` naming an artefact, the disk fills (ENOSPC) once its files are written; with
#: ``$PAUSE_AT``, it stops there until ``<root>/go`` exists, saying so in ``<root>/paused``.
SETUP = """
import errno, os, sys, time
from pathlib import Path
from perspectrum import _io
from perspectrum.index import store as store_module

root, at, log = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
steps = 0


def step(name, target):
    global steps
    if not Path(target).is_relative_to(root):  # not this machine's (a cache elsewhere)
        return
    steps += 1
    where = str(Path(target).relative_to(root))
    if name == "written" and where == os.environ.get("FULL_AT"):
        raise OSError(errno.ENOSPC, "No space left on device")
    if name == "written" and where == os.environ.get("PAUSE_AT"):
        (root / "paused").write_text("")
        while not (root / "go").exists():
            time.sleep(0.05)
    if steps == at:
        log.write_text(f"{name} {where}")
        os._exit(9)


_io.fault_hook = lambda name: step(name, sys._getframe(2).f_locals["final"])
plain = store_module.atomic_write


def atomic_write(path, write):  # the sentence cache: the same three steps around its file
    plain(path, lambda tmp: (step("write", path), write(tmp), step("written", path)))
    step("swapped", path)


store_module.atomic_write = atomic_write
from perspectrum.cli.app import app
sys.argv = ["perspectrum", "setup", "--data-dir", str(root / "data"), "--no-verify", "--index-dir",
            str(root / "indexes"), "--models-dir", str(root / "models"), *sys.argv[4:]]
app()
"""


def python(code: str, *args: str, timeout: float = 300, env: dict[str, str] | None = None,
           **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=child_env(**(env or {})), **kwargs)


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
            **extra}


def errors(stderr: str) -> list[str]:
    """The error lines of a command's stderr (the rest is what it said it was doing), the last
    line being one of them."""
    lines = stderr.strip().splitlines()
    return [line for line in lines if line.startswith("error:")] if lines and lines[-1].startswith("error:") else lines


def sound(root: Path) -> set[str]:
    """The artefacts of ``root`` that a reader would take as they are (checked by their sums)."""
    dataset = load_dataset(root / "data", verify=False)
    store = IndexStore(root / "indexes")
    evidence = Pool.from_dataset(dataset, "evidence")
    pools = {"perspectives": Pool.from_dataset(dataset, "perspectives"), "evidence": evidence}
    found = set()
    for pool, kind in NEEDED:
        if pool == "sentences":
            cache = root / "indexes" / "sentences" / SENTENCE_CACHE
            if not cache.is_file():
                continue
            found.add(f"indexes/sentences/{SENTENCE_CACHE}")
            pools["sentences"] = store.sentences(evidence)
        if store.check(pools[pool], kind) is None:
            found.add(f"indexes/{pool}/{kind}")
    if shipped.current(root / "models") is None:
        found.add("models/shipped")
    return found


def half_built(root: Path) -> list[str]:
    """What a crashed or waiting writer left that readers could take for a finished artefact:
    a link or folder at an artefact's name whose target is not a whole version."""
    left = []
    for name in ARTEFACTS:
        path = root / name
        if path.is_symlink() and not path.exists():
            left.append(f"{name} -> nothing")
    return left


def answer(root: Path) -> list:
    from perspectrum import Pipeline

    return Pipeline.load(root / "data", root / "indexes", root / "models", verify=False).discover(CLAIM).perspectives


@pytest.fixture(scope="module")
def reference(tmp_path_factory, shipped_set) -> tuple[Path, list]:
    """A machine prepared by an uninterrupted `perspectrum setup`, and its answer to :data:`CLAIM`."""
    root = tmp_path_factory.mktemp("uninterrupted")
    write_dataset(root / "data")
    run = python(SETUP, str(root), "0", str(root / "log"))
    assert run.returncode == 0, run.stderr
    return root, answer(root)


# --------------------------------------------------------------------------- killed at every step
def test_setup_killed_at_every_step_finishes_on_the_next_run_with_the_same_answer(reference, tmp_path) -> None:
    """Run after run, each killed at the next step not yet killed at (1st, 2nd, 3rd step of
    what is left: the writing, the written, the swapped of each artefact in turn), until one
    finishes; after each kill, what is sound stays sound and nothing half-built is there."""
    write_dataset(tmp_path / "data")
    killed, was_sound = [], set()
    for run_number in range(3 * len(ARTEFACTS) + 1):
        run = python(SETUP, str(tmp_path), str(1 + run_number % len(STEPS)), str(tmp_path / "log"))
        assert "Traceback" not in run.stderr, run.stderr
        if run.returncode == 0:
            break
        assert run.returncode == 9, run.stderr
        killed.append(tuple((tmp_path / "log").read_text().split(" ", 1)))
        now = sound(tmp_path)
        assert was_sound <= now, f"a kill at {killed[-1]} lost {was_sound - now}"
        assert half_built(tmp_path) == []
        was_sound = now
    assert run.returncode == 0 and run_number == 3 * len(ARTEFACTS), killed
    assert sorted(killed) == sorted((step, name) for name in ARTEFACTS for step in STEPS)
    assert sound(tmp_path) == set(ARTEFACTS)
    assert answer(tmp_path) == reference[1]
    again = python(SETUP, str(tmp_path), "0", str(tmp_path / "log"), "--json")
    done = json.loads(again.stdout)
    assert {row["status"] for row in done["indexes"]} == {"reused"} and done["models"] == "shipped, kept"


# --------------------------------------------------------------------------- at the same time
def wait_for(predicate, what: str, limit: float = 240) -> None:
    """Poll ``predicate`` (a bounded wait on another process, not a timing assertion)."""
    until = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < until, f"never saw {what}"
        time.sleep(0.05)


def test_two_setups_and_a_discover_at_once_take_turns_and_none_reads_a_half_unpacked_model(
        reference, tmp_path) -> None:
    from perspectrum import Pipeline
    from perspectrum.pipeline.pipeline import NotPrepared

    write_dataset(tmp_path / "data")
    env = child_env()
    first = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SETUP), str(tmp_path), "0", str(tmp_path / "log"),
                              "--json"], cwd=ROOT, env=child_env(PAUSE_AT="models/shipped"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (tmp_path / "paused").exists() or first.poll() is not None, "the first setup pause")
        assert first.poll() is None, first.communicate()[1]
        # the shipped models written but not swapped in: a reader is refused at once, in one line
        with pytest.raises(NotPrepared, match="not unpacked"):
            Pipeline.load(tmp_path / "data", tmp_path / "indexes", tmp_path / "models", verify=False)
        logs = {name: open(tmp_path / f"{name}.err", "w") for name in ("second", "discover")}
        machine = ["--data-dir", str(tmp_path / "data"), "--no-verify", "--index-dir", str(tmp_path / "indexes"),
                   "--models-dir", str(tmp_path / "models")]
        cli = [sys.executable, "-m", "perspectrum"]
        second = subprocess.Popen([*cli, "setup", "--json", *machine], cwd=ROOT, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=logs["second"])
        discover = subprocess.Popen([*cli, "discover", CLAIM, "--json", *machine], cwd=ROOT, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=logs["discover"])
        for name in logs:  # each waits for the first, saying so
            wait_for(lambda: "waiting for another process writing" in (tmp_path / f"{name}.err").read_text(),
                     f"{name} waiting")
        (tmp_path / "go").write_text("")
        outs = [process.communicate(timeout=300) for process in (first, second, discover)]
    finally:
        (tmp_path / "go").write_text("")
        if first.poll() is None:
            first.kill()
    for name, process, (out, err) in zip(("first", "second", "discover"), (first, second, discover), outs):
        err = err if err is not None else (tmp_path / f"{name}.err").read_text()
        assert process.returncode == 0 and "Traceback" not in err, (name, err)
    done = [json.loads(outs[0][0]), json.loads(outs[1][0])]
    assert done[0]["models"] == "shipped, unpacked"
    # the second looked again once the first was done: nothing unpacked or built twice
    assert done[1]["models"] == "shipped, kept" and {row["status"] for row in done[1]["indexes"]} == {"reused"}
    said = (tmp_path / "discover.err").read_text()
    assert said.count("unpacking them") == 0 and said.count("running `perspectrum setup` first") == 1
    answered = json.loads(outs[2][0])
    assert [p["id"] for p in answered["perspectives"]] == [p.id for p in reference[1]]
    assert sound(tmp_path) == set(ARTEFACTS)


# --------------------------------------------------------------------------- a disk that fills
def test_a_disk_that_fills_while_unpacking_is_one_line_and_what_was_built_stays(reference, tmp_path) -> None:
    """A file-size limit the model weights exceed (the indexes fit): the write falls short in
    safetensors, which reports it as its own exception; setup says so in one line."""
    import resource

    write_dataset(tmp_path / "data")

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))  # 4 MB a file: no model's weights fit

    run = python(SETUP, str(tmp_path), "0", str(tmp_path / "log"), preexec_fn=small_files)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert errors(run.stderr) == [f"error: cannot write {tmp_path / 'models' / 'shipped'}: File too large"], run.stderr
    assert sound(tmp_path) == set(ARTEFACTS) - {"models/shipped"}
    assert [p.name for p in (tmp_path / "models").iterdir() if p.name != ".shipped.lock"] == []
    run = python(SETUP, str(tmp_path), "0", str(tmp_path / "log"))
    assert run.returncode == 0, run.stderr
    assert answer(tmp_path) == reference[1]


@pytest.mark.parametrize("artefact", ["indexes/sentences/dense", "models/shipped"])
def test_a_full_disk_during_setup_is_one_line_and_the_prepared_machine_still_answers(
        reference, tmp_path, artefact) -> None:
    """A prepared machine whose setup must write one thing again on a disk that fills: the
    sentences' dense index of --full, or the shipped models (one of their files damaged): one
    line naming it, and what was there before is there as it was."""
    import shutil

    root = tmp_path / "machine"
    shutil.copytree(reference[0], root, symlinks=True)
    target = root / artefact
    if artefact == "models/shipped":
        config = target / "stance" / "config.json"
        config.write_text(config.read_text() + " ")
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and "lock" not in p.name}
    run = python(SETUP, str(root), "0", str(root / "log"), "--full", env={"FULL_AT": artefact})
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert errors(run.stderr) == [f"error: cannot write {target}: no space left on device; "
                                  "free some space there and run the command again"], run.stderr
    live = target.resolve().name if target.is_symlink() else None
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.v-")] == (
        [live] if live else [])  # nothing half-written left beside it
    if artefact == "models/shipped":
        after = {p.relative_to(root): p.read_bytes() for p in (root / "models").rglob("*") if p.is_file()
                 and "lock" not in p.name}
        assert after == {k: v for k, v in before.items() if k.parts[0] == "models"}  # kept as it was
    else:
        assert answer(root) == reference[1]  # the machine answers as before


# --------------------------------------------------------------------------- damaged caches
def test_damaged_unpacked_models_are_found_by_their_sums_and_unpacked_again(reference, tmp_path) -> None:
    import shutil

    from perspectrum.train.prepare import prepare

    root = tmp_path / "machine"
    shutil.copytree(reference[0], root, symlinks=True)
    for damaged in ("stance/model.safetensors", "pipeline.json"):
        path = root / "models" / "shipped" / damaged
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        path.write_bytes(bytes(raw))
        err = io.StringIO()
        from contextlib import redirect_stderr

        with redirect_stderr(err):
            done = prepare(root / "data", root / "indexes", root / "models", verify=False)
        assert done["models"] == "shipped, unpacked" and "damaged" in done["why"], done
        assert damaged.split("/")[-1] in err.getvalue()
        assert path.read_bytes() != bytes(raw)
    assert answer(root) == reference[1]


PARAGRAPHS = Pool("evidence", (1, 2, "own-3"), (
    "Zoos breed endangered species. They return some to the wild. Visitors learn about them.",
    "Wind turbines kill birds. Offshore farms kill fewer.",
    "A paragraph of one sentence about taxes",
))

DAMAGE = {
    "truncated": lambda raw: raw[: len(raw) // 2],
    "emptied": lambda raw: b"",
    "a flipped byte in its header": lambda raw: bytes([raw[0] ^ 0x01]) + raw[1:],
    "a flipped byte in its numbers": lambda raw: raw[:-200] + bytes([raw[-200] ^ 0x80]) + raw[-199:],
    "bytes appended": lambda raw: raw + b"\0" * 64,
}


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_sentence_vectors_part_is_caught_by_its_sum_and_never_read(tmp_path, encoder, capsys, monkeypatch,
                                                                             how) -> None:
    store = IndexStore(tmp_path / "indexes", encoder=encoder)
    good = SentenceVectors(store, PARAGRAPHS).of([1, 2])
    (part,) = sorted(SentenceVectors(store, PARAGRAPHS).folder.glob("part-*.npz"))
    damaged = DAMAGE[how](part.read_bytes())
    part.write_bytes(damaged)
    read = []
    real_load = np.load
    monkeypatch.setattr(kept_module.np, "load", lambda source, **k: read.append(source.getvalue()) or
                        real_load(source, **k))
    again = SentenceVectors(store, PARAGRAPHS)
    assert again.missing() == 3 and damaged not in read and not part.exists()
    assert "is damaged: deleting it" in capsys.readouterr().err
    rebuilt = again.of([1, 2])
    assert all(a.shape == b.shape and ((a * b).sum(axis=1) > 0.9999).all() for a, b in zip(rebuilt, good))
    assert len(sorted(again.folder.glob("part-*.npz"))) == 1


def test_a_killed_writers_temporary_part_is_never_read_and_tidied_once_old(tmp_path, encoder) -> None:
    store = IndexStore(tmp_path / "indexes", encoder=encoder)
    good = SentenceVectors(store, PARAGRAPHS).of([1])
    folder = SentenceVectors(store, PARAGRAPHS).folder
    (part,) = sorted(folder.glob("part-*.npz"))
    old, fresh = folder / f".{part.name}.0123456789ab.npz", folder / f".{part.name}.ba9876543210.npz"
    for left in (old, fresh):  # half a part, as a kill during its write leaves it
        left.write_bytes(part.read_bytes()[:100])
    hours_ago = time.time() - kept_module.LEFT_AFTER - 60
    os.utime(old, (hours_ago, hours_ago))
    again = SentenceVectors(store, PARAGRAPHS)
    assert again.missing() == 2 and np.array_equal(again.of([1])[0], good[0])
    assert not old.exists() and fresh.exists()  # a writer may still be renaming the fresh one


@pytest.mark.parametrize("how", ["truncated", "emptied", "not JSON", "nested deep", "a list", "an edited sentence"])
def test_a_damaged_sentence_split_cache_is_split_again_saying_so(tmp_path, capsys, how) -> None:
    store = IndexStore(tmp_path)
    evidence = Pool.from_dataset(load_dataset(write_dataset(tmp_path / "data"), verify=False), "evidence")
    expected = store.sentences(evidence)
    cache = tmp_path / "sentences" / SENTENCE_CACHE
    text = cache.read_text()
    cache.write_text({"truncated": text[: len(text) // 2], "emptied": "", "not JSON": "\x00\x01 binary",
                      "nested deep": "[" * 100_000, "a list": "[1, 2, 3]",
                      "an edited sentence": text.replace(json.dumps(expected.texts[3]),
                                                         json.dumps(expected.texts[3][::-1]), 1)}[how])
    capsys.readouterr()
    assert store.sentences(evidence) == expected
    assert f"{cache} is damaged: splitting the paragraphs again" in capsys.readouterr().err
    assert json.loads(cache.read_text())["sentences"] == expected.fingerprint  # written again, whole


def test_a_library_error_naming_an_os_error_is_one_line_and_the_old_folder_stays(tmp_path) -> None:
    """safetensors (Rust) reports a short write as its own exception naming "os error 28"."""
    from safetensors import SafetensorError

    final = _io.atomic_folder(tmp_path / "model", lambda tmp: (tmp / "weights").write_text("old"))

    def fill(tmp: Path) -> None:
        (tmp / "weights").write_text("half")
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    with pytest.raises(PerspectrumError) as caught:
        _io.atomic_folder(final, fill)
    assert str(caught.value) == (f"cannot write {final}: no space left on device; "
                                 "free some space there and run the command again")
    assert (final / "weights").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", f"{final.resolve().name}", "model"]
    with pytest.raises(ValueError, match="not an I/O error"):  # anything else is left as it is
        _io.atomic_folder(final, lambda tmp: (_ for _ in ()).throw(ValueError("not an I/O error")))
