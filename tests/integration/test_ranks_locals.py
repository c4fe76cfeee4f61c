"""Same line, different iteration: ranks on one stack told apart by their locals.

tests/programs/step_skew.py runs four ranks through a step loop whose collective the launcher
coordinates; rank 2 skipped one sync, so when the launcher holds the 11th sync every rank
blocks in all_reduce on the same line, ranks 0,1,3 at step=10 and rank 2 at step=11. Every
stack is the same: without --locals hangscan names nobody and its note says --locals can tell
them apart; with --locals it names rank 2 by the minority value of `step`.
"""

import pytest

import hs_testlib as hs

PYTHON = "/usr/bin/python3"
SKEW = str(hs.program_source("step_skew.py"))
SENTENCE = "rank 2 is at step=11 in all_reduce (step_skew.py:{}); ranks {} are at step=10"
NOTE = ("--locals can tell them apart: ranks on the same line may be in different iterations "
        "of a loop")


def sentence(line="sync", others="0-1,3"):
    return SENTENCE.format(hs.hs_line("step_skew.py", line), others)


@pytest.fixture(scope="module")
def job():
    with hs.TargetPool() as pool:
        yield pool.start([PYTHON, SKEW, hs.READY], ready="pipe", timeout=120)


def dump(job, *extra):
    run = hs.dump(job.pid, "--subprocesses", *extra, as_json="--json" in extra)
    assert run.rc == 0, run.describe()
    return run


def test_with_locals_the_rank_a_step_ahead_is_named(job):
    run = dump(job, "--locals")
    lines = run.stdout.splitlines()
    assert [line for line in lines if line.startswith("SUSPECT")] == ["SUSPECT " + sentence()], run.stdout
    assert "note: all 4 ranks have the same stack" in lines
    assert "note: " + NOTE not in lines
    doc = dump(job, "--locals", "--json").doc
    assert doc["suspects"] == [2]
    assert doc["suspect_reasons"] == [sentence()]
    assert [p["rank"] for p in doc["processes"] if p["role"] == "rank"] == [0, 1, 2, 3]


def test_without_locals_the_note_says_locals_can_tell(job):
    run = dump(job)
    lines = run.stdout.splitlines()
    assert not [line for line in lines if line.startswith("SUSPECT")], run.stdout
    assert lines[1:3] == ["note: all 4 ranks have the same stack", "note: " + NOTE], run.stdout
    doc = dump(job, "--json").doc
    assert doc["suspects"] == [] and doc["suspect_reasons"] == []
    assert doc["notes"] == ["all 4 ranks have the same stack", NOTE]


def test_locals_do_not_turn_a_spinning_rank_into_a_progressing_one():
    """--spin: the ranks busy-wait on one line and their poll counters move between samples;
    with --locals every rank is still stuck (and spinning where it gets the CPU), not
    progressing, and rank 2 is still named by its step."""
    with hs.TargetPool() as pool:
        spin = pool.start([PYTHON, SKEW, hs.READY, "--world", "3", "--spin"], ready="pipe",
                          timeout=120, main_parked=False)
        run = hs.dump(spin.pid, "--subprocesses", "--locals", "--samples", "2", "--interval",
                      "0.3", "--json")
        spin.kill()
    assert run.rc == 0, run.describe()
    ranks = {p["rank"]: p for p in run.doc["processes"] if p["role"] == "rank"}
    assert {r: p["progress"] for r, p in ranks.items()} == {0: "stuck", 1: "stuck", 2: "stuck"}
    assert run.doc["suspect_reasons"] == [sentence("spin", "0-1")]
