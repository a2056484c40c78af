"""Physical component models (drives, links, NICs, CPUs, RAID, file-system clients).

Each module has one job: it turns datasheet parameters (SI floats) into the
per-operation service times and capacities that both fidelities use.  A
component never knows which system it is part of.
"""
