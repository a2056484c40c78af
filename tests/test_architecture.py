"""The layering of docs/architecture.md, enforced.

* ``lint-imports`` keeps the contracts of ``[tool.importlinter]`` in pyproject.toml
  (layers, and system kinds independent of each other), and fails on a planted
  violation;
* no import cycle exists between the modules of ``flashsim`` (function-level imports
  included), and the cycle finder finds a planted one;
* every module sits in a layer, and the modules of one system kind
  (the package ``systems/<kind>/``) import no other kind's, nor name one;
* workloads are registered once: each kind's phase schema is derived from the
  protocols it implements, and the registry refuses inconsistent declarations.
"""

from __future__ import annotations

import functools
import inspect
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

import grimp
import networkx as nx
import pytest
import simpy
from pydantic import BaseModel

from flashsim.config import ConfigError, StrictModel, validate
from flashsim.workloads.ior import IorPhase, IorRunner, IorTarget, IorTargetDefaults
from flashsim.workloads.registry import WORKLOADS, Workload, phase_union, protocol_methods
from flashsim.workloads.streams import StreamsPhase, StreamsTarget

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def _config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return config


def _roots() -> list[str]:
    config = _config()
    return list(config.get("root_packages") or [config["root_package"]])


@functools.cache
def _graph() -> grimp.ImportGraph:
    roots = _roots()
    return grimp.build_graph(roots[0], *roots[1:], cache_dir=None)


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "lint-imports"
    assert exe.exists(), "lint-imports missing: install the dev extra (pip install -e '.[dev]')"
    return subprocess.run(
        [str(exe), "--no-cache", "--config", "pyproject.toml"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import each other (directly or through a chain), sorted."""
    directed = nx.DiGraph()
    directed.add_nodes_from(graph.modules)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            directed.add_edge(module, imported)
    groups = [sorted(c) for c in nx.strongly_connected_components(directed) if len(c) > 1]
    groups += [[m] for m in directed.nodes if directed.has_edge(m, m)]
    return sorted(groups)


def _layer_modules() -> list[str]:
    layers = next(c for c in _config()["contracts"] if c["type"] == "layers")["layers"]
    return [m.strip(" ()") for layer in layers for m in layer.replace(":", "|").split("|")]


# ----------------------------------------------------------------- contracts
def test_import_contracts_are_kept() -> None:
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_lint_imports_fails_on_a_planted_violation(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "flashsim", tmp_path / "flashsim", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    # Function-level imports: lint-imports imports the package, so a module-level
    # planted import could fail as a circular import before any contract is checked.
    planted = "\n\ndef _planted() -> None:\n    {}\n"
    maxmin = tmp_path / "flashsim" / "engine" / "maxmin.py"
    maxmin.write_text(maxmin.read_text() + planted.format("from flashsim.systems import base"))
    pipeline = tmp_path / "flashsim" / "systems" / "pipeline" / "kind.py"
    pipeline.write_text(pipeline.read_text() + planted.format("import flashsim.systems.vast.kind"))
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert "flashsim.engine.maxmin -> flashsim.systems.base" in run.stdout, run.stdout
    assert "flashsim.systems.pipeline.kind -> flashsim.systems.vast.kind" in run.stdout, run.stdout


def test_every_module_sits_in_a_layer() -> None:
    layers = _layer_modules()
    graph = _graph()

    def placed(module: str) -> bool:
        in_layer = any(module == m or module.startswith(m + ".") for m in layers)
        container = any(m.startswith(module + ".") for m in layers)  # flashsim, flashsim.measure
        return in_layer or container

    loose = sorted(m for m in graph.modules if not placed(m))
    assert not loose, f"modules in no layer of pyproject.toml (add them there): {loose}"


def test_system_kinds_import_no_other_kind() -> None:
    """Per kind by package, so new ``systems/<kind>/*.py`` files are covered unlisted."""
    from flashsim.systems import SYSTEM_KINDS

    graph = _graph()
    prefix = "flashsim.systems."

    def kind_of(module: str) -> str | None:
        if not module.startswith(prefix):
            return None
        name = module[len(prefix) :].split(".")[0]
        return name if name in SYSTEM_KINDS else None

    bad: list[str] = []
    for module in sorted(m for m in graph.modules if m.startswith(prefix)):
        mine = kind_of(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            theirs = kind_of(imported)
            if theirs is not None and theirs != mine:
                bad.append(f"{module} ({mine or 'shared'}) -> {imported} ({theirs})")
    assert not bad, "system kinds must not import each other: " + "; ".join(bad)


def kind_mentions(text: str, kinds: Iterable[str]) -> list[int]:
    """Numbers (from 1) of the lines of ``text`` that name one of ``kinds``, in any case.

    A name counts where no letter precedes it (``LustreModel``, ``vast_x``, "a Lustre
    target"), in code, strings, comments and docstrings alike.
    """
    pattern = re.compile("|".join(f"(?<![a-z]){re.escape(k)}" for k in kinds), re.IGNORECASE)
    return [i for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def test_no_file_of_a_kind_names_another_kind() -> None:
    """A kind's package speaks only of itself; the shared modules name no kind (issue 18).

    ``systems/__init__.py`` is the registry and names them all.  A user-facing message
    may still repeat what the user asked for, in the kind's own words.
    """
    from flashsim.systems import SYSTEM_KINDS

    systems = ROOT / "flashsim" / "systems"
    assert set(SYSTEM_KINDS) <= {p.name for p in systems.iterdir() if p.is_dir()}
    found: list[str] = []
    for path in sorted(systems.rglob("*.py")):
        if path == systems / "__init__.py":
            continue
        home = path.relative_to(systems).parts[0]  # a kind's package, or base.py ...
        lines = path.read_text().splitlines()
        others = [k for k in SYSTEM_KINDS if k != home]
        for i in kind_mentions("\n".join(lines), others):
            found.append(f"{path.relative_to(ROOT)}:{i}: {lines[i - 1].strip()}")
    assert not found, "say it without naming another kind:\n" + "\n".join(found)


def test_kind_mentions_finds_a_name_in_any_case() -> None:
    text = "x = 1\n# as a VAST DBox does\nLustreModel\nhdd_pipeline\nmultipipeline\n"
    assert kind_mentions(text, ["vast", "lustre", "pipeline"]) == [2, 3, 4]
    assert kind_mentions(text, ["toy"]) == []


# -------------------------------------------------------------------- cycles
def test_no_import_cycles() -> None:
    cycles = import_cycles(_graph())
    assert not cycles, f"import cycles: {cycles}"


def test_cycle_finder_finds_a_planted_cycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "cyclepkg_flashsim_test"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclepkg_flashsim_test import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclepkg_flashsim_test import c\n")
    (pkg / "c.py").write_text("import cyclepkg_flashsim_test.a\n")
    (pkg / "d.py").write_text("import cyclepkg_flashsim_test.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclepkg_flashsim_test", cache_dir=None)
    names = [f"cyclepkg_flashsim_test.{m}" for m in "abc"]
    assert import_cycles(graph) == [names]


# ------------------------------------------------------------------ registry
def test_every_kind_derives_its_phases_from_the_registry() -> None:
    from flashsim.systems import SYSTEM_KINDS, system_kind

    for name in SYSTEM_KINDS:
        kind = system_kind(name)
        assert kind.implements or kind.own_phases, name
        for proto in kind.implements:
            for method in protocol_methods(proto):
                assert callable(getattr(kind.built_type, method, None)), (name, method)
        expected = phase_union(name, kind.implements, kind.own_phases)
        assert _members(kind.phase_type) == _members(expected), name
        tags = {_tag(m) for m in _members(kind.phase_type)}
        for workload in WORKLOADS.values():
            if workload.target in kind.implements:
                assert workload.name in tags, (name, workload.name)


def _members(phase_type: Any) -> list[type[BaseModel]]:
    if isinstance(phase_type, type):
        return [phase_type]
    union = get_args(phase_type)[0]
    return list(get_args(union))


def _tag(model: type[BaseModel]) -> str:
    return str(get_args(model.model_fields["workload"].annotation)[0])


class _Both(IorTargetDefaults):
    """A fake built system implementing both shared workloads' protocols."""

    sim: Any

    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        """Nothing to prepare."""

    def ior_streams(self, phase: IorPhase) -> list[Any]:
        return []

    def ior_request(
        self, phase: IorPhase, rank: int, stream: Any
    ) -> Generator[simpy.Event, Any, None]:
        yield from ()

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        return {}

    def streams_path(self, phase: StreamsPhase) -> list[Any]:
        return []

    def streams_round_trip_s(self, phase: StreamsPhase) -> float:
        return 1.0

    def streams_requests(self, phase: StreamsPhase) -> Callable[[int], Any]:
        return lambda _customer: iter(())


def _kind(
    implements: tuple[type[Any], ...], own: tuple[type[BaseModel], ...] = (), built: Any = _Both
) -> Any:
    from flashsim.systems.base import SystemKind

    namespace = {
        "kind": "test",
        "model_type": StrictModel,
        "built_type": built,
        "implements": implements,
        "own_phases": own,
        "describe": lambda self, model: None,
    }
    return type("TestKind", (SystemKind,), namespace)


class _ProbePhase(StrictModel):
    name: str
    workload: Literal["probe"]


def test_a_kind_accepts_every_workload_of_its_protocols() -> None:
    kind = _kind((IorTarget, StreamsTarget), (_ProbePhase,))
    assert [_tag(m) for m in _members(kind.phase_type)] == ["ior", "streams", "probe"]
    phase = validate(kind.phase_type, {"name": "p", "workload": "probe"}, "s.toml")
    assert isinstance(phase, _ProbePhase)


def test_unknown_workload_names_the_accepted_ones() -> None:
    kind = _kind((IorTarget, StreamsTarget), (_ProbePhase,))
    with pytest.raises(ConfigError) as info:
        validate(kind.phase_type, {"name": "p", "workload": "ior2"}, "f", key_prefix="phases.0")
    text = str(info.value)
    assert "phases.0.workload" in text and "'ior2'" in text
    assert "'ior', 'streams', 'probe'" in text
    with pytest.raises(ConfigError) as info:
        validate(_kind((StreamsTarget,)).phase_type, {"name": "p", "workload": "ior"}, "s.toml")
    assert "workload" in str(info.value) and "'streams'" in str(info.value)


def test_the_registry_refuses_inconsistent_kinds() -> None:
    class Missing(Protocol):
        def nothing(self) -> None: ...

    class NotIor(StrictModel):
        name: str
        workload: Literal["ior"]

    class NoTag(StrictModel):
        name: str

    with pytest.raises(TypeError, match="no registered workload uses Missing"):
        _kind((Missing,))
    with pytest.raises(TypeError, match="must extend IorPhase"):
        _kind((IorTarget,), (NotIor,))
    with pytest.raises(TypeError, match="list IorTarget in implements"):
        _kind((StreamsTarget,), (NotIor,))
    with pytest.raises(TypeError, match="needs workload"):
        _kind((), (NoTag,))
    with pytest.raises(TypeError, match="two phase models"):
        _kind((), (_ProbePhase, _ProbePhase))
    with pytest.raises(TypeError, match="runs no workload"):
        _kind(())
    with pytest.raises(TypeError, match="must be Literal"):
        Workload("probe2", _ProbePhase, IorTarget)


def test_a_kind_must_implement_its_protocols() -> None:
    class OnlyStreams:
        def streams_path(self, phase: StreamsPhase) -> list[Any]:
            return []

    with pytest.raises(TypeError, match="lacks streams_round_trip_s, streams_requests"):
        _kind((StreamsTarget,), built=OnlyStreams)
    with pytest.raises(TypeError, match="phase_type is derived"):
        type("Bad", (_kind((StreamsTarget,)),), {"phase_type": StreamsPhase})


def test_ior_hooks_are_protocol_methods_with_defaults() -> None:
    assert {"ior_flow_started", "ior_fsync"} <= set(protocol_methods(IorTarget))
    assert "getattr(" not in inspect.getsource(IorRunner)
    defaults = IorTargetDefaults()
    phase = IorPhase(name="w", workload="ior", operation="write")
    assert defaults.ior_fsync(phase, 0) is None
    assert defaults.ior_flow_started(phase, 0, "app", None) is None  # type: ignore[arg-type]
