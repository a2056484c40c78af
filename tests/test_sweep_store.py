"""Where a sweep's results store goes when none is named: the user cache, never the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from flashsim.cli import main
from flashsim.config import ConfigError
from flashsim.sweep import cache_dir, default_store, read_store

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios/examples/pipeline-streams.toml"
AXES = [("phases.iops.streams", ["1", "2"])]
VARY = ["--vary", "phases.iops.streams=1,2"]


def test_default_store_is_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    store = default_store(SCENARIO, AXES)
    assert store.parent == tmp_path / "xdg" / "flashsim" / "sweeps"
    assert store.name.startswith("pipeline-streams-") and store.suffix == ".parquet"
    assert default_store(SCENARIO, AXES) == store  # the same command finds the same store
    assert default_store(SCENARIO, AXES, {"seed": "2"}) != store
    # A relative XDG_CACHE_HOME is ignored (XDG Base Directory specification): ~/.cache.
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "flashsim"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_store(SCENARIO, AXES).is_relative_to(tmp_path / "home" / ".cache")


def test_no_home_and_no_cache_asks_for_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with pytest.raises(ConfigError, match="give --store PATH"):
        cache_dir()


def test_a_sweep_never_writes_into_the_current_directory_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["sweep", str(SCENARIO), *VARY])
    assert result.exit_code == 0, result.output
    assert list(checkout.iterdir()) == []
    store = default_store(SCENARIO, AXES)
    assert store.is_relative_to(tmp_path / "cache") and str(store) in result.stderr
    assert read_store(store)["point"].unique().tolist() == [0, 1]
    # --resume finds the default store again; nothing is left to run.
    again = CliRunner().invoke(main, ["sweep", str(SCENARIO), *VARY, "--resume"])
    assert again.exit_code == 0 and "every point was already in it" in again.stderr, again.output
    # Asked for: a store named under the current directory is written there.
    named = CliRunner().invoke(main, ["sweep", str(SCENARIO), *VARY, "--store", "mine"])
    assert named.exit_code == 0, named.output
    assert [p.name for p in checkout.iterdir()] == ["mine"]


def test_help_names_the_default_store() -> None:
    text = CliRunner().invoke(main, ["sweep", "--help"]).output
    assert "XDG_CACHE_HOME" in " ".join(text.split())
