"""Running tasks on threads, merged in order, with Ctrl-C stopping after the tasks in flight.

Private. The kernels release the GIL (``nogil=True``), so plain threads run them in parallel.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Self, TypeVar

from relsim._running import InterruptFlag

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future, ThreadPoolExecutor


class _Tally(Protocol):
    """What ``run_in_order`` merges into: a trial count and an ``add`` returning a new tally."""

    @property
    def trials(self) -> int: ...

    def add(self, result: Any) -> Self: ...


_Task = TypeVar("_Task")
_Result = TypeVar("_Result")
_TallyT = TypeVar("_TallyT", bound=_Tally)


class _Executor:
    """A thread pool that, on the way out, drops queued work instead of waiting for it."""

    def __init__(self, threads: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="relsim-mc")

    def __enter__(self) -> ThreadPoolExecutor:
        return self._pool

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._pool.shutdown(wait=exc_type is None, cancel_futures=True)


class _StopOnError:
    """Sets the stop flag when an exception leaves the block (a second Ctrl-C, an error in
    ``progress``): the workers then end their tasks within a slice instead of running them
    to the end while the exception propagates and the interpreter waits for them."""

    def __init__(self, flag: InterruptFlag) -> None:
        self._flag = flag

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is not None:
            self._flag.set()


def run_in_order(
    tasks: Iterator[_Task],
    run_task: Callable[[_Task, InterruptFlag], _Result],
    tally: _TallyT,
    threads: int,
    progress: Callable[[int], None] | None,
) -> _TallyT:
    """Run ``tasks`` on ``threads`` threads and ``tally.add`` their results in task order.

    ``run_task(task, stop)`` must return soon after ``stop.is_set`` turns true, with what it
    has done so far. At most ``2 * threads`` tasks are queued at once (memory does not grow
    with the run). Ctrl-C, or ``KeyboardInterrupt`` raised by ``progress`` (called with the
    trials each task added), sets the flag: no task starts after it, the running ones return
    their part and the tally so far is returned; a second one raises ``KeyboardInterrupt``
    (the workers, seeing the flag, stop within their slice, so the process can exit).
    """
    merged = tally
    interrupted = InterruptFlag()
    with interrupted, _Executor(threads) as pool, _StopOnError(interrupted):
        pending: deque[Future[_Result | None]] = deque()

        def fill() -> None:
            while len(pending) < 2 * threads and not interrupted.is_set:
                task = next(tasks, None)
                if task is None:
                    return
                pending.append(pool.submit(_unless_stopped, run_task, task, interrupted))

        fill()
        while pending:
            done = merged.trials
            result = _result(pending.popleft())
            if result is not None:
                merged = merged.add(result)  # one assignment: a Ctrl-C sees before or after
            if progress is not None:
                try:
                    progress(merged.trials - done)
                except KeyboardInterrupt:
                    if interrupted.is_set:  # a second interrupt: abort
                        raise
                    interrupted.set()
            if interrupted.is_set:
                for future in pending:
                    future.cancel()
                for future in pending:
                    if not future.cancelled() and (result := _result(future)) is not None:
                        merged = merged.add(result)
                pending.clear()
                break
            fill()
    return merged


def _unless_stopped(
    run_task: Callable[[_Task, InterruptFlag], _Result], task: _Task, stop: InterruptFlag
) -> _Result | None:
    """Run a queued task, or nothing when the stop came while it waited (None: no result)."""
    if stop.is_set:
        return None
    return run_task(task, stop)


def _result(future: Future[_Result]) -> _Result:
    """``future.result()``, waking every 0.1 s: a SIGINT that Linux delivers to a worker
    thread does not interrupt the main thread's wait, and Python runs the handler only when
    the main thread wakes."""
    while True:
        try:
            return future.result(timeout=0.1)
        except TimeoutError:
            continue
