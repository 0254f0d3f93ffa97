"""A real Spark standalone cluster on loopback for the tests: a Master and Workers, each a process of
its own started with `spark-class` (the pip wheel ships no start scripts), each Worker with an
environment and a work directory of its own, none of them the driver's: executors are the Workers'
children and inherit the Worker's environment, as on a real cluster (in `local-cluster[...]` they
inherit the driver's). Ports are Spark's own picks (port 0), read back from the logs.

Also what a test reads of those processes: command lines and environments from /proc.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.procfs import parent_pid

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
# The variable every Worker's environment has (its name as the value), and executors inherit.
WORKER_MARKER = "CATALOG_EXT_TEST_WORKER"


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def children(pid: int) -> list[int]:
    """Direct child processes of `pid` (the parent pid in each /proc/<pid>/stat)."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and parent_pid(entry) == pid]


class ProcessWatch:
    """While a job runs, the command line and environment of every Worker and executor process the
    cluster has, each read once (a background thread polls; executors come and go with the job)."""

    def __init__(self, cluster: StandaloneCluster, interval: float = 0.3):
        self.cluster = cluster
        self.interval = interval
        self.seen: dict[str, tuple[str, dict[str, str]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-watch", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, pid in self.cluster.processes().items():
                if name not in self.seen:
                    try:
                        self.seen[name] = (cmdline(pid), environ(pid))
                    except OSError:  # ended in between
                        continue
            self._stop.wait(self.interval)

    def executors(self) -> dict[str, tuple[str, dict[str, str]]]:
        return {name: seen for name, seen in self.seen.items() if " executor " in name}

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@dataclass
class Daemon:
    """A Master or Worker process and its log."""

    name: str
    process: subprocess.Popen
    log: Path
    env: dict[str, str] = field(repr=False)
    work_dir: Path | None = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.is_file() else ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def executors(self) -> list[int]:
        """The executor JVMs this Worker launched and that still run."""
        if not self.alive():
            return []
        pids = []
        for pid in children(self.process.pid):
            try:
                if EXECUTOR_MAIN in cmdline(pid):
                    pids.append(pid)
            except OSError:
                continue
        return pids


class StandaloneCluster:
    """`with StandaloneCluster(folder, workers=2) as cluster:` a Master and `workers` Workers of
    `cores` cores and `memory` each; `cluster.url` is the master URL for `--master`/`.master()`."""

    def __init__(self, folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g", java_home: str | None = None):
        self.folder = folder
        self.worker_count = workers
        self.cores = cores
        self.memory = memory
        self.java_home = java_home if java_home is not None else os.environ.get("JAVA_HOME")
        self.master: Daemon | None = None
        self.workers: list[Daemon] = []
        self.url = ""

    def _env(self, name: str) -> tuple[dict[str, str], Path]:
        """A daemon's environment, made from nothing but PATH: its own HOME and Spark conf dir (an
        empty one: no spark-env.sh of the driver's), loopback only, and the worker marker."""
        home = self.folder / name
        conf = home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "SPARK_HOME": str(SPARK_HOME), "SPARK_CONF_DIR": str(conf), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOG_DIR": str(home / "logs"), WORKER_MARKER: name}
        if self.java_home:
            env["JAVA_HOME"] = self.java_home
        return env, home

    def _start(self, name: str, args: list[str], work_dir: Path | None = None) -> Daemon:
        env, home = self._env(name)
        log = home / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen([str(SPARK_CLASS), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                       cwd=home, start_new_session=True)
        return Daemon(name, process, log, env, work_dir)

    def _wait_for(self, daemon: Daemon, pattern: str, timeout: float = 180) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, daemon.log_text())
            if match:
                return match
            if not daemon.alive():
                break
            time.sleep(0.3)
        raise RuntimeError(f"{daemon.name} did not log {pattern!r} (alive: {daemon.alive()}); its log ends:\n{daemon.log_text()[-3000:]}")

    def start_worker(self, index: int) -> Daemon:
        name = f"worker{index + 1}"
        work = self.folder / name / "work"
        work.mkdir(parents=True, exist_ok=True)
        worker = self._start(name, ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1", "--port", "0",
                                    "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory,
                                    "--work-dir", str(work)], work)
        self._wait_for(worker, r"Successfully registered with master")
        return worker

    def __enter__(self) -> StandaloneCluster:
        try:
            self.master = self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                                 "--port", "0", "--webui-port", "0"])
            self.url = self._wait_for(self.master, r"Starting Spark master at (spark://\S+)").group(1)
            self.workers = [self.start_worker(i) for i in range(self.worker_count)]
        except BaseException:
            self.stop()
            raise
        return self

    def ensure_workers(self) -> None:
        """Start again any Worker that died (a test kills one)."""
        for i, worker in enumerate(self.workers):
            if not worker.alive():
                self.workers[i] = self.start_worker(i)

    def kill_worker(self, index: int) -> list[int]:
        """SIGKILL a Worker and its executors at once, as when its machine dies; their pids."""
        worker = self.workers[index]
        executors = worker.executors()
        for pid in [*executors, worker.process.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        worker.process.wait(timeout=30)
        return executors

    def processes(self) -> dict[str, int]:
        """Every Worker and executor process running now, by a readable name."""
        found = {}
        for worker in self.workers:
            if worker.alive():
                found[worker.name] = worker.process.pid
                for pid in worker.executors():
                    found[f"{worker.name} executor {pid}"] = pid
        return found

    def stop(self) -> None:
        daemons = [*self.workers, *([self.master] if self.master else [])]
        for daemon in daemons:
            if daemon.alive():
                leftovers = daemon.executors()
                daemon.process.terminate()
                try:
                    daemon.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    daemon.process.kill()
                    daemon.process.wait(timeout=30)
                for pid in leftovers:  # a Worker's executors end with it; never leave one behind
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    def __exit__(self, *exc: object) -> None:
        self.stop()
