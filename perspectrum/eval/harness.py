"""One harness for any system: the tasks it declares, scored with our splits, metrics and report.

A *system* is any object of the :class:`System` protocol. It says which of :data:`TASKS`
it answers and answers them in batches, with plain values: claim texts in, lists of
pool ids (perspective ids for retrieve → equivalence, evidence paragraph ids for
evidence) and floats out. It needs none of our classes, so a third party writes it in
its own package and runs::

    perspectrum evaluate --system mypackage.mymodule:MySystem --split test [--oracle stance …]

A minimal system that only retrieves and keeps perspectives::

    class Overlap:
        name = "overlap"
        tasks = frozenset({"retrieve", "relevance"})

        def prepare(self, data):
            self.words = {pid: set(p.text.lower().split()) for pid, p in data.perspectives.items()}

        def retrieve(self, claims):
            return [sorted(self.words, key=lambda pid: -len(self.words[pid] & set(c.lower().split())))[:50]
                    for c in claims]

        def relevance(self, claims, candidates):
            return [ids[:5] for ids in candidates]

``tests/example_system.py`` is a complete one (all five chain stages).

**The chain.** retrieve → relevance → {stance, equivalence} → evidence: relevance reads
the candidates retrieve returned, stance and equivalence each read the perspectives
relevance kept, evidence reads the clusters equivalence returned. That is the system's
*own input*. ``oracle`` names stages that get *gold input* instead (the ground-truth
injection of BAM, Ruosch et al. 2022), so an error is charged to the stage that makes it
rather than to every stage after it:

- relevance ← the retrieved candidates plus every gold perspective of the claim;
- stance, equivalence ← the claim's gold perspectives;
- evidence ← the claim's gold clusters (in the dataset's order).

Gold perspectives are given in an order that carries no label (shuffled with a seed per
claim, and inserted among the candidates at seeded positions), so a system cannot read the
answer off the order. A stage downstream of an oracled one reads what its source answered
on that gold input. A system that lacks an upstream task can be scored on a later one
only with that stage oracled; with ``oracle`` given, the chain runs twice (own input, then
gold), stages the oracle cannot change are not asked again, and every task is reported
on both inputs side by side.

**Scores** (:func:`score_run`): the cluster recall of the retrieved candidates; T1 from
what relevance kept; T2 from stance (≥ 0.5 reads as *support*) over the gold pairs that
reached stance (*found*) and over all of them (a missed one counts as "undermine"); T3
from the returned clusters; T4 with gold clusters matched one to one to the clusters
evidence was asked about (:func:`perspectrum.eval.end_to_end.assign_clusters`), over the matched
gold clusters and over all; T5 strict (all) and found. Tasks outside the chain (mine,
match) are scored by the functions named in :data:`STANDALONE`.

What :meth:`System.prepare` receives is the dataset without the evaluated split's claims
(and never the test split): the pools, and the train and dev claims with their labels.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from numbers import Real
from typing import Any, Protocol

from perspectrum._checks import is_whole
from perspectrum._progress import progress
from perspectrum.data import Claim, ClusterKey, Dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval.metrics import percent, t1_relevance, t2_stance, t3_equivalence, t4_evidence, t5_overall
from perspectrum.eval.end_to_end import found_claims, assign_clusters
from perspectrum.index.search import DocId

#: Every task a system may declare.
TASKS = ("retrieve", "relevance", "stance", "equivalence", "evidence", "mine", "match")
#: The claim chain, in running order.
CHAIN = ("retrieve", "relevance", "stance", "equivalence", "evidence")
#: Whose answer each chain stage reads as its own input (retrieve reads the claim alone).
SOURCE = {"relevance": "retrieve", "stance": "relevance", "equivalence": "relevance", "evidence": "equivalence"}
#: The stages that can be given gold input (retrieve reads nothing but the claim).
ORACLE_STAGES = tuple(SOURCE)
#: Tasks scored on their own rather than along the chain: task → "module:function". The
#: function takes (system, dataset, split, show_progress) and returns the task's metrics,
#: JSON-ready (percent); it is imported only when a system declares the task.
STANDALONE: dict[str, str] = {"mine": "perspectrum.eval.mine_quality:score_system",
                              "match": "perspectrum.eval.match_quality:score_system"}
#: A stance answer at or above this reads as "supports".
SUPPORT_AT = 0.5
#: Claims per call of a system's method.
BATCH_SIZE = 16


class System(Protocol):
    """What the harness scores (see the module docstring). Ids are the pools' ids.

    Only the methods of declared tasks are called, each with a batch of claims and one
    input per claim, and must answer one output per claim, in order.
    """

    #: Shown in the report (the ``--system`` spec when absent).
    name: str
    #: The tasks answered, a subset of :data:`TASKS`.
    tasks: frozenset[str]

    def prepare(self, data: Dataset) -> None:
        """Called once before any claim: the pools and the train/dev claims with labels
        (``data.perspectives[pid].text``, ``data.evidence[eid].text``, ``data.split("dev")``;
        each claim's ``clusters`` hold ``pids``, ``stance`` and ``evidence``). The split
        under evaluation is not in it."""
        ...

    def retrieve(self, claims: list[str]) -> list[list[DocId]]:
        """Perspective ids per claim, best first."""
        ...

    def relevance(self, claims: list[str], candidates: list[list[DocId]]) -> list[list[DocId]]:
        """The candidates kept as relevant to each claim (a subset of its candidates)."""
        ...

    def stance(self, claims: list[str], perspectives: list[list[DocId]]) -> list[list[float]]:
        """Per perspective, P(it supports the claim), or 1/0; ≥ 0.5 reads as support."""
        ...

    def equivalence(self, claims: list[str], perspectives: list[list[DocId]]) -> list[list[list[DocId]]]:
        """The claim's perspectives grouped into clusters that say the same thing."""
        ...

    def evidence(self, claims: list[str], clusters: list[list[list[DocId]]]) -> list[list[list[DocId]]]:
        """Per cluster (in the order given), the evidence paragraph ids that back it."""
        ...

    def mine(self, texts: list[str], claims: list[str]) -> list[list[tuple[int, int, str, float]]]:
        """Per text, the argumentative units it holds about its claim: (start, end)
        character span, stance ("support"/"undermine") and a score."""
        ...

    def match(self, texts: list[str], claims: list[str], arguments: list[list[str]]) -> list[list[bool]]:
        """Per text, whether it makes each of its candidate arguments (about its claim)."""
        ...


class SpecError(PerspectrumError):
    """A malformed ``--system`` or ``--oracle`` value (a usage error: the CLI exits 2)."""


def oracle_stages(values: Iterable[str]) -> tuple[str, ...]:
    """The stages named (repeated or comma-separated), in chain order, or a :class:`SpecError`."""
    named = {part.strip() for value in values for part in value.split(",") if part.strip()}
    unknown = sorted(named - set(ORACLE_STAGES))
    if unknown:
        why = " (it reads the claim alone, so it has no gold input)" if unknown == ["retrieve"] else ""
        raise SpecError(f"unknown oracle stage {', '.join(map(repr, unknown))}{why}: "
                        f"choose from {', '.join(ORACLE_STAGES)}")
    return tuple(stage for stage in ORACLE_STAGES if stage in named)


def load_system(spec: str) -> Any:
    """The system named ``package.module:Class`` (or ``:object``), imported with the current
    folder on ``sys.path`` as uvicorn does, and checked against the protocol.

    A class is built with no arguments; any other object is the system itself (a module
    may export a configured instance). Every way this can fail is one line.
    """
    module_name, _, attribute = spec.partition(":")
    dotted = all(part.isidentifier() for part in module_name.split("."))
    if not (module_name and attribute and dotted and attribute.isidentifier()):
        raise SpecError(f"--system takes a built-in name or package.module:Class, not {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise PerspectrumError(f"no module named {exc.name!r} (looked in the current folder and on the "
                                   "Python path)") from None
        raise PerspectrumError(f"importing {module_name} failed: {exc}") from exc
    except Exception as exc:  # the module's own code failed: say how, in one line
        raise PerspectrumError(f"importing {module_name} failed: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attribute):
        raise PerspectrumError(f"module {module_name} has no attribute {attribute!r}")
    found = getattr(module, attribute)
    if isinstance(found, type):
        try:
            found = found()
        except Exception as exc:
            raise PerspectrumError(f"{spec}() failed: {type(exc).__name__}: {exc}") from exc
    check_system(found, spec)
    return found


def check_system(system: Any, spec: str) -> None:
    """Refuse, in one line, an object that lacks ``tasks``, ``prepare`` or a declared task's method."""
    tasks = getattr(system, "tasks", None)
    if isinstance(tasks, str) or not isinstance(tasks, Iterable):
        raise PerspectrumError(f"{spec} has no tasks: give it a `tasks` set naming what it answers "
                               f"({', '.join(TASKS)})")
    unknown = sorted(str(t) for t in set(tasks) - set(TASKS))
    if unknown:
        raise PerspectrumError(f"{spec} declares unknown task(s) {', '.join(unknown)} (tasks: {', '.join(TASKS)})")
    if not tasks:
        raise PerspectrumError(f"{spec} declares no task")
    for method in ("prepare", *(t for t in TASKS if t in tasks)):
        if not callable(getattr(system, method, None)):
            why = "every system has one" if method == "prepare" else f"it declares {method}"
            raise PerspectrumError(f"{spec} has no {method} method, and {why}")


def without_split(dataset: Dataset, split: str) -> Dataset:
    """What :meth:`System.prepare` gets: the pools, and the train and dev claims other than ``split``'s."""
    kept = {cid: c for cid, c in dataset.claims.items() if c.split in ("train", "dev") and c.split != split}
    return replace(dataset, claims=kept, topics={cid: t for cid, t in dataset.topics.items() if cid in kept})


def gold_input(stage: str, claims: Sequence[Claim], retrieved: Sequence[list[DocId]] | None) -> list[Any]:
    """Each claim's gold input to ``stage`` (see the module docstring), in an order that carries no label."""
    out: list[Any] = []
    for n, claim in enumerate(claims):
        if stage == "relevance":
            given = list(retrieved[n]) if retrieved is not None else []
            rng = random.Random(claim.cid)
            for pid in sorted(claim.gold_pids - set(given)):
                given.insert(rng.randint(0, len(given)), pid)
            out.append(given)
        elif stage in ("stance", "equivalence"):
            pids = sorted(claim.gold_pids)
            random.Random(claim.cid).shuffle(pids)
            out.append(pids)
        else:
            out.append([list(k.pids) for k in claim.clusters])
    return out


@dataclass
class Run:
    """One pass of the chain: per stage, each claim's input and answer, what the input was
    (``"claims"``, ``"gold"`` or the source stage) and the seconds the system took."""

    inputs: dict[str, list[Any]] = field(default_factory=dict)
    outputs: dict[str, list[Any]] = field(default_factory=dict)
    read: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _available(tasks: Iterable[str], oracle: Iterable[str]) -> set[str]:
    """The declared chain stages that get an input in a run with ``oracle``."""
    ran: set[str] = set()
    for stage in CHAIN:
        if stage in tasks and (stage == "retrieve" or stage in oracle or SOURCE[stage] in ran):
            ran.add(stage)
    return ran


def check_scorable(system: Any, oracle: Sequence[str], name: str) -> None:
    """Refuse a declared chain task that no run can give an input to, naming the fix."""
    tasks = set(system.tasks)
    reachable = _available(tasks, ()) | _available(tasks, oracle)
    for stage in CHAIN:
        if stage in tasks and stage not in reachable:
            source = SOURCE[stage]
            verb = "cannot answer" if source in tasks else "does not answer"
            raise PerspectrumError(f"{name} answers {stage} but {verb} {source}, which gives {stage} its input: "
                                   f"pass --oracle {stage} to give it gold input")
    if not tasks & (set(CHAIN) | set(STANDALONE)):
        raise PerspectrumError(f"{name} declares only {', '.join(sorted(tasks))}, which the harness cannot "
                               "score yet")


def _pool_id(item: Any, pool: Any, where: str) -> DocId:
    key = int(item) if is_whole(item) else item
    if isinstance(key, (int, str)) and key in pool:
        return key
    raise PerspectrumError(f"{where} answered {item!r}, which is not an id of the pool")


def _listed(value: Any, length: int | None, where: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise PerspectrumError(f"{where} must answer a list, not {type(value).__name__}")
    out = list(value)
    if length is not None and len(out) != length:
        raise PerspectrumError(f"{where} answered {len(out)} items for {length}")
    return out


def _checked(stage: str, answer: Any, given: list[Any] | None, dataset: Dataset, where: str) -> list[Any]:
    """One claim's answer as plain ids and floats, or a one-line error saying what is wrong."""
    perspectives, evidence = dataset.perspectives, dataset.evidence
    if stage == "stance":
        scores = _listed(answer, len(given or ()), where)
        if not all(isinstance(s, Real) and math.isfinite(s) for s in scores):
            raise PerspectrumError(f"{where} must answer a finite number per perspective")
        return [float(s) for s in scores]
    if stage == "equivalence":
        return [[_pool_id(p, perspectives, where) for p in _listed(k, None, where)]
                for k in _listed(answer, None, where)]
    if stage == "evidence":
        return [[_pool_id(e, evidence, where) for e in _listed(k, None, where)]
                for k in _listed(answer, len(given or ()), where)]
    ids = [_pool_id(p, perspectives, where) for p in _listed(answer, None, where)]
    if stage == "relevance" and not set(ids) <= set(given or ()):
        raise PerspectrumError(f"{where} kept a perspective that was not among its candidates")
    return ids


def _answer(system: Any, name: str, stage: str, texts: list[str], given: list[Any] | None, dataset: Dataset,
            batch_size: int, show_progress: bool) -> list[Any]:
    """The system's answers for every claim, asked in batches and checked."""
    method: Callable[..., Any] = getattr(system, stage)
    out: list[Any] = []
    with progress(f"{name}: {stage}", len(texts), enabled=show_progress) as advance:
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            args = (batch,) if given is None else (batch, given[start:start + batch_size])
            try:
                answers = method(*args)
            except PerspectrumError:
                raise
            except Exception as exc:  # a third party's bug: one line, the cause chained for Python callers
                raise PerspectrumError(f"{name}'s {stage} failed: {type(exc).__name__}: {exc}") from exc
            answers = _listed(answers, len(batch), f"{name}'s {stage}")
            out += [_checked(stage, a, None if given is None else given[start + i], dataset, f"{name}'s {stage}")
                    for i, a in enumerate(answers)]
            advance(len(batch))
    return out


def run_chain(system: Any, dataset: Dataset, claims: Sequence[Claim], oracle: Sequence[str] = (),
              reuse: Run | None = None, name: str | None = None, batch_size: int = BATCH_SIZE,
              show_progress: bool = False) -> Run:
    """Ask ``system`` every declared chain stage that has an input, in order.

    A stage in ``oracle`` reads :func:`gold_input`; any other reads its source's answer in
    this run, or is skipped when its source did not run. With ``reuse`` (the own-input run),
    a stage whose input the oracle cannot change takes that run's answer instead of asking again.
    """
    name = name or str(getattr(system, "name", type(system).__name__))
    texts = [c.text for c in claims]
    run, asked = Run(), set()
    for stage in CHAIN:
        if stage not in system.tasks:
            continue
        source = SOURCE.get(stage)
        if reuse is not None and stage in reuse.outputs and stage not in oracle and source not in asked:
            for part in ("inputs", "outputs", "read", "seconds"):
                getattr(run, part)[stage] = getattr(reuse, part)[stage]
            continue
        if stage in oracle:
            given, read = gold_input(stage, claims, run.outputs.get("retrieve")), "gold"
        elif source is None:
            given, read = None, "claims"
        elif source in run.outputs:
            given, read = run.outputs[source], source
        else:
            continue
        started = time.perf_counter()
        run.outputs[stage] = _answer(system, name, stage, texts, given, dataset, batch_size, show_progress)
        run.seconds[stage] = round(time.perf_counter() - started, 2)
        run.inputs[stage], run.read[stage] = given, read
        asked.add(stage)
    return run


def _gold_share(claims: Sequence[Claim], given: Sequence[Iterable[DocId]]) -> float:
    """Share of the gold (claim, perspective) pairs whose perspective is in the claim's input."""
    total = sum(len(c.gold_pids) for c in claims)
    return sum(len(c.gold_pids & set(ids)) for c, ids in zip(claims, given)) / max(1, total)


def score_run(claims: Sequence[Claim], run: Run) -> dict[str, Any]:
    """T1–T5 (fractions) of one run, each ``None`` where the stage did not run, and the
    share of the gold that reached each stage (``coverage``)."""
    out: dict[str, Any] = dict.fromkeys(("retrieve", "t1", "t2", "t2_all", "t3", "t4", "t4_all", "t5", "t5_all"))
    coverage: dict[str, float] = {}
    outputs, inputs = run.outputs, run.inputs
    if "retrieve" in outputs:
        found = t1_relevance(claims, dict(zip((c.cid for c in claims), outputs["retrieve"])))
        out["retrieve"] = {"recall": found["recall"],
                           "candidates": sum(map(len, outputs["retrieve"])) / max(1, len(claims))}
    if "relevance" in outputs:
        out["t1"] = t1_relevance(claims, {c.cid: ids for c, ids in zip(claims, outputs["relevance"])})
        coverage["relevance"] = _gold_share(claims, inputs["relevance"])
    if "stance" in outputs:
        said = {(c.cid, pid): p >= SUPPORT_AT for c, ids, scores in zip(claims, inputs["stance"], outputs["stance"])
                for pid, p in zip(ids, scores)}
        out["t2"] = t2_stance(found_claims(claims, {c.cid: set(ids) for c, ids in zip(claims, inputs["stance"])}),
                              said)
        out["t2_all"] = t2_stance(claims, said)
        coverage["stance"] = _gold_share(claims, inputs["stance"])
    if "equivalence" in outputs:
        same = {c.cid: {pair for k in clusters for pair in combinations(k, 2)}
                for c, clusters in zip(claims, outputs["equivalence"])}
        out["t3"] = t3_equivalence(claims, same)
        coverage["equivalence"] = _gold_share(claims, inputs["equivalence"])
    if "evidence" in outputs:
        predicted: dict[ClusterKey, list[DocId]] = {}
        matched: set[ClusterKey] = set()
        for claim, clusters, answer in zip(claims, inputs["evidence"], outputs["evidence"]):
            pairs = (dict(enumerate(range(len(clusters)))) if run.read["evidence"] == "gold"
                     else assign_clusters([k.pids for k in claim.clusters], clusters))
            for index, returned in pairs.items():
                predicted[(claim.cid, index)] = answer[returned]
                matched.add((claim.cid, index))
        out["t4_all"] = t4_evidence(claims, predicted)
        out["t4"] = t4_evidence([replace(c, clusters=tuple(k if (c.cid, i) in matched else replace(k, evidence=())
                                                           for i, k in enumerate(c.clusters))) for c in claims],
                                predicted)
        with_evidence = [(c.cid, i) for c in claims for i, k in enumerate(c.clusters) if k.evidence]
        coverage["evidence"] = sum(key in matched for key in with_evidence) / max(1, len(with_evidence))
    if out["t1"] and out["t2"] and out["t4"]:
        out["t5"] = t5_overall(out["t1"]["f1"], out["t2"]["f1"], out["t4"]["f1"])
        out["t5_all"] = t5_overall(out["t1"]["f1"], out["t2_all"]["f1"], out["t4_all"]["f1"])
    out["coverage"] = coverage
    return out


def _shown(scores: dict[str, Any] | None) -> dict[str, Any] | None:
    """A run's scores in percent (the retrieve row's candidate count left as a count)."""
    if scores is None:
        return None
    out: dict[str, Any] = {}
    for key, value in scores.items():
        if key in ("t5", "t5_all"):
            out[key] = None if value is None else round(value * 100, 2)
        elif key == "retrieve":
            out[key] = None if value is None else {"recall": round(value["recall"] * 100, 2),
                                                    "candidates": round(value["candidates"], 1)}
        elif key == "coverage":
            out[key] = {stage: round(v * 100, 2) for stage, v in value.items()}
        else:
            out[key] = None if value is None else percent(value)
    return out


def _plain(settings: Any) -> Any:
    """A system's ``settings`` as JSON values (what JSON cannot hold, written as text), so
    ``--json`` never fails on a third party's choice of types."""
    return None if settings is None else json.loads(json.dumps(settings, default=str))


def _standalone(task: str, system: Any, dataset: Dataset, split: str, show_progress: bool) -> dict[str, Any]:
    module_name, _, function = STANDALONE[task].partition(":")
    scorer = getattr(importlib.import_module(module_name), function)
    return scorer(system, dataset, split, show_progress)


def evaluate_system(system: Any, dataset: Dataset, split: str = "test", oracle: Sequence[str] = (),
                    spec: str | None = None, batch_size: int = BATCH_SIZE,
                    show_progress: bool = False) -> dict[str, Any]:
    """Prepare ``system`` on the other splits, run the chain on ``split`` (twice with ``oracle``) and score it.

    Returns:
        A JSON-ready dict: the system, split and oracle stages; per task (``retrieve``,
        ``t1``…``t4_all``, any standalone task) its scores in percent on ``own`` and
        ``gold`` input (``None`` where that run did not score it; ``gold`` is ``None``
        throughout without ``oracle``); ``t5`` and ``t5_all`` likewise; what each stage
        read and how much of the gold reached it, per run; the settings the system chose
        in ``prepare`` when it exposes ``settings``; and seconds.
    """
    oracle = oracle_stages(oracle)
    name = str(getattr(system, "name", None) or spec or type(system).__name__)
    check_system(system, spec or name)
    check_scorable(system, oracle, name)
    claims = dataset.split(split)
    started = time.perf_counter()
    try:
        system.prepare(without_split(dataset, split))
    except PerspectrumError:
        raise
    except Exception as exc:
        raise PerspectrumError(f"{name}'s prepare failed: {type(exc).__name__}: {exc}") from exc
    prepare_seconds = round(time.perf_counter() - started, 2)
    own = run_chain(system, dataset, claims, (), None, name, batch_size, show_progress)
    gold = run_chain(system, dataset, claims, oracle, own, name, batch_size, show_progress) if oracle else None
    scores = {"own": _shown(score_run(claims, own)), "gold": _shown(score_run(claims, gold)) if gold else None}
    keys = ("retrieve", "t1", "t2", "t2_all", "t3", "t4", "t4_all")
    tasks = {key: {side: s[key] if s else None for side, s in scores.items()} for key in keys
             if any(s and s[key] is not None for s in scores.values())}
    unscored = {}
    for task in TASKS:
        if task in system.tasks and task not in CHAIN:
            if task in STANDALONE:
                tasks[task] = {"own": _standalone(task, system, dataset, split, show_progress), "gold": None}
            else:
                unscored[task] = "no scorer for it in the harness yet"
    return {
        "system": name,
        "spec": spec,
        "split": split,
        "claims": len(claims),
        "declared": [t for t in TASKS if t in system.tasks],
        "oracle": list(oracle),
        "tasks": tasks,
        "t5": {side: s["t5"] if s else None for side, s in scores.items()},
        "t5_all": {side: s["t5_all"] if s else None for side, s in scores.items()},
        "inputs": {"own": own.read, "gold": gold.read if gold else None},
        "coverage": {side: s["coverage"] if s else None for side, s in scores.items()},
        "unscored": unscored,
        "settings": _plain(getattr(system, "settings", None)),
        "stage_seconds": {"prepare": prepare_seconds, "own": own.seconds, "gold": gold.seconds if gold else None},
        "seconds": round(time.perf_counter() - started, 1),
    }
