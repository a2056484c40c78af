"""docs/reference.md is generated from the live schemas and every key is documented."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    path = ROOT / "tools" / "generate_reference.py"
    spec = importlib.util.spec_from_file_location("generate_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_reference", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return _generator()


def test_reference_is_up_to_date(gen: ModuleType) -> None:
    path = ROOT / "docs" / "reference.md"
    current = path.read_text() if path.exists() else ""
    assert current == gen.generate(), "docs/reference.md is stale: run `make reference`"


def test_every_key_has_a_description(gen: ModuleType) -> None:
    missing = gen.undocumented()
    assert not missing, (
        "keys without a description (add Field(description=...) or an Attributes entry in the "
        "class docstring): " + "; ".join(missing)
    )


def test_reference_covers_every_kind_and_workload(gen: ModuleType) -> None:
    """Discovery, not a hand list: every system kind and every phase workload has a section."""
    from flashsim.systems import SYSTEM_KINDS, system_kind

    text = gen.generate()
    for kind_name in SYSTEM_KINDS:
        kind = system_kind(kind_name)
        assert f'### System model: kind = "{kind_name}"' in text
        for phase in gen._members(kind.phase_type):
            workload = phase.model_fields["workload"].annotation.__args__[0]
            assert f'### Phase on "{kind_name}": workload = "{workload}"' in text
    for tag in ("ssd", "hdd"):
        assert f'### Drive file: kind = "{tag}"' in text
    assert "### Scenario file" in text


def test_every_key_of_the_shipped_files_is_listed(gen: ModuleType) -> None:
    """Each key written in models/ and scenarios/ appears, by its dotted path, in the reference."""
    import tomllib

    keys: set[str] = {
        row.key for _t, _i, items in gen.sections() for s in items for row in gen.rows(s.model)
    }

    def walk(node: object, prefix: str) -> list[str]:
        found: list[str] = []
        if isinstance(node, dict):
            for key, value in node.items():
                found.append(prefix + key)
                if prefix + key != "system_set":  # its keys are the model file's, checked there
                    found += walk(value, f"{prefix}{key}.")
        elif isinstance(node, list) and all(isinstance(v, dict) for v in node):
            for value in node:
                found += walk(value, prefix[:-1] + "[].")
        return found

    missing: list[str] = []
    files = sorted((ROOT / "models").rglob("*.toml")) + sorted((ROOT / "scenarios").rglob("*.toml"))
    for path in files:
        data = tomllib.loads(path.read_text())
        for key in walk(data, ""):
            bare = re.sub(r"^phases\[\]\.", "", key)
            if key not in keys and bare not in keys:
                missing.append(f"{path.relative_to(ROOT)}: {key}")
    assert not missing, missing


def test_quantity_units_and_bounds_come_from_the_validators(gen: ModuleType) -> None:
    from flashsim.components.nic import NicSpec

    rows = {row.key: row for row in gen.rows(NicSpec)}
    assert rows["port_bandwidth"].unit.startswith("bandwidth")
    assert rows["port_bandwidth"].default == "required"
    assert re.match(r"> 0$|1 B/s to ", rows["port_bandwidth"].allowed)
    assert rows["latency"].unit.startswith("time")
    assert re.match(r">= 0$|0, or ", rows["latency"].allowed)
    assert rows["ingress_efficiency"].allowed == "0 to 1"
    assert rows["ports"].allowed == ">= 1"
    assert rows["pcie.lanes"].allowed == ">= 1, <= 32"


def _calibrated_keys() -> set[str]:
    """Calibrated parameters as model-file headers and validation notes name them."""
    keys: set[str] = set()
    header = re.compile(r"^#\s+([a-z_]+(?:\.[a-z_]+)+(?:/[a-z_]+)*)\s+<-", re.M)
    for path in sorted((ROOT / "models" / "systems").glob("*.toml")):
        for found in header.findall(path.read_text()):
            first, *more = found.split("/")
            table = first.rsplit(".", 1)[0]
            keys |= {first, *(f"{table}.{name}" for name in more)}
    for path in sorted((ROOT / "validation").glob("*.toml")):
        for found in re.findall(r"fits ([a-z_]+(?:\.[a-z_]+)+)", path.read_text()):
            keys.add(found)
    return keys


def test_calibration_doc_lists_every_calibrated_parameter() -> None:
    keys = _calibrated_keys()
    assert len(keys) >= 11  # six of Perlmutter, five (six keys) of VAST at the time of writing
    text = (ROOT / "docs" / "calibration.md").read_text()
    # The parameter column (first cell) of a table row, not a passing mention.
    first_cells = " ".join(line.split("|")[1] for line in text.splitlines() if line.startswith("|"))
    missing = sorted(k for k in keys if f"`{k}`" not in first_cells)
    assert not missing, f"docs/calibration.md does not discuss calibrated parameters {missing}"
