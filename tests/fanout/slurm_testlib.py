"""Test helpers for the multi-node tests: the 3-node Slurm cluster, ring jobs on it, a private sshd.

Why: test_slurm.py, test_pdsh.py and the benchmark start the same things and must always
stop them, by pid, whatever happens in between. Each helper is a context manager.

  SlurmCluster(dir)       tests/fanout/cluster.sh start/stop DIR; .env has SLURM_CONF
  RingJob(cluster, ...)   sbatch a ring all-reduce over the nodes, wait until every rank is parked
  PrivateSshd()           sshd -f CONF on 127.0.0.1:PORT with its own host and user keys
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("HS_SOURCE_DIR") or HERE.parents[1])
CLUSTER_SH = SOURCE / "tests" / "fanout" / "cluster.sh"
PROGRAMS = SOURCE / "tests" / "programs"

import sys  # noqa: E402

sys.path.insert(0, str(PROGRAMS))
import hs_rank_ready  # noqa: E402


def _run(argv, env=None, timeout=60.0, check=True):
    p = subprocess.run([str(a) for a in argv], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


class SlurmCluster:
    """A running test cluster; stopped (every daemon, by pid) when the block ends."""

    def __init__(self, directory: str | None = None, nodes: int = 3, accounting: bool = False,
                 cgroup: bool = False):
        """accounting: MariaDB + slurmdbd, so sacct answers; cgroup: task/cgroup with --mem as a
        memory cgroup limit (both opt-in: cluster.sh's HS_SLURM_ACCOUNTING, HS_SLURM_CGROUP)."""
        self._own_dir = directory is None
        self.nodes = nodes
        self._opts = {"HS_SLURM_ACCOUNTING": str(int(accounting)), "HS_SLURM_CGROUP": str(int(cgroup))}
        self.dir = Path(directory or tempfile.mkdtemp(prefix="hs-slurm-"))
        self.env = dict(os.environ, SLURM_CONF=str(self.dir / "slurm.conf"))
        for k in list(self.env):
            if (k.startswith("SLURM_") and k != "SLURM_CONF") or k.startswith("SLURMD_"):
                del self.env[k]

    def __enter__(self) -> "SlurmCluster":
        try:
            _run([CLUSTER_SH, "start", self.dir], timeout=120,
                 env=dict(os.environ, HS_SLURM_NODES=str(self.nodes), **self._opts))
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        _run([CLUSTER_SH, "stop", self.dir], timeout=120, check=False)
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def pid_of(self, daemon: str) -> int:
        for line in (self.dir / "pids").read_text().splitlines():
            name, pid = line.split()
            if name == daemon:
                return int(pid)
        raise KeyError(daemon)

    def run(self, argv, timeout=60.0, check=True):
        return _run(argv, env=self.env, timeout=timeout, check=check)

    def job_state(self, job_id: str) -> str:
        p = self.run(["squeue", "-h", "-j", job_id, "-o", "%T"], check=False)
        return p.stdout.strip()


def end_job(cluster: SlurmCluster, job_id: str, pids, marker: bytes) -> None:
    """scancel and wait (deadline) until the job is gone; then SIGKILL what is left of `pids`
    whose command line holds `marker` (ranks on a node whose slurmd was stopped are not cleaned
    up by Slurm)."""
    if job_id:
        cluster.run(["scancel", job_id], check=False)
        end = time.monotonic() + 30
        while cluster.job_state(job_id) and time.monotonic() < end:
            time.sleep(0.2)
    for pid in pids:
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, FileNotFoundError):
            pass


class RingJob:
    """sbatch -N NODES --ntasks-per-node=PER ring all-reduce; rank ODD waits elsewhere.

    Entering waits (deadline) until every rank said it is parked where it should be; leaving
    cancels the job and waits until its tasks are gone."""

    def __init__(self, cluster: SlurmCluster, nodes: int = 3, per_node: int = 2, odd: int = 3,
                 program: str = "slurm_ring.py", srun_args: str = ""):
        """program: the rank (in tests/fanout); srun_args: more srun options ("-o FILE" ...)."""
        self.program, self.srun_args = program, srun_args
        self.cluster = cluster
        self.nodes, self.per_node, self.odd = nodes, per_node, odd
        self.world = nodes * per_node
        self.dir = Path(tempfile.mkdtemp(prefix="hs-ring-job-"))
        self.job_id = ""
        self.pids: dict[int, int] = {}

    def __enter__(self) -> "RingJob":
        rundir = self.dir / "run"
        rundir.mkdir()
        ctl = str(self.dir / "ctl")
        script = self.dir / "job.sh"
        script.write_text(
            "#!/bin/sh\n"
            f"exec srun --kill-on-bad-exit=1 {self.srun_args} /usr/bin/python3 {HERE / self.program} "
            f"{PROGRAMS} {rundir} {self.odd}\n")
        script.chmod(0o755)
        env = dict(self.cluster.env, **{hs_rank_ready.CTL_ENV: ctl})
        with hs_rank_ready.ParkCollector(ctl) as collector:
            p = _run(["sbatch", "--parsable", "-N", self.nodes, f"--ntasks-per-node={self.per_node}",
                      "-o", self.dir / "job.out", "-D", self.dir, script], env=env)
            self.job_id = p.stdout.strip().split(";")[0]
            try:
                self.pids = collector.wait(
                    range(self.world), timeout=90.0,
                    alive=lambda: self.cluster.job_state(self.job_id) in ("PENDING", "RUNNING", "CONFIGURING"))
            except BaseException as e:
                out = (self.dir / "job.out").read_text() if (self.dir / "job.out").exists() else ""
                self.__exit__()
                raise RuntimeError(f"ring job {self.job_id} not ready: {e}\n{out}") from e
        return self

    def __exit__(self, *exc) -> None:
        end_job(self.cluster, self.job_id, self.pids.values(), b"slurm_ring.py")
        shutil.rmtree(self.dir, ignore_errors=True)

    def node_of(self, rank: int) -> str:
        """Block distribution, the default: ranks 0..PER-1 on n1 and so on."""
        return f"n{rank // self.per_node + 1}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateSshd:
    """sshd on 127.0.0.1:PORT with its own host key, accepting one fresh user key for root.

    .env() gives what pdsh needs: PDSH_RCMD_TYPE=ssh and PDSH_SSH_ARGS_APPEND with port and key."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="hs-sshd-"))
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self._made_run_sshd = False

    def __enter__(self) -> "PrivateSshd":
        try:
            d = self.dir
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d / "host_key"])
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d / "user_key"])
            shutil.copy(d / "user_key.pub", d / "authorized_keys")
            os.chmod(self.dir, 0o700)
            (d / "sshd_config").write_text(
                f"ListenAddress 127.0.0.1\nPort {self.port}\nHostKey {d / 'host_key'}\n"
                f"AuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / 'sshd.pid'}\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
                "StrictModes no\nLogLevel ERROR\nMaxStartups 64\n")
            if not os.path.isdir("/run/sshd"):
                os.makedirs("/run/sshd", mode=0o755)
                self._made_run_sshd = True
            self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=open(d / "sshd.log", "w"), start_new_session=True)
            end = time.monotonic() + 20
            while True:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    break
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > end:
                        raise RuntimeError("sshd did not start: " + (d / "sshd.log").read_text())
                    time.sleep(0.05)
        except BaseException:
            self.__exit__()
            raise
        return self

    def env(self, base: dict | None = None) -> dict:
        args = (f"-p {self.port} -i {self.dir / 'user_key'} -o StrictHostKeyChecking=no "
                f"-o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR")
        return dict(base or os.environ, PDSH_RCMD_TYPE="ssh", PDSH_SSH_ARGS_APPEND=args)

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self._made_run_sshd:
            try:
                os.rmdir("/run/sshd")
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
