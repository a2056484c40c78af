"""Measurements from real benchmark tools: read, reproduce, compare, calibrate.

A site's own results (fio, IOR, IO-500, obdfilter-survey, LNet Self-Test,
Darshan) and the project's published reference values (``validation/*.toml``)
become the same thing, a :class:`~flashsim.measurements.record.Measurement`:
a quantity, its value and unit, and the conditions needed to reproduce it.

* :mod:`~flashsim.measurements.record`: the record and its conditions;
* :mod:`~flashsim.measurements.readers`: one reader per tool output format;
* :mod:`~flashsim.measurements.outcome`: the comparison of a simulated value
  with a measured one, the table ``validate`` and ``check`` print, JSON and
  JUnit XML;
* :mod:`~flashsim.measurements.reproduce`: a measurement's conditions turned
  into a scenario phase on a system model, run, and compared;
* :mod:`~flashsim.measurements.calibrate`: a bounded least-squares fit of a
  model's calibratable parameters to chosen measurements.

This package's ``__init__`` imports nothing, so each submodule sits in its own
layer (docs/architecture.md).
"""
