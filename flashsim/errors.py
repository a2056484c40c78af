"""The user-error and warning types every layer raises, without importing any machinery.

:class:`ConfigError` is a bad model, scenario or command-line value (the CLI
prints it on one ``error:`` line and exits 2); :class:`ModelWarning` is a
value accepted but not modelled.  They live here, apart from the schemas of
:mod:`flashsim.config` (which re-exports them), so that ``flashsim --help``
and the CLI's error handling load no pydantic.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

#: Marks a ConfigError that has no value to show (a missing key or file).
MISSING = object()


@dataclass
class ConfigError(Exception):
    """A bad model, scenario or command-line value.

    Attributes
    ----------
    path : str
        The file (or ``"--set"`` / ``"command line"``) the value came from.
    key : str
        Dotted key of the value, e.g. ``oss.nic.ports``.
    value : object
        The offending value as written.
    expected : str
        What would have been accepted.
    """

    path: str
    key: str
    value: object
    expected: str

    def __str__(self) -> str:
        parts = [self.path] if self.path else []
        if self.key:
            shown = _show(self.value)
            parts.append(f"key '{self.key}'" + (f" = {shown}" if shown else ""))
        return ": ".join([*parts, self.expected])


def _show(value: object) -> str:
    if value is MISSING:
        return ""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"<an integer of ~{int(value.bit_length() * math.log10(2)) + 1} digits>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ModelWarning(UserWarning):
    """A value that is accepted but not modelled; the CLI prints each once as ``warning:``."""


def warn(message: str) -> None:
    """Warn (once per message in the CLI) that an accepted value is not modelled, and why."""
    warnings.warn(message, ModelWarning, stacklevel=2)
