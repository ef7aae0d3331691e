"""``perspectrum models list|export|install|pack``: trained models, shared as one verified bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from perspectrum._progress import literal
from perspectrum.cli.common import (DataDir, IndexDir, ModelsDir, NoVerify, console, echo_json, metric, models_app,
                                    models_folder, open_store, say)

#: ``models install``'s defaults, as :data:`perspectrum.models.bundle.LOW_SPEED_LIMIT` and
#: ``LOW_SPEED_SECONDS`` (written out: that module is imported only when a command runs).
LOW_SPEED_LIMIT = 1024.0
LOW_SPEED_SECONDS = 120.0


def _data_checksum(data_dir: Path | None) -> str:
    """The checksum of the data a bundle's models must have been trained on."""
    from perspectrum.data import data_checksum, resolve_data_dir

    return data_checksum(resolve_data_dir(data_dir))


@models_app.command("list")
def models_list(
    models_dir: ModelsDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as JSON.")] = False,
) -> None:
    """Your models, the shipped ones, which answer `discover`, and how good each is."""
    from perspectrum.models.bundle import inventory

    found = inventory(models_folder(models_dir))
    if as_json:
        echo_json(found)
        return
    table = Table(title=literal(f"models in {found['models_dir']}", "table.title"))
    for column in ("name", "from", "answers", "kind", "base", "data checksum", "dev", "test", "MB"):
        table.add_column(column, overflow="fold")
    for entry in found["entries"]:
        table.add_row(literal(entry["name"]), entry["source"], "yes" if entry["answers"] else "no",
                      literal(entry["kind"]), literal(str(entry["base_model"] or "-").split("/")[-1]),
                      literal((entry["data_checksum"] or "-")[:12]), metric(entry["dev"]), metric(entry["test"]),
                      f"{entry['size_bytes'] / 1e6:.1f}")
    console.print(table)
    console.print(literal(f"discover uses: {found['system']}"))


@models_app.command("export")
def models_export(
    out: Annotated[Path, typer.Argument(help="The archive to write (e.g. perspectrum-models.tar.gz).")],
    models_dir: ModelsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Pack every model folder and pipeline.json with a manifest of SHA-256 sums."""
    from perspectrum.models.bundle import export_models

    manifest = export_models(models_folder(models_dir), out, _data_checksum(data_dir), show_progress=True)
    say(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {', '.join(manifest['entries'])}; "
        f"{len(manifest['files'])} files, data {manifest['data_checksum'][:12]}…")


@models_app.command("install")
def models_install(
    source: Annotated[str, typer.Argument(help="A bundle from `perspectrum models export`: a path, or a "
                                          "file://, http:// or https:// URL.")],
    models_dir: ModelsDir = None,
    data_dir: DataDir = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Remove installed models the bundle does not hold (by default they are kept, "
                          "and the bundle's models replace only their namesakes).")] = False,
    speed_limit: Annotated[float, typer.Option(
        "--speed-limit", min=0, help="Abandon a download that brings fewer bytes a second than this over "
                                     "--speed-time seconds (0: never; as curl's --speed-limit).")] = LOW_SPEED_LIMIT,
    speed_time: Annotated[float, typer.Option(
        "--speed-time", min=0.001, help="Seconds over which a download's speed is held to --speed-limit.")
    ] = LOW_SPEED_SECONDS,
) -> None:
    """Verify a bundle (every sum and size, the version, the data checksum) and swap it in atomically:
    its models replace their namesakes; installed models it lacks are kept unless --replace."""
    from perspectrum.models.bundle import install_models

    target = models_folder(models_dir)
    done = install_models(source, target, _data_checksum(data_dir), show_progress=True, replace=replace,
                          speed_limit=speed_limit, speed_time=speed_time)
    # which installed models it kept (or, with --replace, removed): a bundle of one model must not
    # pass over the others without a word
    others = ""
    if done["kept"]:
        others = f"; kept {', '.join(done['kept'])} (installed, not in the bundle; --replace removes them)"
    elif done["removed"]:
        others = f"; removed {', '.join(done['removed'])} (not in the bundle; --replace)"
    say(f"installed {', '.join(done['entries'])} into {target} ({len(done['files'])} files "
        f"verified; made by perspectrum {done['perspectrum_version']} on {done['created']}){others}")


@models_app.command("pack")
def models_pack(
    to: Annotated[Path, typer.Option("--to", help="The folder to write (the package's own: perspectrum/shipped).")],
    models_dir: ModelsDir = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    no_verify: NoVerify = False,
) -> None:
    """Pack the four trained models small, as perspectrum ships them (each a weight difference over its
    base), each small form scored on dev and refused if it loses more than half a point."""
    from perspectrum.data import load_dataset
    from perspectrum.train.pack import pack

    done = pack(models_folder(models_dir), to, dev=(load_dataset(data_dir, verify=not no_verify),
                                                     open_store(index_dir)))
    sizes = ", ".join(f"{task} {record['delta_bytes'] / 1e6:.1f} MB" for task, record in done.items())
    say(f"packed into {to}: {sizes}")
