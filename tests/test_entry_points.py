"""gateway_core.runtime.entry_points finds what importlib.metadata finds on the path."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest

from gateway_core.runtime import entry_points


@pytest.fixture
def fresh():
    """The path read anew before and after the test."""
    entry_points.distributions.cache_clear()
    entry_points.entry_points.cache_clear()
    yield
    entry_points.distributions.cache_clear()
    entry_points.entry_points.cache_clear()


@pytest.mark.parametrize("group", ["relaygate", "relaygate.infrastructure", "console_scripts"])
def test_the_installed_entry_points_are_importlib_metadatas(fresh, group):
    ours = [(ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in entry_points.entry_points(group)]
    theirs = sorted((ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in metadata.entry_points(group=group))
    assert ours == theirs
    if group == "console_scripts":  # the core's own `relaygate`: never an empty comparison (the plugins' groups are, with the core alone)
        assert ("relaygate", "gateway_core.commands.cli:main", "relaygate") in [entry[:3] for entry in ours]


def test_versions_are_importlib_metadatas(fresh):
    for name in ("relaygate", "Relaygate", "pluggy", "attrs"):
        assert entry_points.version(name) == metadata.version(name)
    assert entry_points.version("no-such-distribution") is None


def write_dist(folder, name, version, entry_points_txt, suffix=".dist-info"):
    dist = folder / f"{name.replace('-', '_')}-{version}{suffix}"
    dist.mkdir(parents=True)
    (dist / ("METADATA" if suffix == ".dist-info" else "PKG-INFO")).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not a header\n")
    (dist / "entry_points.txt").write_text(entry_points_txt)


def test_the_first_distribution_of_a_name_on_the_path_hides_the_others(fresh, tmp_path, monkeypatch):
    write_dist(tmp_path / "a", "Made-Up", "2.0", "[made.up]\nfirst = json:dumps\n# a comment\nsecond = os.path\n")
    write_dist(tmp_path / "b", "made_up", "1.0", "[made.up]\nhidden = json:loads\n")
    write_dist(tmp_path / "b", "other-egg", "3.0", "[made.up]\nthird = json:JSONDecoder.decode\n", suffix=".egg-info")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "missing")])
    found = entry_points.entry_points("made.up")
    assert [(ep.name, ep.dist.name, ep.dist.version) for ep in found] == [("first", "Made-Up", "2.0"), ("second", "Made-Up", "2.0"), ("third", "other-egg", "3.0")]
    import json
    import os

    assert [ep.load() for ep in found] == [json.dumps, os.path, json.JSONDecoder.decode]
    assert entry_points.version("made-up") == "2.0"
    assert entry_points.entry_points("no.such.group") == ()


def test_a_zip_file_on_the_path_is_left_to_importlib_metadata(fresh, tmp_path, monkeypatch):
    (tmp_path / "plugins.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip archive
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "plugins.zip")])
    assert entry_points.distributions() is None
    assert {ep.name for ep in entry_points.entry_points("relaygate")} == {ep.name for ep in metadata.entry_points(group="relaygate")}
    assert entry_points.version("relaygate") == metadata.version("relaygate")
