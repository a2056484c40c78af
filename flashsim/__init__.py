"""flashsim: a discrete-event simulator of tiered all-flash HPC storage systems.

For notebooks::

    import flashsim
    result = flashsim.run_scenario("scenarios/perlmutter/ior-table1.toml",
                                   {"system.oss.nic.ports": "4"})
    frame = result.to_dataframe()

``load_system_model(path).kind.describe(model)`` gives per-layer peaks, and
:class:`flashsim.engine.simulation.Simulation` is the kernel for building
new components.
"""

from flashsim.scenario import load_scenario, load_system_model, run_loaded, run_scenario
from flashsim.sweep import run_sweep

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "load_scenario",
    "load_system_model",
    "run_loaded",
    "run_scenario",
    "run_sweep",
]
