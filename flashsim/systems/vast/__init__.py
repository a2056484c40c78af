"""The ``vast`` system kind: see :mod:`flashsim.systems.vast.kind`."""
