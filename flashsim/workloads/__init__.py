"""Workload generators shared by every system kind (IOR-like, ...)."""
