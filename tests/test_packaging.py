"""pyproject.toml as setuptools reads it: no deprecation warning while building (`make demo` installs the project
and printed setuptools' `project.license` deprecation three times)."""

import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.fast


def test_setuptools_reads_pyproject_without_warnings():
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert [str(w.message).splitlines()[0] for w in caught] == []
    assert dist.metadata.license_expression == "Apache-2.0"
