"""Fixtures shared by the server tests."""

from __future__ import annotations

import pytest

from jobgate.certs.authority import init_directory


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    """A CA and a serving certificate for localhost/127.0.0.1, one per test module."""
    directory = tmp_path_factory.mktemp("tls")
    init_directory(directory, ["localhost"], ["127.0.0.1"])
    return directory
