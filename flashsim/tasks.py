"""Run independent tasks on Dask: the executor of sweeps and studies.

:func:`run_tasks` runs ``func(*args, tick)`` for each argument set as its own
Dask task (in this process when there is only one), and :func:`dask_client`
opens a client on a running scheduler or on a new local cluster of
single-threaded worker processes that ignore SIGINT (:func:`dask_setup`, the
workers' preload hook).  This module sits below the system kinds
(``docs/architecture.md``), so a kind may hand :func:`run_tasks` to its study
runner: ``flashsim validate`` and ``flashsim run`` then run a study's units on
parallel workers, with the same rows whatever the number of workers.
:mod:`flashsim.sweep` runs its points with :func:`dask_client`.
"""

from __future__ import annotations

import logging
import signal
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from typing import Any

from flashsim.config import ConfigError

__all__ = ["dask_client", "dask_setup", "run_tasks"]


@contextmanager
def dask_client(workers: int, scheduler: str | None = None) -> Iterator[Any]:
    """A Dask client on ``scheduler`` or on a new local cluster of ``workers`` processes.

    The local cluster has one thread per worker, gives each worker one task at
    a time (``worker-saturation`` 1.0) and does not retry a task whose worker
    died (``allowed-failures`` 0: that point fails alone and ``--resume`` reruns
    it).  Its worker processes ignore SIGINT once started (:func:`dask_setup`),
    so a Ctrl-C stops only this process, which then shuts them down.  Client
    and cluster are closed on exit, whatever happens.

    Raises
    ------
    ConfigError
        When ``scheduler`` cannot be reached.
    """
    import dask
    from dask.distributed import Client, LocalCluster

    cluster = None
    client = None
    try:
        if scheduler is not None:
            try:
                client = Client(scheduler, timeout="10s")  # type: ignore[no-untyped-call]
            except (OSError, TimeoutError, ValueError) as exc:
                raise ConfigError(
                    "command line",
                    "--scheduler",
                    scheduler,
                    f"the address of a running Dask scheduler ({type(exc).__name__}: {exc})",
                ) from None
        else:
            settings = {
                "distributed.scheduler.allowed-failures": 0,
                "distributed.scheduler.worker-saturation": 1.0,
            }
            with dask.config.set(settings):
                cluster = LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.CRITICAL,
                    preload=["flashsim.tasks"],  # runs dask_setup below in each worker
                )
            client = Client(cluster)  # type: ignore[no-untyped-call]
        yield client
    finally:
        _close_quietly(client, cluster)


def _ticking_task(func: Callable[..., Any], args: tuple[Any, ...], queue_name: str) -> Any:
    """Run ``func(*args, tick)`` on a Dask worker; ``tick(k)`` posts ``k`` to the queue."""
    from distributed import Queue

    queue = Queue(queue_name)  # type: ignore[no-untyped-call]
    return func(*args, lambda k: queue.put(int(k)))  # type: ignore[no-untyped-call]


def run_tasks(
    func: Callable[..., Any],
    arg_sets: Sequence[tuple[Any, ...]],
    progress: Callable[[int], Any] = lambda k: None,
) -> list[Any]:
    """Run ``func(*args, tick)`` for each argument set as its own Dask task.

    The executor of the studies (``flashsim.studies``): a single argument set
    runs in this process; inside a Dask worker (a study run as a sweep point)
    the tasks go to that worker's cluster; with a Dask ``Client`` already open
    in this process, to its cluster; otherwise to a new local cluster of one
    single-threaded worker process per argument set, shut down on return (or
    on an interrupt).  ``tick(k)`` in a task reaches ``progress(k)`` here.

    Returns
    -------
    list
        ``func``'s results in the order of ``arg_sets`` (whatever finished first).

    Raises
    ------
    Exception
        The first error a task raised, as raised there.
    """
    if len(arg_sets) <= 1:
        return [func(*args, progress) for args in arg_sets]
    from distributed import Queue, default_client, get_worker, wait, worker_client

    context: Any
    try:
        get_worker()
        context = worker_client()
    except ValueError:
        try:
            context = nullcontext(default_client())  # type: ignore[no-untyped-call]
        except ValueError:
            context = dask_client(len(arg_sets))
    with context as client:
        queue = Queue(f"flashsim-ticks-{uuid.uuid4().hex}", client=client)  # type: ignore[no-untyped-call]
        futures = [
            client.submit(_ticking_task, func, args, queue.name, pure=False) for args in arg_sets
        ]
        finished = False
        while not finished:
            try:
                wait(futures, timeout=0.25)  # type: ignore[no-untyped-call]
                finished = True
            except TimeoutError:
                pass
            for tick in queue.get(batch=True):  # type: ignore[no-untyped-call]
                progress(int(tick))
            if any(f.status == "error" for f in futures):
                break
        results: list[Any] = client.gather(futures)
        return results


def dask_setup(worker: Any) -> None:
    """Dask preload hook of the local cluster's workers: ignore SIGINT; no named semaphores.

    A Ctrl-C in a terminal reaches every process of the foreground group; the
    workers leave it to the sweep (or study) in the parent, which cancels the
    points and shuts them down.

    A worker still running a point when the cluster shuts down is terminated
    (a simulation cannot be cancelled mid-run).  tqdm's default lock is a
    ``multiprocessing`` semaphore with a name (workers are spawned), which a
    terminated process never unlinks, so the parent's resource tracker would
    print "There appear to be 1 leaked semaphore objects" after the sweep's
    one line.  A worker's progress bars are never shown, so a thread lock does.
    """
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _close_quietly(client: Any, cluster: Any) -> None:
    """Close the client then the cluster (terminating its workers), never raising."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    for thing in (client, cluster):
        if thing is None:
            continue
        # Shutting down, perhaps after an interrupt: nothing useful to raise.
        with suppress(BaseException):
            thing.close(timeout=10)
