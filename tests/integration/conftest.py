"""pytest fixtures shared by every integration test (helpers live in hs_testlib.py).

Why a fixture per scope: most tests start their own targets (function scope) so nothing
leaks between tests; expensive targets shared by many read-only assertions use module scope.
Either way every process group started is killed at teardown, even when a test fails.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hs_testlib  # noqa: E402


def _pool():
    with hs_testlib.TargetPool() as pool:
        yield pool


@pytest.fixture
def targets():
    """A TargetPool whose targets are killed when the test ends."""
    yield from _pool()


@pytest.fixture(scope="module")
def module_targets():
    """A TargetPool shared by the tests of one module (for targets only read, never harmed)."""
    yield from _pool()


@pytest.fixture(scope="session")
def hangscan():
    """Path of the hangscan binary under test; fails (not skips) when it is missing."""
    path = hs_testlib.hangscan_bin()
    assert os.access(path, os.X_OK), f"hangscan binary not found at {path} (set HANGSCAN_BIN)"
    return path
