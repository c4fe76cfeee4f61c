"""pytest fixtures shared by every integration test (helpers live in hs_testlib.py).

Why a fixture per scope: most tests start their own targets (function scope) so nothing
leaks between tests; expensive targets shared by many read-only assertions use module scope.
Either way every process group started is killed at teardown, even when a test fails.
"""

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hs_testlib  # noqa: E402


_PRIVATE_DIR = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """The private directory (below) is made here, before pytest's tmpdir plugin reads its
    options, so that tmp_path and tmp_path_factory directories go inside it (--basetemp): with
    a basetemp given, pytest keeps no numbered pytest-of-USER directories and registers no exit
    cleanup of its own, which would otherwise look for them after we removed them (a traceback
    after every failed run). A --basetemp given on the command line is left as it is."""
    base = tempfile.mkdtemp(prefix="hs-tests-")
    os.chmod(base, 0o1777)
    config.stash[_PRIVATE_DIR] = base
    if config.option.basetemp is None:
        config.option.basetemp = os.path.join(base, "pytest")


def pytest_unconfigure(config):
    """The private directory goes even when no test ran (collection failed, --collect-only)."""
    base = config.stash.get(_PRIVATE_DIR, None)
    if base:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def private_tmpdir(pytestconfig):
    """Every temporary file of this test file's run (the targets' run directories, sockets,
    test clusters, pytest's tmp_path) goes under one directory, removed at the end: test
    programs are killed with SIGKILL and cannot remove their own. Mode 1777 like /tmp, so
    daemons that drop privileges (munged) and targets run as other users reach it as before."""
    base = pytestconfig.stash[_PRIVATE_DIR]
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = base
    tempfile.tempdir = None  # gettempdir() caches; let it see TMPDIR
    try:
        yield base
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        tempfile.tempdir = None
        shutil.rmtree(base, ignore_errors=True)


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
