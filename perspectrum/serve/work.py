"""Where the server's model work runs: a bounded pool of threads, off the event loop.

At most ``workers`` requests run at once and ``queue`` more may wait; past that a request
is refused (:class:`Busy`) with a ``Retry-After`` estimated from recent request times,
instead of piling up.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


class Busy(Exception):
    """Every worker is busy and the queue is full."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class WorkPool:
    """Runs blocking model work on ``workers`` threads; refuses work past ``workers + queue``.

    The count of accepted requests lives on the event loop's thread, so it needs no lock.
    ``Retry-After`` is the time the requests ahead would take at the recent pace (a
    moving average of each request's run time), at least one second.
    """

    def __init__(self, workers: int, queue: int) -> None:
        self.workers = workers
        self.limit = workers + queue
        self.accepted = 0
        self.seconds = 1.0  # moving average of a request's run time
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="perspectrum-work")

    @property
    def queue(self) -> int:
        """Requests that may wait for a worker."""
        return self.limit - self.workers

    def retry_after(self) -> int:
        return max(1, math.ceil(self.seconds * self.accepted / self.workers))

    async def run(self, work: Callable[..., Any], *args: Any) -> Any:
        if self.accepted >= self.limit:
            raise Busy(self.retry_after())
        self.accepted += 1
        started = time.perf_counter()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, work, *args)
        finally:
            self.accepted -= 1
            self.seconds = 0.8 * self.seconds + 0.2 * (time.perf_counter() - started)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
