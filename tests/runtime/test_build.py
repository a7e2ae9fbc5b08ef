"""Building the host back-end library: cached per build inputs, atomic, clear error without a compiler."""

from __future__ import annotations

import os

import pytest

from executorch_neutron.runtime import HostBuildError
from executorch_neutron.runtime import build


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EXECUTORCH_NEUTRON_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_builds_once_into_the_cache_and_reuses_it(cache):
    first = build.library_path()
    stamp = first.stat().st_mtime_ns
    assert first.parent.parent == cache and first.name == build.LIBRARY_NAME
    assert build.library_path() == first and first.stat().st_mtime_ns == stamp
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".tmp")]  # renamed into place


def test_changed_build_inputs_lead_to_a_fresh_build(cache, monkeypatch):
    first = build.library_path()
    monkeypatch.setattr(build, "CXX_FLAGS", build.CXX_FLAGS + ("-DNEUTRON_TEST_VARIANT=1",))
    second = build.library_path()
    assert second != first and second.is_file() and first.is_file()


def test_missing_compiler_says_how_to_install_one(cache, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-xyz")
    with pytest.raises(HostBuildError, match=r"no C\+\+ compiler found .*apt-get install g\+\+"):
        build.library_path()


def test_compile_failure_shows_the_compiler_output(cache, monkeypatch):
    monkeypatch.setattr(build, "CXX_FLAGS", build.CXX_FLAGS + ("-DNEUTRON_FORCE_ERROR=1", "-include", "missing.h"))
    with pytest.raises(HostBuildError, match="(?s)compiling the host back-end library failed.*fatal error: missing.h"):
        build.library_path()


DAMAGE = {
    "truncated": lambda lib: os.truncate(lib, lib.stat().st_size // 2),
    "one_byte_changed": lambda lib: lib.write_bytes(lib.read_bytes()[:-1] + b"\x01"),
    "record_missing": lambda lib: build._sidecar(lib).unlink(),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_damaged_cached_library_is_rebuilt_before_loading(cache, damage):
    lib = build.library_path()
    good = lib.read_bytes()
    assert build.is_intact(lib)
    damage(lib)
    assert not build.is_intact(lib)
    assert build.library_path() == lib and build.is_intact(lib) and lib.stat().st_size == len(good)


def test_cache_dir_that_is_a_file_names_the_variable(tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    monkeypatch.setenv("EXECUTORCH_NEUTRON_CACHE_DIR", str(blocker))
    with pytest.raises(HostBuildError, match=r"cannot write the host library cache .*EXECUTORCH_NEUTRON_CACHE_DIR"):
        build.library_path()
