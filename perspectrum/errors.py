"""The one exception type users see (and its kind for a missing optional extra).

Every failure the user can fix (missing data, bad checksum, stale index, bad option)
raises :class:`PerspectrumError` with a message that names the file or value at fault.
The CLI prints it as one line and exits non-zero, so nothing else needs to catch it.
"""


class PerspectrumError(Exception):
    """A problem with the user's input or environment, worded for the user."""


class MissingExtra(PerspectrumError, ImportError):
    """A feature's optional dependency is not installed; the message names the extra that
    brings it (``pip install 'perspectrum[serve]'``). Also an :class:`ImportError`, so code
    that probes for the feature with ``except ImportError`` still works."""


def missing_extra(feature: str, extra: str, exc: ModuleNotFoundError) -> MissingExtra:
    """The one-line error for ``feature`` when ``exc`` says a package of ``extra`` is missing.

    Only for :class:`ModuleNotFoundError`: an installed package that fails to import (too
    old, broken) is a different problem and keeps its own traceback.
    """
    package = (exc.name or "").split(".")[0] or "a package"
    return MissingExtra(f"{feature} needs {package}, which is not installed: pip install 'perspectrum[{extra}]'",
                        name=exc.name)
