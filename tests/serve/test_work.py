"""The server's work pool gives the C heap's free pages back after work, at most once a second."""

from __future__ import annotations

import asyncio

import pytest

from perspectrum import _memory
from perspectrum.serve import work


@pytest.fixture
def trims(monkeypatch) -> list[int]:
    """Each call the pool makes to the C library's trim, recorded instead of made."""
    calls: list[int] = []
    monkeypatch.setattr(_memory, "_TRIM", lambda pad: calls.append(pad) or 1)
    monkeypatch.setattr(_memory, "_trimmed", [0.0])
    return calls


def test_work_is_answered_as_it_was_and_the_free_pages_go_back_after_it(trims) -> None:
    pool = work.WorkPool(workers=1, queue=1)
    try:
        assert asyncio.run(pool.run(lambda a, b: a + b, 2, 3)) == 5
        assert trims == [0]  # once, after the work

        def fails() -> None:
            raise ValueError("the work's own error")

        _memory._trimmed[0] = 0.0
        with pytest.raises(ValueError, match="the work's own error"):
            asyncio.run(pool.run(fails))
        assert trims == [0, 0]  # after failed work too
    finally:
        pool.close()


def test_the_free_pages_go_back_at_most_once_a_second(trims) -> None:
    assert _memory.give_back_memory(now=100.0) is True
    assert _memory.give_back_memory(now=100.0 + _memory.TRIM_EVERY / 2) is False
    assert _memory.give_back_memory(now=100.0 + _memory.TRIM_EVERY) is True
    assert trims == [0, 0]


def test_no_trim_where_the_c_library_has_none(monkeypatch) -> None:
    monkeypatch.setattr(_memory, "_TRIM", None)
    monkeypatch.setattr(_memory, "_trimmed", [0.0])
    assert _memory.give_back_memory(now=100.0) is False
