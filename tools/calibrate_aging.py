"""Fit the two calibrated aging parameters of the Perlmutter model to seed 000 Fig. 8.

``oss.aging.cold_fraction`` to the ~10 % plateau loss of write bandwidth and
``oss.aging.spread`` to the onset after ~665 TB written (the seed's 5 x 133.3 TB;
4.92 of the model's 135.2 TB OSTs), both on
the ``fig8`` phase of ``scenarios/perlmutter/aging.toml`` (flow fidelity), by
alternating one-dimensional root finds until both settle.  Prints the values to
put in ``models/systems/perlmutter.toml``.

    .venv/bin/python tools/calibrate_aging.py
"""

from __future__ import annotations

from pathlib import Path

from scipy.optimize import brentq

from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.lustre.aging import OstAgingDetails

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "perlmutter" / "aging.toml"
LOSS = 0.10  # seed 000 §V-B: "a ~10% loss of write bandwidth"
ONSET_B = 665e12  # seed 000 §V-B: "approximately 5 full OSTs worth of data (~665 TB)"


def fig8(cold: float, spread: float) -> OstAgingDetails:
    """The ``fig8`` phase with the two parameters set."""
    loaded = load_scenario(
        SCENARIO,
        {"system.oss.aging.cold_fraction": str(cold), "system.oss.aging.spread": str(spread)},
    )
    loaded.phases = [p for p in loaded.phases if p.name == "fig8"]
    return run_loaded(loaded).phases[0].details(OstAgingDetails)


def main() -> None:
    cold, spread = 0.25, 6.8
    for _ in range(4):
        cold = brentq(lambda c, s=spread: fig8(c, s).loss - LOSS, 0.05, 0.6, xtol=1e-4)
        spread = brentq(lambda s, c=cold: fig8(c, s).onset_B - ONSET_B, 2.0, 9.5, xtol=1e-4)
    found = fig8(cold, spread)
    print(f"cold_fraction = {cold:.3f}  spread = {spread:.2f}")
    print(f"loss {found.loss:.4f}  onset {found.onset_B / 1e12:.1f} TB")


if __name__ == "__main__":
    main()
