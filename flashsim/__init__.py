"""flashsim: a discrete-event simulator of tiered all-flash HPC storage systems.

For notebooks::

    import flashsim
    result = flashsim.run_scenario("scenarios/perlmutter/ior-table1.toml",
                                   {"system.oss.nic.ports": "4"})
    frame = result.to_dataframe()

``load_system_model(path).kind.describe(model)`` gives per-layer peaks, and
:class:`flashsim.engine.simulation.Simulation` is the kernel for building
new components.

``import flashsim`` loads nothing else: each name below is imported on first
use (PEP 562), so ``flashsim --help`` starts without the simulator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from flashsim.scenario import load_scenario, load_system_model, run_loaded, run_scenario
    from flashsim.sweep import run_sweep

__version__ = "0.1.0"

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "load_scenario": "flashsim.scenario",
    "load_system_model": "flashsim.scenario",
    "run_loaded": "flashsim.scenario",
    "run_scenario": "flashsim.scenario",
    "run_sweep": "flashsim.sweep",
}

__all__ = [
    "__version__",
    "load_scenario",
    "load_system_model",
    "run_loaded",
    "run_scenario",
    "run_sweep",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flashsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
