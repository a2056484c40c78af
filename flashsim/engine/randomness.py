"""Seeded random streams owned by a simulation, one per named component.

Each stream is derived from the simulation seed and a stable hash of the
component's dotted name, so the same seed gives bit-identical draws and adding
a component never changes another component's stream.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _name_key(name: str) -> list[int]:
    """Stable 128-bit key of a component name, as four 32-bit words."""
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=16).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


class RandomStreams:
    """Factory of independent, reproducible NumPy generators keyed by name.

    Parameters
    ----------
    seed : int
        The simulation seed (>= 0).

    Examples
    --------
    >>> streams = RandomStreams(7)
    >>> a = streams.stream("perlmutter.oss17.ssd3").random()
    >>> b = RandomStreams(7).stream("perlmutter.oss17.ssd3").random()
    >>> a == b
    True
    """

    def __init__(self, seed: int) -> None:
        if seed < 0:
            raise ValueError(f"seed(={seed}) must be >= 0")
        self.seed = int(seed)
        self._streams: dict[str, np.random.Generator] = {}

    def stream(self, name: str) -> np.random.Generator:
        """Return the generator of component ``name``, creating it on first use."""
        gen = self._streams.get(name)
        if gen is None:
            seq = np.random.SeedSequence(entropy=[self.seed, *_name_key(name)])
            gen = np.random.Generator(np.random.PCG64(seq))
            self._streams[name] = gen
        return gen
