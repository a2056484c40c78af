"""Write a model file with new values, keeping its comments, key order and units.

``flashsim calibrate`` writes the fitted model with :func:`write_model`: the
input file parsed with tomlkit, each fitted value replaced in place (a value
written with a unit string stays a unit string in the same unit, e.g.
``"22.04 us"``) with a comment beside it, and relative paths (drive files)
rewritten so that they resolve from the new file's directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import InlineTable, Item, String, Table

from flashsim.errors import MISSING, ConfigError
from flashsim.units import Dimension, format_quantity, parse_quantity

#: Unit of a calibratable value -> its dimension for :func:`flashsim.units.parse_quantity`.
DIMENSIONS: dict[str, Dimension] = {"s": "time", "B/s": "bandwidth"}
#: Significant digits of a written value (a rounding of at most 0.05 %).
DIGITS = 4


def value_text(value: float, unit: str, old: object) -> str | float:
    """``value`` (SI, in ``unit``) as the model file should hold it.

    A ratio is a bare number; a quantity keeps the unit the file wrote it in
    (``old``, e.g. ``"22.04 us"``), or the unit :func:`format_quantity` picks.
    """
    if not unit:
        return float(f"{value:.{DIGITS}g}")
    dimension = DIMENSIONS[unit]
    if isinstance(old, str) and " " in old.strip():
        written = old.strip().split(" ", 1)[1].strip()
        factor = parse_quantity(f"1 {written}", dimension)
        return f"{value / factor:.{DIGITS}g} {written}"
    return format_quantity(value, dimension, DIGITS)


def _carry_trivia(old: Item | None, new: Item) -> Item:
    if old is not None:
        for name in ("indent", "comment_ws", "comment", "trail"):
            setattr(new.trivia, name, getattr(old.trivia, name))
    return new


def _set(doc: Any, key: str, value: object, comment: str, path: Path) -> None:
    """Set ``key`` (dotted) to ``value`` and put ``comment`` beside it."""
    parts = key.split(".")
    node: Any = doc
    anchor: tuple[Any, str] | None = None  # an inline table on the way takes the comment
    for part in parts[:-1]:
        if part not in node:
            raise ConfigError(
                str(path), key, MISSING, f"the model has no [{part}] table to write {key} into"
            )
        child = node[part]
        if isinstance(child, InlineTable) and anchor is None:
            anchor = (node, part)
        elif not isinstance(child, Table | InlineTable):
            raise ConfigError(str(path), key, MISSING, f"{part} is not a table")
        node = child
    last = parts[-1]
    old: Item | None = node.item(last) if last in node else None
    was = "" if old is None else f"; was {old.as_string().strip()}"
    if old is not None and old.trivia.comment:
        was += ": " + old.trivia.comment.lstrip("#").strip()
    new = _carry_trivia(old, tomlkit.item(value))
    node[last] = new
    target = new if anchor is None else anchor[0].item(anchor[1])
    ws = target.trivia.comment_ws
    target.comment(comment + was)
    if old is not None and anchor is None and ws and not ws.strip():
        # keep the file's comment column
        width = len(ws) - (len(new.as_string()) - len(old.as_string()))
        target.trivia.comment_ws = " " * max(width, 1)


def _relocated(doc: Any, source_dir: Path, out_dir: Path) -> None:
    """Rewrite relative file paths (strings naming an existing file) for ``out_dir``."""

    def visit(container: Any) -> None:
        for k in list(container.keys()):
            item = container.item(k) if hasattr(container, "item") else container[k]
            if isinstance(item, Table | InlineTable):
                visit(item)
            elif isinstance(item, String):
                text = str(item)
                if (
                    not os.path.isabs(text)
                    and ("/" in text or text.endswith(".toml"))
                    and (source_dir / text).is_file()
                ):
                    moved = os.path.relpath(source_dir / text, out_dir)
                    container[k] = _carry_trivia(item, tomlkit.item(moved))

    visit(doc)


def write_model(
    system: Path,
    out: Path,
    values: Mapping[str, tuple[float, str]],
    comments: Mapping[str, str],
) -> None:
    """Write ``system`` to ``out`` with ``values`` set.

    Parameters
    ----------
    system : Path
        The model file read.
    out : Path
        The file written (its directory must exist).
    values : mapping of str to (float, str)
        Dotted key -> (SI value, unit ``"s"``, ``"B/s"`` or ``""``).
    comments : mapping of str to str
        Dotted key -> the comment written beside the value (the old comment
        follows it after ``was <old value>:``).
    """
    doc = tomlkit.parse(system.read_text(encoding="utf-8"))
    for key, (value, unit) in values.items():
        node: Any = doc
        for part in key.split("."):
            node = node.get(part) if hasattr(node, "get") else None
        old = node.unwrap() if hasattr(node, "unwrap") else node
        _set(doc, key, value_text(value, unit, old), comments[key], system)
    source_dir = system.resolve().parent
    out_dir = out.resolve().parent
    if source_dir != out_dir:
        _relocated(doc, source_dir, out_dir)
    out.write_text(tomlkit.dumps(doc), encoding="utf-8")
