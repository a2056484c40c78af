"""flashsim: a discrete-event simulator of tiered all-flash HPC storage systems."""

__version__ = "0.1.0"
