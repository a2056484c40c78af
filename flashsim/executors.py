"""Where a sweep's points may run (``flashsim sweep --executor``): names and costs.

A module of constants with no imports, so that the command line can build
the ``--executor`` help from them without loading the sweep machinery
(pandas, Dask); :mod:`flashsim.sweep` uses and re-exports them.
"""

from __future__ import annotations

#: Where a sweep's points may run (``--executor``): ``auto`` starts in this
#: process and moves the rest to a local Dask cluster only when that pays
#: (:func:`flashsim.sweep.dask_pays`); ``in-process`` never starts a cluster;
#: ``dask`` always does.
EXECUTORS = ("auto", "in-process", "dask")

#: Wall-clock seconds a local Dask cluster is assumed to take to start, with its
#: worker processes importing flashsim, before it runs a point.  Measured on a
#: 2-core machine under a load of ~10: 3 tiny points took 23.5 s on a 2-worker
#: cluster against 6.7 s in this process, ~17 s of start-up; a quiet machine takes
#: a few seconds, so ``auto`` errs towards staying in this process.
DASK_STARTUP_S = 20.0


def executor_help(startup_s: float = DASK_STARTUP_S) -> str:
    """The ``--executor`` help: what each of :data:`EXECUTORS` does.

    Parameters
    ----------
    startup_s : float
        Start-up time of a local Dask cluster (s) the help quotes
        (:data:`DASK_STARTUP_S`).
    """
    what = {
        "auto": "in this process, moving the rest to a local Dask cluster only when their "
        f"measured cost says its ~{startup_s:g} s start-up pays (a few small points never "
        "start one)",
        "in-process": "never a cluster",
        "dask": "always (--scheduler implies it)",
    }
    return "Where the points run. " + "; ".join(f"{name}: {what[name]}" for name in EXECUTORS) + "."
