"""The ``lustre`` system kind: see :mod:`flashsim.systems.lustre.kind`."""
