"""Load PERSPECTRUM v1.0 as typed records, verified against the published checksums.

The project keeps the SHA-256 sums of the five release files, never the files
themselves: users point ``PERSPECTRUM_DATA`` (or ``--data-dir``) at a folder holding
them, or fetch them with :func:`download`. Every problem with that folder becomes a
one-line :class:`~perspectrum.errors.PerspectrumError` naming the file at fault.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from perspectrum._checks import is_id
from perspectrum._io import atomic_write
from perspectrum.errors import PerspectrumError
from perspectrum.integrity import sha256_file
from perspectrum.text.sentences import encodable

DATA_ENV = "PERSPECTRUM_DATA"
SPLITS = ("train", "dev", "test")
#: A gold cluster: (claim id, index of the cluster within the claim).
ClusterKey = tuple[int, int]
STANCES = ("SUPPORT", "UNDERMINE")

CLAIMS_FILE = "perspectrum_with_answers_v1.0.json"
PERSPECTIVES_FILE = "perspective_pool_v1.0.json"
EVIDENCE_FILE = "evidence_pool_v1.0.json"
SPLIT_FILE = "dataset_split_v1.0.json"
TOPIC_FILE = "topic.json"

#: SHA-256 of each file of the v1.0 release (CogComp/perspectrum, data/dataset/).
CHECKSUMS: dict[str, str] = {
    SPLIT_FILE: "5ba5296f6e5956c44a2fd014b15a3f7c10b9a253451162932acaf217f20cd7da",
    EVIDENCE_FILE: "752408354a69277fb245a2c1ca9039a4a8835ad5550d8c43ffa7072fcad7a429",
    PERSPECTIVES_FILE: "d4d4e78c4777ea971d26546a8819aa9e02c5a68ffff45e10b40ca0cb91b43ae4",
    CLAIMS_FILE: "39d0391d26ebe21efb1cc3162abcc3c4212d2eadfb07514129c3015d6f6ae1f1",
    TOPIC_FILE: "e4ca9e96d22e0c7201709ff89314aeba4cb0e2dc57006407d864cb7a87e81920",
}

DOWNLOAD_URL = "https://raw.githubusercontent.com/CogComp/perspectrum/master/data/dataset/"


@dataclass(frozen=True)
class Perspective:
    """One sentence of the perspective pool."""

    pid: int
    text: str
    source: str


@dataclass(frozen=True)
class Evidence:
    """One paragraph of the evidence pool."""

    eid: int
    text: str
    source: str


@dataclass(frozen=True)
class Cluster:
    """A gold cluster: equivalent perspectives sharing one stance and one evidence set.

    ``stance`` is the 2-way ``stance_label_3`` (``SUPPORT``/``UNDERMINE``) the paper's
    T2 scores; ``voter_counts`` are the annotators' votes over (support, mildly support,
    mildly undermine, undermine, fifth option), kept for soft-label stance training.
    """

    pids: tuple[int, ...]
    stance: str
    stance_5: str
    voter_counts: tuple[int, ...]
    evidence: tuple[int, ...]


@dataclass(frozen=True)
class Claim:
    """A claim with its gold perspective clusters."""

    cid: int
    text: str
    source: str
    split: str
    topics: tuple[str, ...]
    clusters: tuple[Cluster, ...]

    @property
    def gold_pids(self) -> frozenset[int]:
        """Every perspective that belongs to some gold cluster of this claim."""
        return frozenset(pid for cluster in self.clusters for pid in cluster.pids)


@dataclass(frozen=True)
class Dataset:
    """All of PERSPECTRUM: claims with gold labels, both pools, and the crowd topics."""

    claims: dict[int, Claim]
    perspectives: dict[int, Perspective]
    evidence: dict[int, Evidence]
    topics: dict[int, tuple[str, ...]]

    def split(self, name: str) -> list[Claim]:
        """The claims of one split, in id order."""
        if name not in SPLITS:
            raise PerspectrumError(f"unknown split {name!r}: choose one of {', '.join(SPLITS)}")
        return [claim for claim in self.claims.values() if claim.split == name]

    def counts(self) -> dict[str, int]:
        """The figures ``perspectrum data check`` reports."""
        counts = {"claims": len(self.claims)}
        for name in SPLITS:
            claims = self.split(name)
            counts[f"{name}_claims"] = len(claims)
            counts[f"{name}_clusters"] = sum(len(c.clusters) for c in claims)
            counts[f"{name}_pairs"] = sum(len(k.pids) for c in claims for k in c.clusters)
        counts["perspectives"] = len(self.perspectives)
        counts["evidence"] = len(self.evidence)
        counts["topic_rows"] = len(self.topics)
        return counts


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    """The data folder: the explicit argument, else ``$PERSPECTRUM_DATA``."""
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV)
    if not chosen:
        raise PerspectrumError(
            f"no data folder: set {DATA_ENV} or pass --data-dir "
            "(get the files with `perspectrum data download --to DIR`)"
        )
    path = Path(chosen).expanduser()
    if not path.is_dir():
        raise PerspectrumError(f"data folder {path} does not exist or is not a folder")
    return path


def verify_files(data_dir: Path) -> None:
    """Check that all five files are present and match the v1.0 checksums."""
    for name, expected in CHECKSUMS.items():
        path = data_dir / name
        if not path.is_file():
            raise PerspectrumError(f"missing data file {path}")
        actual = sha256_file(path)
        if actual != expected:
            raise PerspectrumError(
                f"checksum mismatch for {path}: expected {expected[:12]}…, got {actual[:12]}… "
                "(not the PERSPECTRUM v1.0 file; pass --no-verify to use modified data)"
            )


def data_checksum(data_dir: str | Path | None = None) -> str:
    """One SHA-256 over the five files' own SHA-256s: what a model card records as its data."""
    folder = resolve_data_dir(data_dir)
    digest = hashlib.sha256()
    for name in sorted(CHECKSUMS):
        path = folder / name
        digest.update(f"{name}:{sha256_file(path) if path.is_file() else 'missing'}\n".encode())
    return digest.hexdigest()


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise PerspectrumError(f"missing data file {path}")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PerspectrumError(f"malformed JSON in {path}: {exc}") from None


def _records(path: Path, build: Callable[[dict[str, Any]], Any]) -> Iterator[Any]:
    """Turn each JSON object of a list file into a record, naming the file on any gap."""
    rows = _read_json(path)
    if not isinstance(rows, list):
        raise PerspectrumError(f"malformed data in {path}: expected a JSON list")
    for position, row in enumerate(rows):
        try:
            yield build(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise PerspectrumError(f"malformed record #{position} in {path}: {exc!r}") from None


def _cluster(row: dict[str, Any]) -> Cluster:
    stance = row["stance_label_3"]
    if stance not in STANCES:
        raise ValueError(f"stance_label_3 {stance!r}")
    return Cluster(
        pids=tuple(int(p) for p in row["pids"]),
        stance=stance,
        stance_5=str(row["stance_label_5"]),
        voter_counts=tuple(int(v) for v in row["voter_counts"]),
        evidence=tuple(int(e) for e in row["evidence"]),
    )


def load_dataset(data_dir: str | Path | None = None, verify: bool = True) -> Dataset:
    """Load and cross-check the five files of PERSPECTRUM v1.0.

    Args:
        data_dir: folder with the files; ``None`` reads ``$PERSPECTRUM_DATA``.
        verify: check the SHA-256 sums first. Turn off only for test fixtures or
            deliberately modified data; published numbers assume verified data.

    Returns:
        The dataset; claims missing from the split file are an error, since every
        metric is defined per split.
    """
    folder = resolve_data_dir(data_dir)
    if verify:
        verify_files(folder)
    perspectives = {
        p.pid: p
        for p in _records(
            folder / PERSPECTIVES_FILE,
            lambda r: Perspective(int(r["pId"]), str(r["text"]), str(r["source"])),
        )
    }
    evidence = {
        e.eid: e
        for e in _records(
            folder / EVIDENCE_FILE,
            lambda r: Evidence(int(r["eId"]), str(r["text"]), str(r["source"])),
        )
    }
    split_path = folder / SPLIT_FILE
    split = _read_json(split_path)
    if not isinstance(split, dict) or any(v not in SPLITS for v in split.values()):
        raise PerspectrumError(f"malformed data in {split_path}: expected {{claim id: split}}")
    topics = dict(
        _records(folder / TOPIC_FILE, lambda r: (int(r["claim_id"]), tuple(r["topics"])))
    )

    def claim(row: dict[str, Any]) -> Claim:
        cid = int(row["cId"])
        if str(cid) not in split:
            raise ValueError(f"claim {cid} has no split in {SPLIT_FILE}")
        return Claim(
            cid=cid,
            text=str(row["text"]),
            source=str(row["source"]),
            split=split[str(cid)],
            topics=tuple(row.get("topics", ())),
            clusters=tuple(_cluster(c) for c in row["perspectives"]),
        )

    claims_path = folder / CLAIMS_FILE
    claims = {c.cid: c for c in _records(claims_path, claim)}
    for c in claims.values():
        missing = next((p for k in c.clusters for p in k.pids if p not in perspectives), None)
        if missing is not None:
            raise PerspectrumError(
                f"malformed data in {claims_path}: claim {c.cid} cites perspective {missing}, "
                f"absent from {PERSPECTIVES_FILE}"
            )
    return Dataset(claims=claims, perspectives=perspectives, evidence=evidence, topics=topics)


def download(to: str | Path, base_url: str = DOWNLOAD_URL, timeout: float = 30.0) -> list[Path]:
    """Fetch the five release files into ``to`` and verify each checksum.

    Each file is written to a temporary name and renamed only once its checksum
    matches, so an interrupted or failed download never leaves a partial file behind.
    """
    target = Path(to).expanduser()
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, expected in CHECKSUMS.items():
        url = base_url + name

        def fetch(tmp: Path) -> None:
            digest = hashlib.sha256()
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:
                    blocks = iter(lambda: resp.read(1 << 20), b"")
                    with tmp.open("wb") as out:
                        for block in blocks:
                            digest.update(block)
                            out.write(block)
            except (urllib.error.URLError, ValueError) as exc:  # the network's fault, not the disk's
                raise PerspectrumError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from None
            if digest.hexdigest() != expected:
                raise PerspectrumError(f"checksum mismatch for {url}: not the PERSPECTRUM v1.0 file")

        written.append(atomic_write(target / name, fetch))
    return written


POOL_NAMES = ("perspectives", "evidence", "sentences")
#: Longest line of an own pool file, in characters (newline included). A record is one
#: perspective sentence (PERSPECTRUM's longest: 281 characters) or one evidence paragraph
#: (longest: 11,903), so a line of a million is not a record but a file of another kind
#: (a corpus on one line, binary data). Lines are read with this limit, so such a file is
#: refused before a line of any length is held in memory; a long document (a book
#: chapter, a report) still fits on one line.
MAX_POOL_LINE_CHARS = 1_000_000


def sentence_id(eid: int, position: int) -> str:
    """The id of sentence ``position`` (from 0) of evidence paragraph ``eid`` in the ``sentences`` pool."""
    return f"{eid}:{position}"


def paragraph_of(doc_id: int | str) -> int | str:
    """The evidence paragraph a ``sentences``-pool id belongs to (inverse of :func:`sentence_id`).

    PERSPECTRUM's paragraph ids are integers; an own pool's may be any string.
    """
    head = str(doc_id).rsplit(":", 1)[0]
    return int(head) if head.isdigit() else head


def json_problem(exc: json.JSONDecodeError) -> str:
    """What is wrong with a JSON text and where, for a person to find it: the reason in
    full and its column, e.g. "Invalid control character at column 12" (the decoder's
    own message, "Invalid control character at: line 1 column 12 (char 11)", reads as a
    fragment once the position is cut off); the line too when the text spans several."""
    where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
    return f"{exc.msg.removesuffix(' at')} at {where}"


def jsonl_rows(path: Path, kind: str, layout: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file a user gives (a pool, a list of claims), parsed,
    with its line number; the caller checks the fields.

    One reader for every such file, so each refuses the same things in the same words: a
    missing file or a folder, text that is not UTF-8, a line longer than
    :data:`MAX_POOL_LINE_CHARS` (read with that limit, so a file of another kind is never
    held whole), a line that is not JSON; each a one-line error naming the file and line.
    A byte-order mark (as some editors write) is read past. ``kind`` names the file in
    those errors (``"pool file"``) and ``layout`` what each line holds (``'{"id", "text"}'``).

    Lines end at "\n" only, as JSON Lines defines them (a "\r" before it is JSON
    whitespace): a "\r" alone, or U+2028 inside a string, is part of its line, so a line
    is the same line here as where :mod:`perspectrum.index.pools` rewrites the file, and
    the line numbers in errors are an editor's.
    """
    if path.is_dir():
        raise PerspectrumError(f"{path} is a folder, not a {kind} (JSONL: one {layout} per line)")
    if not path.is_file():
        raise PerspectrumError(f"no such {kind}: {path}")
    try:
        with open(path, encoding="utf-8-sig", errors="strict", newline="\n") as handle:
            lines = iter(lambda: handle.readline(MAX_POOL_LINE_CHARS + 1), "")
            for number, line in enumerate(lines, 1):
                where = f"{path}, line {number}"
                if len(line) > MAX_POOL_LINE_CHARS:
                    raise PerspectrumError(f"{where}: longer than {MAX_POOL_LINE_CHARS:,} characters "
                                           f"(a {kind} holds one record per line)")
                if not line.strip():
                    continue
                try:
                    row = json.loads(line.rstrip("\r\n"))  # an error at its end is on this line, not the next
                except json.JSONDecodeError as exc:
                    raise PerspectrumError(f"{where}: not valid JSON: {json_problem(exc)}") from None
                except RecursionError:
                    raise PerspectrumError(f"{where}: JSON nested too deeply to read") from None
                except ValueError:  # Python reads no integer of over 4,300 digits
                    raise PerspectrumError(f"{where}: a number too long to read (over 4,300 digits)") from None
                yield number, row
    except UnicodeDecodeError:
        raise PerspectrumError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise PerspectrumError(f"cannot read {kind} {path}: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class Pool:
    """The texts one index is built over: perspective sentences, evidence paragraphs, or
    the evidence paragraphs' sentences (which a paragraph-level vector blurs: one
    sentence of a long paragraph may match a perspective that the whole does not).

    Ids keep their type (PERSPECTRUM's are ints) so hits map straight back to gold
    labels; ``fingerprint`` hashes ids and texts so an index knows its pool changed.
    """

    name: str
    ids: tuple[int | str, ...]
    texts: tuple[str, ...]

    @classmethod
    def from_dataset(cls, dataset: Dataset, name: str) -> Pool:
        """The dataset's perspective, evidence or evidence-sentence pool, in id order."""
        if name == "perspectives":
            rows: list[tuple[int | str, str]] = sorted((p.pid, p.text) for p in dataset.perspectives.values())
        elif name == "evidence":
            rows = sorted((e.eid, e.text) for e in dataset.evidence.values())
        elif name == "sentences":
            return cls.sentences_of(cls.from_dataset(dataset, "evidence"))
        else:
            raise PerspectrumError(f"unknown pool {name!r}: choose one of {', '.join(POOL_NAMES)}")
        return cls(name, tuple(i for i, _ in rows), tuple(t for _, t in rows))

    @classmethod
    def from_jsonl(cls, path: str | Path, name: str) -> Pool:
        """A pool of your own: one JSON object per line with ``id`` and ``text``.

        Ids may be strings or integers (kept as given, so hits map back to your
        records; if some are strings, all become strings). Blank lines are skipped, and a
        byte-order mark (as some editors write) is read past. Any line that is not a JSON
        object with a non-empty ``text`` and a new ``id``, or that is longer than
        :data:`MAX_POOL_LINE_CHARS`, is a one-line error naming the file and line.
        """
        path = Path(path).expanduser()
        ids: list[int | str] = []
        texts: list[str] = []
        seen: dict[int | str, int] = {}
        for number, row in jsonl_rows(path, "pool file", '{"id", "text"}'):
            where = f"{path}, line {number}"
            if not isinstance(row, dict) or "id" not in row or "text" not in row:
                raise PerspectrumError(f'{where}: expected an object with "id" and "text"')
            doc_id, text = row["id"], row["text"]
            if not is_id(doc_id):
                raise PerspectrumError(f"{where}: id must be a non-empty string or an integer")
            if not isinstance(text, str) or not text.strip():
                raise PerspectrumError(f"{where}: empty text for id {doc_id!r}")
            if not encodable(text) or not encodable(str(doc_id)):
                raise PerspectrumError(f"{where}: the id or text holds a lone surrogate escape "
                                       "(such as \\udcff), which is not a character")
            if doc_id in seen:
                raise PerspectrumError(f"{where}: duplicate id {doc_id!r} (first on line {seen[doc_id]})")
            seen[doc_id] = number
            ids.append(doc_id)
            texts.append(text.strip())
        if not ids:
            raise PerspectrumError(f"{path} holds no records")
        if not all(isinstance(i, int) for i in ids):  # one id type, as an index stores them
            if len({str(i) for i in ids}) < len(ids):
                raise PerspectrumError(f"{path}: ids collide once written as text (e.g. 1 and \"1\")")
            ids = [str(i) for i in ids]
        return cls(name, tuple(ids), tuple(texts))

    @classmethod
    def sentences_of(cls, evidence: Pool) -> Pool:
        """The ``sentences`` pool of an evidence pool: each paragraph split by
        :func:`perspectrum.text.sentences.sentences`, in paragraph then position order (a paragraph
        the splitter finds no sentence in is one). Splitting 8,092 paragraphs takes
        ~35 s, so :meth:`perspectrum.index.store.IndexStore.sentences` caches the result.
        """
        from perspectrum.text.sentences import sentences

        rows = [(sentence_id(eid, j), text) for eid, paragraph in zip(evidence.ids, evidence.texts)
                for j, text in enumerate(sentences(paragraph) or (paragraph,))]
        return cls("sentences", tuple(i for i, _ in rows), tuple(t for _, t in rows))

    @cached_property
    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for doc_id, text in zip(self.ids, self.texts):
            digest.update(f"{type(doc_id).__name__}:{doc_id}\t{text}\n".encode())
        return digest.hexdigest()

    def __len__(self) -> int:
        return len(self.ids)
