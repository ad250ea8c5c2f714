"""Running a grid: in this process, on a dask ``LocalCluster``, or on an existing cluster.

The points to compute (those the journal lacks) are cut into batches: one point per task for
the slow methods, many for the cheap exact engine, so that dask's scheduling (about a
millisecond a task) does not dominate. Each finished batch goes to the journal at once, so an
interruption loses at most the batches in flight.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator, Mapping, Sequence

from relsim import checks
from relsim.errors import RelsimError, invalid
from relsim.sweeps._main_guard import check_main_guard
from relsim.sweeps.grid import Grid
from relsim.sweeps.methods import Method, method, run_batch
from relsim.sweeps.store import Journal, check_output, journal_path, write_frame

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["sweep"]

#: The most points of a cheap method in one task: enough that a task's work (about 1 ms a
#: point) dwarfs dask's overhead per task, few enough that an interruption loses little.
MAX_BATCH = 100
#: Batches per worker for a cheap method, so that workers finishing early find more work.
BATCHES_PER_WORKER = 4
#: Seconds to wait for a dask scheduler given by address, the handshake included, before
#: giving up.
CONNECT_TIMEOUT = 10
#: The most local worker processes (far above any machine's cores; guards typos).
MAX_WORKERS = 1024
#: Local worker processes per core at most: each is a single-threaded Python process of some
#: 200 MB, so more than a few per core only compete for the cores and fill the memory.
WORKERS_PER_CORE = 4
#: A scheduler address: tcp:// or tls://, a host name or IP address (IPv6 in brackets), a port.
_ADDRESS = re.compile(
    r"^(?:tcp|tls)://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?):(\d{1,5})$"
)
#: The most points in one task when ``batch`` is given.
MAX_POINTS_PER_TASK = 1_000_000


def sweep(
    grid: Grid | str | Path | Mapping[str, Any],
    out: str | Path | None = None,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    batch: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> "pd.DataFrame":
    """Judge every point of a grid; one row per point.

    Parameters
    ----------
    grid : Grid, path or mapping
        The grid (a path is read with :meth:`Grid.from_toml`, a mapping with
        :meth:`Grid.from_dict`). Every point is validated before anything runs.
    out : path or None
        Where to write the rows: ``.parquet`` or ``.csv``. The sweep is then resumable: each
        finished point is appended to ``OUT.journal.jsonl`` at once, and a sweep run again with
        the same grid computes only the points the journal lacks (a journal of another grid or
        base scenario is refused). None: keep nothing on disk.
    workers : int or None
        Run on a dask ``LocalCluster`` of this many worker processes (one thread each), at
        most ``WORKERS_PER_CORE`` (4) per core of this machine. They import the main script
        again, so a script calls this under ``if __name__ == "__main__":``; one that does not
        is refused at once, before any process starts.
    scheduler : str, distributed.Client or None
        Run on an existing dask cluster: its scheduler's address (``tcp://HOST:PORT`` or
        ``tls://HOST:PORT``) or a connected ``Client``. The connection and dask's handshake
        must be done within ``CONNECT_TIMEOUT`` (10 s). The workers need relsim installed.
        Without ``workers`` and ``scheduler`` the points run one after another in this
        process.
    batch : int or None
        Points per task; None: one for the stochastic methods, up to ``MAX_BATCH`` for exact.
    progress : callable or None
        Called with the number of points each finished batch added (first with the number
        the journal already held, when it held any). An exception raised from it stops the
        sweep; the points finished so far stay in the journal.

    Raises
    ------
    relsim.errors.RelsimError
        Before the first point runs: for a bad grid, argument or address, an ``out`` that
        cannot be written (a folder, a path under a file, a FIFO), or a journal that is not
        this sweep's or is damaged (naming its line).

    Returns
    -------
    pandas.DataFrame
        Columns ``point`` (the index), one per axis (the dotted key; an axis holding a list or
        a table has every value as JSON text), the method's outcome columns
        (``METHODS[method].columns``: for ``timeline`` also ``timeout``, ``infra_failure``
        and the time figures flattened, ``duration_p90``, ``throughput_per_hour``, ...) and,
        for the stochastic methods, the standard errors (``<key>_se``) and the point's
        ``seed`` (:func:`relsim.sweeps.point_seed`). ``frame.attrs["sweep"]`` holds
        ``{"points", "computed", "skipped", "out"}``.

    Notes
    -----
    A point's numbers depend only on its scenario and its seed, never on the workers, the
    batches or the order: point ``i`` of a simulate sweep is
    ``simulate(grid.scenario(i), trials, seed=point_seed(seed, i), threads=1)``, of a
    timeline sweep ``simulate_timeline(grid.scenario(i), trials, seed=point_seed(seed, i),
    threads=1)`` for independent trials and ``simulate_timeline(grid.scenario(i), replications=R,
    seed=point_seed(seed, i))`` for a workload.
    A point that Ctrl-C cuts short is not recorded: the sweep stops with
    ``KeyboardInterrupt`` and the journal keeps the points finished before.

    Examples
    --------
    >>> frame = sweep({"base": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}},
    ...                "axes": {"retries.per_step": [0, 2]}})
    >>> frame[["retries.per_step", "success"]].round(6).values.tolist()
    [[0.0, 0.071790], [2.0, 0.975298]]
    """
    grid = _as_grid(grid)
    entry = method(grid.method)
    if workers is not None:
        _check_workers(workers)
        if scheduler is not None:
            raise RelsimError("workers: give workers (a local cluster) or scheduler, not both")
        check_main_guard()  # before any worker process starts: they import the script again
    if scheduler is not None:
        _check_scheduler(scheduler)
    if batch is not None:
        _check_count("batch", batch, MAX_POINTS_PER_TASK)
    if progress is not None and not callable(progress):
        raise invalid("progress", "callable or None", progress)
    journal = None
    if out is not None:
        out = check_output(out)
        journal = Journal.open(
            journal_path(out), _manifest(grid),
            check=lambda index, row: entry.check_row(row, grid.seed_of(index)),
        )
    done: dict[int, dict[str, Any]] = dict(journal.done) if journal is not None else {}
    skipped = len(done)
    todo = [index for index in range(len(grid)) if index not in done]
    computed = 0
    try:
        if skipped and progress is not None:
            progress(skipped)
        if todo:
            runner = _dask if workers is not None or scheduler is not None else _local
            with contextlib.closing(runner(grid, entry, todo, batch, workers, scheduler)) as batches:
                for rows in batches:
                    if journal is not None:
                        journal.append(rows)
                    for index, row in rows:
                        done.setdefault(index, row)
                    computed += len(rows)
                    if progress is not None:
                        progress(len(rows))
    finally:
        if journal is not None:
            journal.close()
    frame = _frame(grid, entry, done)
    if out is not None:
        write_frame(frame, out)
    frame.attrs["sweep"] = {
        "points": len(grid),
        "computed": computed,
        "skipped": skipped,
        "out": None if out is None else str(out),
    }
    return frame


def _as_grid(grid: Any) -> Grid:
    if isinstance(grid, Grid):
        return grid
    if isinstance(grid, (str, Path)):
        return Grid.from_toml(grid)
    if isinstance(grid, Mapping):
        return Grid.from_dict(grid)
    raise invalid("grid", "a relsim.sweeps.Grid, a grid file or a mapping", grid)


def _check_count(key: str, value: Any, high: int, why: str = "") -> None:
    checks.integer(value, key, 1, high, allowed=f"an integer in 1..{high}{why}")


def _check_workers(workers: Any) -> None:
    """At most ``WORKERS_PER_CORE`` local worker processes per core (and ``MAX_WORKERS``)."""
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        cores = max(1, os.cpu_count() or 1)
    high = min(MAX_WORKERS, WORKERS_PER_CORE * cores)
    why = f" ({WORKERS_PER_CORE} per core, {cores} core{'s' if cores > 1 else ''} here)"
    _check_count("workers", workers, high, why if high < MAX_WORKERS else "")


def _check_scheduler(scheduler: Any) -> None:
    """A scheduler address of the form ``tcp://HOST:PORT`` (or ``tls://``), or a Client."""
    allowed = "a dask scheduler address tcp://HOST:PORT (or tls://HOST:PORT), or a distributed.Client"
    if isinstance(scheduler, str):
        match = _ADDRESS.match(scheduler)
        if match is None or not 1 <= int(match.group(1)) <= 65535:
            raise invalid("scheduler", allowed, scheduler)
        return
    from distributed import Client

    if not isinstance(scheduler, Client):
        raise invalid("scheduler", allowed, scheduler)


def _manifest(grid: Grid) -> dict[str, Any]:
    from relsim import __version__

    return {
        **grid.fingerprint(),
        "points": len(grid),
        "method": grid.method,
        "relsim": __version__,
        "source": grid.source,
    }


def _batches(todo: Sequence[int], entry: Method, workers: int, batch: int | None) -> list[list[int]]:
    if batch is None:
        batch = 1
        if entry.cheap:
            batch = max(1, min(MAX_BATCH, math.ceil(len(todo) / (workers * BATCHES_PER_WORKER))))
    return [list(todo[start : start + batch]) for start in range(0, len(todo), batch)]


Rows = list[tuple[int, dict[str, Any]]]


def _local(grid: Grid, entry: Method, todo: Sequence[int], batch: int | None,
           workers: Any, scheduler: Any) -> Generator[Rows, None, None]:
    """Every batch in this process, in index order (the scenarios are the validated ones)."""
    for indices in _batches(todo, entry, 1, batch):
        yield run_batch(entry.name, grid.trials, [(i, grid.scenario(i), grid.seed_of(i)) for i in indices],
                        grid.replications)


def _dask(grid: Grid, entry: Method, todo: Sequence[int], batch: int | None,
          workers: int | None, scheduler: Any) -> Generator[Rows, None, None]:
    """Every batch as a dask task; results in the order they finish."""
    from distributed import Client, LocalCluster, as_completed

    cluster = client = None
    futures: list[Any] = []
    try:
        if isinstance(scheduler, Client):
            own, client = False, scheduler
        elif scheduler is not None:
            own = True
            client = _connect(Client, scheduler)
        else:
            own = True
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                # No dashboard; the scheduler's small HTTP server on a free port, not 8787.
                scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                silence_logs=logging.ERROR,
            )
            client = Client(cluster)
        count = workers or max(1, len(client.scheduler_info().get("workers", {})))
        for indices in _batches(todo, entry, count, batch):
            points = [(i, grid.scenario_dict(i), grid.seed_of(i)) for i in indices]
            futures.append(client.submit(run_batch, entry.name, grid.trials, points,
                                         grid.replications, pure=False))
        for future in as_completed(futures):
            yield future.result()
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.cancel(futures)
            if own:
                client.close()
        if cluster is not None:
            cluster.close()


def _connect(client_class: Any, address: str) -> Any:
    _handshake(address)
    try:
        return client_class(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as error:
        raise RelsimError(
            f"scheduler: cannot connect to {address!r} within {CONNECT_TIMEOUT} s ({error})"
        ) from None


def _handshake(address: str) -> None:
    """Connect to ``address`` and finish dask's handshake within ``CONNECT_TIMEOUT``, or a
    RelsimError: a port that accepts and never answers would otherwise hang the Client (its
    timeout covers the connection, not the handshake), and one that answers in another
    protocol (an HTTP server) sends bytes dask reads as a frame length of exabytes.

    Runs on an event loop of its own in a thread of its own, so that it works from a program
    (or a notebook) that already runs one.
    """
    import asyncio
    import concurrent.futures

    from distributed.comm import connect

    async def shake() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=CONNECT_TIMEOUT), CONNECT_TIMEOUT)
        await comm.close()

    failure = f"scheduler: cannot connect to {address!r} within {CONNECT_TIMEOUT} s"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, shake()).result()
        except (OSError, TimeoutError) as error:
            raise RelsimError(f"{failure} ({_reason(error)})") from None
        except Exception as error:  # whatever the far end sent, it was not dask's handshake
            raise RelsimError(
                f"{failure}: it does not answer as a dask scheduler ({_reason(error)})"
            ) from None


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split())[:120]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _frame(grid: Grid, entry: Method, done: Mapping[int, Mapping[str, Any]]) -> "pd.DataFrame":
    import pandas as pd

    indices = range(len(grid))
    columns: dict[str, list[Any]] = {"point": list(indices)}
    points = [grid.point(i) for i in indices]
    for name in grid.axis_names:
        columns[name] = _axis_column([point[name] for point in points])
    for key in entry.columns:
        columns[key] = [done[i][key] for i in indices]
    frame = pd.DataFrame(columns)
    if "seed" in frame:
        frame["seed"] = frame["seed"].astype("int64")
    return frame


def _axis_column(values: list[Any]) -> list[Any]:
    """An axis's column: its values as they are when they are all numbers (or all text);
    otherwise every value as JSON text (a per-step list, a table, or a mix), so that the
    column has one type and parquet can hold it."""
    text = [isinstance(value, str) for value in values]
    if all(isinstance(value, (bool, int, float, str)) for value in values) and len(set(text)) == 1:
        return values
    return [json.dumps(value, separators=(", ", ": ")) for value in values]
