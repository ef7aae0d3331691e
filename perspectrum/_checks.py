"""The one test of a whole number, for every setting, argument and id that must be one, and
the one test of a record id (pools, claims files, index folders).

A bool is an ``int`` to Python, so ``True`` would otherwise pass as 1; a float such as
``2.0`` or ``2.5`` is not whole here, whatever its value; NumPy's integers are.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from perspectrum.errors import PerspectrumError


def is_whole(value: Any, least: int | None = None) -> bool:
    """Whether ``value`` is a whole number (not a bool), and at least ``least`` when given."""
    return isinstance(value, Integral) and not isinstance(value, bool) and (least is None or value >= least)


def is_id(value: Any) -> bool:
    """Whether ``value`` can be a record's id: a non-empty string or an integer (not a bool)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool) and value != ""


def whole(name: str, value: Any, least: int = 1) -> int:
    """``value`` as an int, or a one-line error naming ``name``: a float, a bool or a string
    here would otherwise fail (or, as ``top=True``, quietly mean 1) only once models are loaded."""
    if not is_whole(value, least):
        raise PerspectrumError(f"{name} must be a whole number, at least {least}, not {value!r}")
    return int(value)
