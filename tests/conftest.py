"""A ten-claim dataset in PERSPECTRUM's file format, written fresh for each test.

The texts are our own, not the dataset's; the layout (file names, keys, types) is the
release's, so the same loader reads both. Each test gets its own copy, so tests may
corrupt files freely.

Tests marked ``slow`` (and every test that uses a fixture of :data:`SLOW_FIXTURES`) are
skipped unless asked for: ``pytest --slow``, ``PERSPECTRUM_SLOW=1`` or ``CI`` set (CI and
``scripts/test.sh`` run them).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from perspectrum.data import CHECKSUMS, load_dataset

# claim id -> (text, split, clusters as (pids, stance, evidence ids))
CLAIMS = {
    1: ("Zoos should be banned", "train", [([1, 2], "UNDERMINE", [1]), ([3], "SUPPORT", [2])]),
    2: ("Homework should be abolished", "train", [([4, 5], "SUPPORT", [3]), ([6], "UNDERMINE", [])]),
    3: ("Nuclear power is the answer to climate change", "train",
        [([7], "SUPPORT", [4, 5]), ([8, 9], "UNDERMINE", [6])]),
    4: ("Voting should be compulsory", "train", [([10, 11], "SUPPORT", [7]), ([12], "UNDERMINE", [8])]),
    5: ("Cities should ban private cars", "train", [([13], "SUPPORT", [9]), ([14, 15], "UNDERMINE", [10])]),
    6: ("School uniforms should be mandatory", "train", [([16, 17], "SUPPORT", [11]), ([18], "UNDERMINE", [])]),
    7: ("Animals should have legal rights", "dev",
        [([19, 20], "SUPPORT", [12]), ([21], "UNDERMINE", [13])]),
    8: ("Social media does more harm than good", "dev", [([22], "SUPPORT", [14]), ([23, 24], "UNDERMINE", [15])]),
    9: ("Space exploration is a waste of money", "test",
        [([25, 26], "SUPPORT", [16]), ([27], "UNDERMINE", [17])]),
    10: ("Fast food should be taxed", "test", [([28], "SUPPORT", [18]), ([29, 30], "UNDERMINE", [19])]),
}

PERSPECTIVES = {
    1: "Zoos protect endangered species through breeding programmes",
    2: "Breeding programmes in zoos save endangered animals",
    3: "Keeping animals in cages in zoos is cruel",
    4: "Homework takes away time children need for play",
    5: "Children lose play time to homework",
    6: "Homework reinforces what pupils learn in class",
    7: "Nuclear power produces almost no carbon emissions",
    8: "Nuclear waste stays dangerous for thousands of years",
    9: "Radioactive waste from nuclear plants is a lasting hazard",
    10: "Compulsory voting makes parliament represent everyone",
    11: "When everyone must vote the result reflects the whole population",
    12: "Forcing people to vote violates their freedom",
    13: "Private cars pollute city air",
    14: "Banning cars hurts people who cannot use public transport",
    15: "A car ban harms disabled residents",
    16: "Uniforms reduce bullying over clothes",
    17: "School uniforms stop pupils being teased about clothing",
    18: "Uniforms suppress pupils' individuality",
    19: "Animals feel pain and deserve legal protection",
    20: "Legal rights for animals recognise that they suffer",
    21: "Rights come with duties that animals cannot bear",
    22: "Social media spreads misinformation quickly",
    23: "Social media keeps distant families in touch",
    24: "Families far apart stay connected through social media",
    25: "Space exploration money should be spent on poverty",
    26: "Funds for space missions would do more good fighting poverty",
    27: "Space research produces technology used on earth",
    28: "A tax on fast food would reduce obesity",
    29: "Taxing fast food hurts poor families most",
    30: "Fast food taxes fall hardest on low income households",
    31: "Chess is a sport",
    32: "Tea is better than coffee",
}

EVIDENCE = {
    i: text
    for i, text in enumerate(
        [
            "Zoos run breeding programmes. Several species extinct in the wild survive only in zoos.",
            "Animals in zoos show stress. Cages are far smaller than their natural ranges.",
            "Studies find homework crowds out play. Play matters for child development.",
            "Nuclear plants emit almost no carbon dioxide. Their lifecycle emissions match wind.",
            "France cut emissions by building nuclear power plants.",
            "Spent nuclear fuel remains radioactive for millennia. No country has a permanent store.",
            "Countries with compulsory voting see turnout above ninety percent.",
            "Compulsory voting forces people to take part against their will.",
            "Exhaust from private cars is the main source of city air pollution.",
            "Many disabled people depend on cars because public transport is not accessible.",
            "Schools with uniforms report less bullying about clothing.",
            "Animals feel pain as humans do. Laws already protect them from cruelty.",
            "Rights imply duties. Animals cannot take on legal duties.",
            "False stories spread faster than true ones on social media.",
            "Video calls on social media keep families in touch across the world.",
            "Space budgets run to billions. That money could feed millions of people.",
            "Satellite technology developed for space is used in weather forecasts on earth.",
            "Taxes on sugary and fast food cut consumption and obesity.",
            "Food taxes are regressive. Poor households spend more of their income on food.",
            "Tea contains less caffeine than coffee.",
        ],
        start=1,
    )
}


#: Fixtures that make a test slow: `perspectrum train all --quick` on the fixture, and the
#: shipped-style models packed from what it trained (half a minute or more on 2 cores, once
#: per run, before the first test that uses them).
SLOW_FIXTURES = ("trained_dir", "shipped_set")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (as PERSPECTRUM_SLOW=1 or CI set do; scripts/test.sh does)")


def run_slow(config: pytest.Config) -> bool:
    """Whether this run includes the slow tests: asked for with ``--slow``, ``PERSPECTRUM_SLOW``
    or ``CI`` (set to anything but empty, ``0`` or ``false``), or named in ``-m``."""
    def said(name: str) -> bool:
        return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")

    return bool(config.getoption("--slow") or said("PERSPECTRUM_SLOW") or said("CI")
                or "slow" in (config.getoption("markexpr", "") or ""))


@pytest.hookimpl(tryfirst=True)  # before -m selects, so that -m "not slow" sees these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in item.fixturenames for name in SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
    if run_slow(config):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow or PERSPECTRUM_SLOW=1 (scripts/test.sh and CI do)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


def write_dataset(folder: Path) -> Path:
    """Write the five files of the tiny dataset into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    claims = []
    for cid, (text, _, clusters) in CLAIMS.items():
        perspectives = [
            {
                "pids": pids,
                "stance_label_3": stance,
                "stance_label_5": stance,
                "voter_counts": [3, 0, 0, 0, 0] if stance == "SUPPORT" else [0, 0, 0, 3, 0],
                "evidence": evidence,
            }
            for pids, stance, evidence in clusters
        ]
        claims.append({"cId": cid, "text": text, "source": "fixture", "perspectives": perspectives, "topics": []})
    files = {
        "perspectrum_with_answers_v1.0.json": claims,
        "perspective_pool_v1.0.json": [{"pId": i, "text": t, "source": "fixture"} for i, t in PERSPECTIVES.items()],
        "evidence_pool_v1.0.json": [{"eId": i, "text": t, "source": "fixture"} for i, t in EVIDENCE.items()],
        "dataset_split_v1.0.json": {str(cid): split for cid, (_, split, _) in CLAIMS.items()},
        "topic.json": [{"claim_id": cid, "topics": ["fixture"]} for cid in CLAIMS],
    }
    assert set(files) == set(CHECKSUMS)
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content), encoding="utf-8")
    return folder


def checksums_of(folder: Path) -> dict[str, str]:
    """SHA-256 of each fixture file, to stand in for the release's sums in tests."""
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in CHECKSUMS}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "data")


@pytest.fixture
def dataset(data_dir: Path):
    return load_dataset(data_dir, verify=False)


@pytest.fixture(scope="session")
def encoder():
    """The packaged MiniLM, loaded once per test run (a few seconds)."""
    from perspectrum.encoders.bi_encoder import Encoder

    model = Encoder()
    model.model  # noqa: B018 - load now so the first test using it is not billed for it
    return model


@pytest.fixture(scope="session", autouse=True)
def traced_cache(tmp_path_factory) -> Path:
    """Traced model copies go to a folder of this run, never the user's cache."""
    import os

    folder = tmp_path_factory.mktemp("cache")
    previous = os.environ.get("PERSPECTRUM_CACHE")
    os.environ["PERSPECTRUM_CACHE"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("PERSPECTRUM_CACHE", None)
    else:
        os.environ["PERSPECTRUM_CACHE"] = previous


@pytest.fixture(scope="session")
def trained_dir(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(data, indexes, models): all four tasks trained in ``--quick`` mode by `perspectrum train
    all`, which also chooses the pipeline's settings on dev; once per test run (about a minute)."""
    from typer.testing import CliRunner

    from perspectrum.cli.app import app
    from perspectrum.models.scorers import MODELS

    root = tmp_path_factory.mktemp("trained")
    data = write_dataset(root / "data")
    args = ["train", "all", "--quick", "--data-dir", str(data), "--no-verify", "--index-dir", str(root / "indexes"),
            "--models-dir", str(root / "models"), "--json", str(root / "train.json")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert set(json.loads((root / "train.json").read_text())) == {*MODELS, "pipeline"}
    return data, root / "indexes", root / "models"


@pytest.fixture(scope="session")
def shipped_set(trained_dir, tmp_path_factory) -> Path:
    """The quick models of :func:`trained_dir` packed as perspectrum packs the models it ships
    (`perspectrum models pack`), and named by ``$PERSPECTRUM_SHIPPED`` for the rest of the run,
    so that `setup` unpacks them (on MiniLM, in seconds) in place of the real shipped models.

    They are packed to score in float (``"quantize": false`` in their meta), as the shipped
    stance model does: int8 scales each batch's activations, so an int8 model's scores move
    in the last digits with the claims that share a batch, and the tests that compare whole
    answers across batchings (discover-batch against ``discover_many``) would compare that."""
    import os
    import shutil

    from perspectrum.models.shipped import SOURCE_ENV
    from perspectrum.train.pack import pack

    root = tmp_path_factory.mktemp("shipped")
    models = shutil.copytree(trained_dir[2], root / "trained", symlinks=True)
    for task in ("relevance", "stance", "equivalence"):
        meta_path = models / task / "perspectrum.json"
        meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "quantize": False}))
    folder = root / "shipped"
    pack(models, folder)
    previous = os.environ.get(SOURCE_ENV)
    os.environ[SOURCE_ENV] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop(SOURCE_ENV, None)
    else:
        os.environ[SOURCE_ENV] = previous


def prepared(root: Path) -> tuple[Path, Path, Path]:
    """(data, indexes, models) of the ten-claim fixture on a machine `perspectrum setup` has
    prepared: its indexes built and the shipped models unpacked (the caller holds
    :func:`shipped_set`, so these are the quick ones; seconds on the fixture)."""
    from perspectrum.train import prepare

    data = write_dataset(root / "data")
    prepare(data, root / "indexes", root / "models", verify=False)
    return data, root / "indexes", root / "models"


def pdf_of(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF of ``objects`` (numbered from 1), its cross-reference table computed."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)
