"""Analytic write amplification of greedy garbage collection (uniform random overwrite).

Two closed forms, both for a page-mapped FTL whose host writes overwrite logical
units chosen uniformly at random, with greedy victim selection (the block holding
the fewest valid units is cleaned first).

Spare factor
------------
Both functions take the *spare factor* ``Sf = (T - U) / T`` of Desnoyers (SYSTOR
2012, Sec. 3): ``T`` physical units of NAND, ``U`` of them holding live logical
data.  It is the fraction of the NAND that is spare.  The over-provisioning
ratio ``op = (T - U) / U`` of Hu et al. (SYSTOR 2009) and of Xiang & Kurkoski
(2012) converts as ``Sf = op / (1 + op)``; ``alpha = T / U = 1 / (1 - Sf) = 1 + op``.

Models
------
* :func:`greedy_wa_large_m` -- the large-block limit (units per block ``m`` to
  infinity).  Every block then ages identically, greedy cleans the oldest block
  (greedy = FIFO/LRU), and the valid fraction ``u`` of a cleaned block solves
  ``u = exp(-alpha (1 - u))``, so::

      WA = 1 / (1 - u) = alpha / (alpha + W0(-alpha exp(-alpha)))

  with ``W0`` the principal branch of the Lambert W function.  Desnoyers,
  "Analytic modeling of SSD write performance", SYSTOR 2012 (and ACM TOS 10(4)
  2014), Sec. 4, the LRU/FIFO result which greedy approaches for large blocks;
  the same expression is Xiang & Kurkoski, "An improved analytical expression
  for write amplification in NAND flash", ICNC 2012 (arXiv:1110.4245), which
  quotes WA = 2.36 at ``op = 0.3`` (simulated 2.35) -- reproduced by the tests.
* :func:`greedy_wa_mean_field` -- greedy with a finite ``m``, in the mean-field
  (many blocks) limit of the class of models of Van Houdt, "A mean field model
  for a class of garbage collection algorithms in flash-based solid state
  drives", SIGMETRICS 2013 (greedy being the ``d -> infinity`` member of his
  d-choices family).  The closed form below is derived here from that fluid
  limit (the same ODE :mod:`flashsim.components.ftl_fluid` integrates): a block
  enters with ``m`` valid units and spends ``U / j`` host writes at level ``j``;
  greedy cleans at the lowest occupied level ``L``, where a stock of blocks waits
  and those that decay to ``L - 1`` are cleaned at once.  With ``a`` the
  normalised block creation rate and ``s`` the stock at ``L`` (both per block)::

      a (H_m - H_L) + s = 1                 (blocks)
      a (m - L) + L s = m / alpha           (valid units)
      WA = alpha * a,  valid when s >= 0 and s L <= a

  (``H_k`` the harmonic numbers).  ``L = 0`` gives ``WA = 1`` whenever
  ``alpha >= H_m`` (there is always an empty block), so ``m = 1`` never
  amplifies; as ``m`` grows the result tends to the Lambert-W form.
"""

from __future__ import annotations

import math

import numpy as np


def _check_spare(spare_factor: float) -> float:
    sf = float(spare_factor)
    if not 0.0 < sf < 1.0 or math.isnan(sf):
        raise ValueError(f"spare_factor(={spare_factor}) must be in (0, 1): (T - U) / T")
    return sf


def spare_factor_from_op(op: float) -> float:
    """Spare factor ``(T - U) / T`` of an over-provisioning ratio ``op = (T - U) / U``.

    Parameters
    ----------
    op : float
        Spare NAND as a fraction of the logical (user) space, dimensionless, > 0.
    """
    if not op > 0.0:
        raise ValueError(f"op(={op}) must be > 0")
    return op / (1.0 + op)


def greedy_wa_large_m(spare_factor: float) -> float:
    """Greedy-GC write amplification for large blocks (Lambert-W closed form).

    Parameters
    ----------
    spare_factor : float
        ``(T - U) / T``, dimensionless, in (0, 1).

    Returns
    -------
    float
        Flash unit programs per host unit write (>= 1).
    """
    sf = _check_spare(spare_factor)
    alpha = 1.0 / (1.0 - sf)
    from scipy.special import lambertw  # imported on use: SciPy is slow to import

    w = float(lambertw(-alpha * math.exp(-alpha), 0).real)
    return alpha / (alpha + w)


def greedy_wa_mean_field(spare_factor: float, units_per_block: int) -> float:
    """Greedy-GC write amplification with ``m`` units per block (mean-field limit).

    Parameters
    ----------
    spare_factor : float
        ``(T - U) / T``, dimensionless, in (0, 1).
    units_per_block : int
        ``m``, units written and invalidated together per erase block, >= 1.

    Returns
    -------
    float
        Flash unit programs per host unit write (>= 1).
    """
    sf = _check_spare(spare_factor)
    m = int(units_per_block)
    if m < 1 or m != units_per_block:
        raise ValueError(f"units_per_block(={units_per_block}) must be an integer >= 1")
    alpha = 1.0 / (1.0 - sf)
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, m + 1))))
    for level in range(m):
        tail = harmonic[m] - harmonic[level]
        a = (m / alpha - level) / ((m - level) - level * tail)
        stock = 1.0 - a * tail
        if stock >= -1e-12 and stock * level <= a + 1e-12:
            return float(max(1.0, alpha * a))
    raise AssertionError("unreachable: the lowest level m - 1 always solves the balance")
