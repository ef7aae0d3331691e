"""Where the server's model work runs: a bounded pool of threads, off the event loop.

At most ``workers`` requests run at once and ``queue`` more may wait; past that a request
is refused (:class:`Busy`) with a ``Retry-After`` estimated from recent request times,
instead of piling up. A request whose client leaves (:class:`Left`) gives its place back at
once if its work has not started, and asks its work to stop (a :class:`threading.Event`
the work checks) if it has; a place is counted taken until its thread is free again.

After a piece of work, at most once a second, the C heap's free pages go back to the system
(:func:`give_back_memory`): glibc keeps what torch, numpy and the tokenizers free, in pieces a
long-running server would otherwise hold for good, so its resident memory would keep growing
with requests whose objects are long gone.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from perspectrum._memory import give_back_memory

def _then_give_back(work: Callable[..., Any], *args: Any) -> Any:
    try:
        return work(*args)
    finally:
        give_back_memory()


class Busy(Exception):
    """Every worker is busy and the queue is full."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class Left(Exception):
    """The client left before its work was done; the work was cancelled or asked to stop."""


class WorkPool:
    """Runs blocking model work on ``workers`` threads; refuses work past ``workers + queue``.

    The count of accepted requests lives on the event loop's thread, so it needs no lock.
    ``Retry-After`` is the time the requests ahead would take at the recent pace (a
    moving average of each request's run time), at least one second.
    """

    def __init__(self, workers: int, queue: int) -> None:
        self.workers = workers
        self.limit = workers + queue
        self.accepted = 0  # work waiting for a thread or running on one
        self.left = 0  # requests whose client left before their work was done
        self.seconds = 1.0  # moving average of a request's run time
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="perspectrum-work")

    @property
    def queue(self) -> int:
        """Requests that may wait for a worker."""
        return self.limit - self.workers

    def full(self) -> bool:
        """Whether the next request would be refused."""
        return self.accepted >= self.limit

    def retry_after(self) -> int:
        return max(1, math.ceil(self.seconds * self.accepted / self.workers))

    async def run(self, work: Callable[..., Any], *args: Any, gone: Callable[[], Awaitable[Any]] | None = None,
                  stop: threading.Event | None = None) -> Any:
        """``work(*args)`` on a worker thread. ``gone``: a coroutine function that returns
        when the client has left; then the work is cancelled if it has not started, ``stop``
        is set for work that has (it should check it and stop), and :class:`Left` is raised."""
        if self.full():
            raise Busy(self.retry_after())
        loop = asyncio.get_running_loop()
        self.accepted += 1
        started = time.perf_counter()
        future: Future = self._executor.submit(_then_give_back, work, *args)

        def release(done: Future) -> None:
            self.accepted -= 1
            if not done.cancelled() and done.exception() is None:
                self.seconds = 0.8 * self.seconds + 0.2 * (time.perf_counter() - started)

        def on_done(done: Future) -> None:  # on the worker's thread, or here when cancelled
            try:
                loop.call_soon_threadsafe(release, done)
            except RuntimeError:  # the loop is closed: the server has stopped
                pass

        future.add_done_callback(on_done)
        answer = asyncio.wrap_future(future)
        if gone is None:
            return await answer
        watch = asyncio.ensure_future(gone())
        try:
            await asyncio.wait({answer, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not answer.done():
                future.cancel()  # not started: it never will be
                if stop is not None:
                    stop.set()  # started: it stops at its next check
                answer.add_done_callback(_retrieve)
            watch.cancel()
        if answer.done() and not answer.cancelled():
            return answer.result()
        self.left += 1
        raise Left()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _retrieve(future: asyncio.Future) -> None:
    """Take the outcome of work nobody waits for any more, so it is not reported as lost."""
    if not future.cancelled():
        future.exception()
