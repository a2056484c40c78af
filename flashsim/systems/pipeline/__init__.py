"""The ``pipeline`` system kind: see :mod:`flashsim.systems.pipeline.kind`."""
