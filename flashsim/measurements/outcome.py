"""A simulated value set beside a measured one: the comparison, the table, JSON and JUnit XML.

``flashsim validate`` (published values) and ``flashsim check`` (a site's own
measurements) both produce a list of :class:`Outcome` and print it with
:func:`format_table`, :meth:`Outcome.to_dict` and :func:`junit_xml`, so the two
commands cannot drift apart.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from flashsim.measurements.record import Measurement, Role

Comparison = Literal["within", "at_least", "at_most"]
Status = Literal["pass", "fail", "skip"]


def compare(published: float, simulated: float, tolerance: float, comparison: str) -> bool:
    """Whether ``simulated`` meets ``published`` under the comparison.

    ``within``: ``|sim/pub - 1| <= tolerance``; ``at_least``:
    ``sim >= pub * (1 - tolerance)``; ``at_most``: ``sim <= pub * (1 + tolerance)``.
    A non-finite simulated value never passes.
    """
    if not math.isfinite(simulated):
        return False
    if comparison == "at_least":
        return simulated >= published * (1.0 - tolerance)
    if comparison == "at_most":
        return simulated <= published * (1.0 + tolerance)
    return abs(simulated / published - 1.0) <= tolerance


@dataclass
class Outcome:
    """One measurement's verdict (an element of ``validate --json`` / ``check --json``).

    Attributes
    ----------
    id, source, quantity, unit : str
        From the measurement (``source``: publication or ``file:line``).
    published : float
        The reference value in ``unit``: the published value (``validate``) or
        the measured one (``check``).
    simulated : float
        The model's value in ``unit`` (NaN when skipped).
    rel_error : float
        ``simulated / published - 1`` (NaN when skipped).
    tolerance : float
        Relative tolerance applied.
    role : {"calibration", "prediction"} or None
        Whether a model parameter was fitted to this measurement.
    comparison : {"within", "at_least", "at_most"}
        See :func:`compare`.
    passed : bool
        Whether it passed (``False`` when skipped).
    note : str
        The record's note.
    status : {"pass", "fail", "skip"}
        ``skip`` when the model cannot reproduce the measurement's conditions.
    reason : str
        Why it was skipped (empty otherwise).
    """

    id: str
    source: str
    quantity: str
    unit: str
    published: float
    simulated: float
    rel_error: float
    tolerance: float
    role: Role | None
    comparison: str
    passed: bool
    note: str = ""
    status: Status = "pass"
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (non-finite numbers become ``None``)."""
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in vars(self).items()
        }


def outcome_of(measurement: Measurement, simulated: float, tolerance: float) -> Outcome:
    """The verdict on ``measurement`` given the model's value (same unit)."""
    published = measurement.value
    passed = compare(published, simulated, tolerance, measurement.comparison)
    return Outcome(
        id=measurement.id,
        source=measurement.source,
        quantity=measurement.quantity,
        unit=measurement.unit,
        published=published,
        simulated=simulated,
        rel_error=simulated / published - 1.0 if published else math.nan,
        tolerance=tolerance,
        role=measurement.role,
        comparison=measurement.comparison,
        passed=passed,
        note=measurement.note,
        status="pass" if passed else "fail",
    )


def skipped(measurement: Measurement, reason: str, tolerance: float) -> Outcome:
    """A measurement the model cannot reproduce, with the reason (no simulated value)."""
    return replace(outcome_of(measurement, math.nan, tolerance), status="skip", reason=reason)


_SYMBOL = {"within": "±", "at_least": "≥ −", "at_most": "≤ +"}


def display_unit(unit: str, quantity: str, reference: float) -> tuple[str, float]:
    """The unit a table shows a value in, and the factor from ``unit`` to it.

    Only the SI units readers emit are converted (``B/s`` to GB/s or MB/s,
    ``1/s`` to kIOPS or kops/s, ``s`` to s or ms), chosen by the magnitude of
    ``reference``; any other unit (a validation record's ``GB/s``, ``%``...)
    is shown as it is, so ``flashsim validate``'s table does not change.

    Parameters
    ----------
    unit : str
        The unit of the values.
    quantity : str
        The quantity (``iops`` shows as kIOPS, ``ops`` as kops/s).
    reference : float
        The value whose magnitude chooses the unit (the measured one), in ``unit``.
    """
    size = abs(reference) if math.isfinite(reference) else 0.0
    if unit == "B/s":
        return ("GB/s", 1e-9) if size >= 1e9 else ("MB/s", 1e-6)
    if unit == "1/s":
        return ("kIOPS" if quantity == "iops" else "kops/s", 1e-3)
    if unit == "s":
        return ("s", 1.0) if size >= 1.0 or size == 0.0 else ("ms", 1e3)
    return unit, 1.0


def format_table(results: Sequence[Outcome], reference: str = "published") -> str:
    """The Markdown table ``validate`` and ``check`` print, and its count line.

    Parameters
    ----------
    results : sequence of Outcome
        The verdicts, in order.
    reference : str
        Header of the reference column (``published`` or ``measured``).

    Values in the SI units readers emit are shown in readable ones
    (:func:`display_unit`); the JSON and JUnit XML keep SI.
    """
    lines = [
        f"| id | source | quantity | {reference} | simulated | unit | error | tolerance | role "
        "| ok |",
        "|---|---|---|---:|---:|---|---:|---:|---|---|",
    ]
    for r in results:
        unit, factor = display_unit(r.unit, r.quantity, r.published)
        simulated = f"{r.simulated * factor:.4g}" if r.status != "skip" else "-"
        error = f"{100 * r.rel_error:+.1f}%" if r.status != "skip" else "-"
        reason = r.reason.replace("|", "\\|")  # a '|' in a reason would split the row
        ok = {"pass": "pass", "fail": "FAIL", "skip": f"skip: {reason}"}[r.status]
        lines.append(
            f"| {r.id} | {r.source} | {r.quantity} | {r.published * factor:.4g} | {simulated} | "
            f"{unit} | {error} | {_SYMBOL[r.comparison]}{100 * r.tolerance:.0f}% | "
            f"{r.role or '-'} | {ok} |"
        )
    n_fail = sum(r.status == "fail" for r in results)
    n_skip = sum(r.status == "skip" for r in results)
    n_pass = len(results) - n_fail - n_skip
    lines.append("")
    lines.append(f"{n_pass} passed, {n_fail} failed" + (f", {n_skip} skipped" if n_skip else ""))
    return "\n".join(lines)


def junit_xml(results: Sequence[Outcome], suite: str) -> str:
    """JUnit XML of the verdicts: one ``<testcase>`` per measurement.

    A failure carries the measured and simulated values and the tolerance; a
    skipped measurement carries its reason.
    """
    n_fail = sum(r.status == "fail" for r in results)
    n_skip = sum(r.status == "skip" for r in results)
    root = ET.Element("testsuites", name="flashsim", tests=str(len(results)))
    node = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(results)),
        failures=str(n_fail),
        errors="0",
        skipped=str(n_skip),
    )
    for r in results:
        # CI reports group test cases by the classname's dotted parts: a one-word quantity
        # (bandwidth, iops) groups them; a record's free-text quantity would split at its dots
        word = r.quantity.replace("_", "").replace("-", "").isalnum()
        classname = f"{suite}.{r.quantity}" if word else suite
        case = ET.SubElement(node, "testcase", name=r.id, classname=classname)
        detail = (
            f"{r.quantity} ({r.source}): reference {r.published:.6g} {r.unit}, "
            f"simulated {r.simulated:.6g} {r.unit}, error {100 * r.rel_error:+.2f}% "
            f"({r.comparison} {100 * r.tolerance:g}%)"
        )
        if r.status == "fail":
            ET.SubElement(case, "failure", message=detail, type="OutOfTolerance").text = detail
        elif r.status == "skip":
            ET.SubElement(case, "skipped", message=r.reason)
        else:
            ET.SubElement(case, "system-out").text = detail
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
