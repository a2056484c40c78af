"""Studies for papers and notebooks, built on scenarios, sweeps and the system kinds.

A study's runs are phases of a system kind (for VAST,
:mod:`flashsim.systems.vast.study`), so scenarios and validation records run
them; a study module here runs the same units on Dask
(:func:`flashsim.tasks.run_tasks`) and draws the figures.  Nothing below this
package imports it (``docs/architecture.md``).
"""
