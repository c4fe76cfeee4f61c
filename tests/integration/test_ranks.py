"""Ranks on a node: real multi-rank jobs, hung with one odd rank, examined by `hangscan dump`.

Why: the question hangscan answers is "which rank is not where the others are". These tests
start real jobs -- a stdlib ring all-reduce launched three ways (Popen with RANK in the
environment, multiprocessing spawn and fork where ranks export RANK only after they started),
torch.distributed gloo via torch.multiprocessing.spawn and via torchrun, and an MPI program
under Open MPI and under MPICH -- wait until every rank is parked where it hangs (each rank
reports, and /proc confirms, see tests/programs/hs_rank_ready.py), then assert the exact
suspects, the majority's function, roles, missing ranks and loop counters.
Every job leads its own process group, killed at teardown even when a test fails.
"""

import importlib.util
import os
import re
import shutil
import sys

import pytest

import hs_testlib as hs

sys.path.insert(0, str(hs.source_dir() / "tests" / "programs"))
import hs_rank_ready  # noqa: E402

PYTHON = "/usr/bin/python3"
RING = str(hs.program_source("ring_allreduce.py"))
GLOO = str(hs.program_source("hang_gloo.py"))
WORLD = 4
ODD = 2


def ranks_by_number(doc):
    """Ranks of known number (a zombie's number is unknown)."""
    return {p["rank"]: p for p in doc["processes"] if p["role"] == "rank" and p["rank"] is not None}


def main_thread(proc):
    mains = [t for t in proc["threads"] if t.get("tid") == proc["pid"]]
    assert len(mains) == 1, f"no main thread in {proc['pid']}"
    return mains[0]


def python_frames(proc):
    return hs.frames_of(main_thread(proc), kinds=("python",))


def innermost_python(proc):
    frames = python_frames(proc)
    assert frames, hs.format_stack(main_thread(proc))
    return frames[0]


def start_ring(pool, *args, launcher="subprocess"):
    return pool.start([PYTHON, RING, hs.READY, "--world", WORLD, "--launcher", launcher, *args],
                      ready="pipe", timeout=120)


def dump_job(pid, *extra):
    run = hs.dump(pid, "--subprocesses", *extra)
    assert run.rc in (0, 1) and run.doc, run.describe()
    return run.doc


def suspects_explained(doc):
    """For an assertion message: why each suspect was named, its stacks with modules and
    offsets, and the run's diagnostics (a stack of `??` frames needs them to be understood)."""
    out = [repr(doc["suspect_reasons"])]
    ranks = ranks_by_number(doc)
    for r in doc["suspects"]:
        p = ranks.get(r)
        if p is None:
            continue
        out.append(f"rank {r} pid {p['pid']} notes {p.get('notes')}")
        for t in p["threads"]:
            out.append(hs.format_stack(t) + f"\n  thread notes {t.get('notes')}")
            out.extend(f"    {f.get('function')} pc={f.get('pc')} offset={f.get('offset')} "
                       f"module={f.get('module')}" for f in t.get("frames", [])
                       if f.get("function") == "??")
    out.append(f"diagnostics: {doc.get('diagnostics')}")
    return "\n".join(out)


def assert_one_odd_rank(doc, odd_function, odd_line_tag=None, source=None):
    """Suspects are exactly [ODD]; the others form one group; the odd one is where it went."""
    assert doc["suspects"] == [ODD], suspects_explained(doc)
    assert doc["missing_ranks"] == []
    ranks = ranks_by_number(doc)
    assert sorted(ranks) == list(range(WORLD))
    for r, p in ranks.items():
        assert p["world_size"] == WORLD, p
    suspect_groups = [g for g in doc["groups"] if g["suspect"]]
    assert [g["ranks"] for g in suspect_groups] == [[ODD]]
    odd = ranks[ODD]
    fn = innermost_python(odd) if odd_line_tag else None
    if odd_line_tag:
        assert fn["function"] == odd_function, hs.format_stack(main_thread(odd))
        assert fn["line"] == hs.hs_line(source, odd_line_tag)
    return ranks


# ---------------------------------------------------------------------------------------
# The stdlib ring all-reduce (also `make demo`)

@pytest.mark.parametrize("launcher", ["subprocess", "spawn", "fork"])
def test_ring_allreduce_names_the_rank_that_never_joined(targets, launcher):
    job = start_ring(targets, "--odd", ODD, launcher=launcher)
    doc = dump_job(job.pid)
    ranks = assert_one_odd_rank(doc, "wait_for_checkpoint", "odd", "ring_allreduce.py")
    for r in (0, 1, 3):
        top = innermost_python(ranks[r])
        assert (top["function"], top["line"]) == ("all_reduce", hs.hs_line("ring_allreduce.py", "recv"))
        assert ranks[r]["state"] == "S"
    assert len(doc["suspect_reasons"]) == 1
    assert doc["suspect_reasons"][0].startswith("rank 2 is not in all_reduce with ranks 0-1,3")
    # Roles: the launcher, the ranks, and (spawn) multiprocessing's resource tracker.
    launcher_proc = hs.process_of(doc, job.pid)
    assert launcher_proc["role"] == "launcher" and launcher_proc["rank"] is None
    roles = sorted(p["role"] for p in doc["processes"])
    helpers = ["helper"] if launcher == "spawn" else []
    assert roles == sorted(["launcher"] + ["rank"] * WORLD + helpers)
    expected_launcher = {"subprocess": "ring_allreduce.py", "spawn": "multiprocessing.spawn",
                         "fork": "multiprocessing"}[launcher]
    assert {p["launcher"] for p in ranks.values()} == {expected_launcher}
    for p in doc["processes"]:
        if p["role"] == "helper":
            assert p["rank"] is None and p["ppid"] == job.pid
            assert "resource_tracker" in " ".join(p["cmdline"])


def test_ring_text_report_names_the_suspect_first(targets):
    job = start_ring(targets, "--odd", ODD)
    run = hs.dump(job.pid, "--subprocesses", as_json=False)
    assert run.rc == 0, run.describe()
    lines = run.stdout.splitlines()
    assert lines[0].startswith("hangscan: 5 processes, 4 ranks, 2 groups"), run.stdout[:500]
    assert lines[1].startswith("SUSPECT rank 2 is not in all_reduce with ranks 0-1,3"), lines[1]


def test_match_selects_ranks_by_command_line(targets):
    job = start_ring(targets, "--odd", ODD)
    rank_pids = [p for p in hs.children(job.pid)]
    rundir = re.search(r"--rundir (\S+)", " ".join(hs.cmdline(rank_pids[0]))).group(1)
    # Only this job's ranks carry its private run directory on their command line.
    assert re.fullmatch(r"[/\w.-]+", rundir)  # no ERE metacharacters
    # hangscan's own command line matches the pattern too: it must leave itself out.
    run = hs.run_hangscan(["dump", "--match", "rundir " + rundir, "--json"])
    assert run.rc in (0, 1) and run.doc, run.describe()
    assert sorted(p["pid"] for p in run.doc["processes"]) == sorted(rank_pids)
    assert run.doc["suspects"] == [ODD]
    # The launcher was not selected, yet the ranks know it from their parent.
    assert {p["launcher"] for p in run.doc["processes"]} == {"ring_allreduce.py"}


def test_killed_rank_is_reported_missing(targets):
    job = start_ring(targets, "--odd", -1, "--kill", 1)
    doc = dump_job(job.pid)
    assert sorted(ranks_by_number(doc)) == [0, 2, 3]
    assert doc["missing_ranks"] == [1]
    assert doc["suspects"] == [1]
    assert any("rank 1 is missing" in r for r in doc["suspect_reasons"]), doc["suspect_reasons"]
    # The survivors all finished the all-reduce: one group, none of them suspect.
    assert [(g["ranks"], g["suspect"]) for g in doc["groups"]] == [([0, 2, 3], False)]


def test_zombie_rank_is_a_suspect_and_its_rank_missing(targets):
    # Rank 1 was killed but its launcher never reaped it: the zombie is still a rank (a
    # sibling of ranks) whose number died with its memory, so rank 1 is also missing.
    job = start_ring(targets, "--odd", -1, "--zombie", 1)
    doc = dump_job(job.pid)
    zombies = [p for p in doc["processes"] if p["state"] == "Z"]
    assert len(zombies) == 1
    assert zombies[0]["role"] == "rank" and zombies[0]["rank"] is None
    assert zombies[0]["ppid"] == job.pid
    assert sorted(ranks_by_number(doc)) == [0, 2, 3]
    assert doc["missing_ranks"] == [1]
    assert zombies[0]["pid"] in [m["pid"] for m in doc["suspect_members"]]
    assert any("zombie" in r for r in doc["suspect_reasons"]), doc["suspect_reasons"]


def test_no_odd_rank_means_no_suspect(targets):
    job = start_ring(targets, "--odd", -1)
    doc = dump_job(job.pid)
    assert doc["suspects"] == []
    assert doc["missing_ranks"] == []
    assert doc["suspect_reasons"] == []
    assert [(g["ranks"], g["suspect"]) for g in doc["groups"]] == [([0, 1, 2, 3], False)]
    for p in ranks_by_number(doc).values():
        top = innermost_python(p)
        assert (top["function"], top["line"]) == ("wait_for_work", hs.hs_line("ring_allreduce.py", "done"))


def test_locals_show_the_loop_step_each_rank_waits_in(targets):
    # Ranks 0, 1, 3 wait on the same line of all_reduce, but rank 3 (right after the odd rank)
    # never got step 0's data, rank 0 waits in step 1 and rank 1 in step 2.
    job = start_ring(targets, "--odd", ODD)
    doc = dump_job(job.pid, "--locals")
    ranks = ranks_by_number(doc)
    steps = {}
    for r in (0, 1, 3):
        top = innermost_python(ranks[r])
        assert top["function"] == "all_reduce"
        values = {loc["name"]: loc["value"] for loc in top["locals"]}
        steps[r] = values.get("step")
        assert values.get("rank") == str(r)
    assert steps == {3: "0", 0: "1", 1: "2"}


# ---------------------------------------------------------------------------------------
# torch.distributed, gloo backend on CPU

def _torch_or_skip():
    if not os.access(PYTHON, os.X_OK) or importlib.util.find_spec("torch") is None:
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")


def assert_gloo_hang(doc):
    ranks = assert_one_odd_rank(doc, "skip_all_reduce", "gloo-odd", "hang_gloo.py")
    for r in (0, 1, 3):
        frames = python_frames(ranks[r])
        top = frames[0]
        assert top["function"] == "all_reduce", hs.format_stack(main_thread(ranks[r]))
        assert top["file"].endswith("torch/distributed/distributed_c10d.py")
        caller = frames[1]
        assert (caller["function"], caller["line"]) == ("train_step", hs.hs_line("hang_gloo.py", "gloo-allreduce"))
    assert doc["suspect_reasons"][0].startswith("rank 2 is not in all_reduce with ranks 0-1,3")
    return ranks


def test_gloo_spawn_rank_skipping_all_reduce(targets):
    _torch_or_skip()
    job = targets.start([PYTHON, GLOO, hs.READY, "--launcher", "spawn", "--world", WORLD, "--odd", ODD],
                        ready="pipe", timeout=400)
    doc = dump_job(job.pid)
    ranks = assert_gloo_hang(doc)
    # RANK was set with os.environ after the spawn: only libc's environ in memory has it.
    for r, p in ranks.items():
        assert f"RANK={r}" not in _environ_file(p["pid"])
        assert p["launcher"] == "torch.multiprocessing.spawn"
    assert hs.process_of(doc, job.pid)["role"] == "launcher"
    assert hs.process_of(doc, job.pid)["launcher"] == "torch.multiprocessing.spawn"
    helpers = [p for p in doc["processes"] if p["role"] == "helper"]
    assert len(helpers) == 1 and helpers[0]["rank"] is None


def test_gloo_torchrun_rank_skipping_all_reduce(targets, tmp_path):
    _torch_or_skip()
    torchrun = shutil.which("torchrun", path="/usr/bin")
    if torchrun is None:
        pytest.skip("torchrun is not installed (python3-torch)")
    ctl = str(tmp_path / "ctl")
    env = dict(os.environ, **{hs_rank_ready.CTL_ENV: ctl})
    with hs_rank_ready.ParkCollector(ctl) as collector:
        # Debian's torchrun needs --redirects/--tee/--log_dir on Python 3.11.
        job = targets.start([torchrun, "--standalone", "--nnodes", 1, "--nproc_per_node", WORLD,
                             "--redirects", 1, "--tee", 1, "--log_dir", tmp_path / "logs",
                             GLOO, "-", "--launcher", "torchrun", "--odd", ODD],
                            ready=None, main_parked=False, env=env)
        collector.wait(range(WORLD), timeout=400, alive=job.alive)
    doc = dump_job(job.pid)
    ranks = assert_gloo_hang(doc)
    assert hs.process_of(doc, job.pid)["role"] == "launcher"
    assert hs.process_of(doc, job.pid)["launcher"] == "torchrun"
    for p in ranks.values():
        assert p["launcher"] == "torchrun"
        assert p["local_rank"] == p["rank"]


# ---------------------------------------------------------------------------------------
# MPI (C++), one rank skips MPI_Allreduce

MPIRUN = {
    "openmpi": ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"],
    "mpich": ["mpirun.mpich"],
}


@pytest.mark.parametrize("flavor", ["openmpi", "mpich"])
def test_mpi_rank_skipping_allreduce(targets, tmp_path, flavor):
    if shutil.which(f"mpicxx.{flavor}") is None or shutil.which(MPIRUN[flavor][0]) is None:
        pytest.skip(f"{flavor} is not installed (tools/deps.sh test installs it)")
    # Installed but not built means the build was configured before the MPI was installed.
    prog = hs.program(f"mpi_hang_{flavor}")
    ctl = str(tmp_path / "ctl")
    with hs_rank_ready.ParkCollector(ctl) as collector:
        job = targets.start(MPIRUN[flavor] + ["-np", WORLD, prog, ctl, ODD], ready=None,
                            main_parked=False)
        collector.wait(range(WORLD), timeout=120, alive=job.alive)
    doc = dump_job(job.pid)
    assert doc["suspects"] == [ODD], suspects_explained(doc)
    assert doc["missing_ranks"] == []
    ranks = ranks_by_number(doc)
    assert sorted(ranks) == list(range(WORLD))
    assert {p["launcher"] for p in ranks.values()} == {"mpirun"}
    assert {p["world_size"] for p in ranks.values()} == {WORLD}
    odd_stack = hs.function_names(main_thread(ranks[ODD])["frames"])
    assert any("wait_for_checkpoint" in f for f in odd_stack), odd_stack
    assert not any("Allreduce" in f for f in odd_stack)
    for r in (0, 1, 3):
        stack = hs.function_names(main_thread(ranks[r])["frames"])
        assert "PMPI_Allreduce" in stack, hs.format_stack(main_thread(ranks[r]))
        # Both MPIs busy-poll inside the collective.
        assert ranks[r]["state"] == "R", (r, ranks[r]["state"])
    assert doc["suspect_reasons"][0].startswith("rank 2 is not in PMPI_Allreduce with ranks 0-1,3")
    launchers = [p for p in doc["processes"] if p["role"] == "launcher"]
    assert job.pid in [p["pid"] for p in launchers]
    assert len(launchers) == (2 if flavor == "mpich" else 1)   # mpiexec + hydra_pmi_proxy


# ---------------------------------------------------------------------------------------

def _environ_file(pid):
    return (hs.read_text(f"/proc/{pid}/environ") or "").split("\0")
