"""The ``perspectrum`` command: one function a command, whose options Typer reads from its parameters.

Every :class:`~perspectrum.errors.PerspectrumError` raised underneath is printed as one
line on stderr with exit code 1; Typer's own usage errors exit with code 2. Whatever
comes from outside (claims, queries, pool texts and ids, paths, bundle fields) is printed
literally, never as rich markup, with control characters made visible
(:func:`perspectrum.cli.display.printable`).

The app, its options and helpers live in :mod:`perspectrum.cli.common`; each command (or
group of commands) in a module of its own, which registers it there. Importing this module
imports every one of them, so :data:`app` holds every command.
"""

from __future__ import annotations

# each module registers its commands on the app (or a sub-app) when imported
from perspectrum.cli import (data, discover, evaluate, index, models, pool, score, search, serve, setup,  # noqa: F401
                             text, train)
from perspectrum.cli import map as map_command  # noqa: F401
from perspectrum.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
