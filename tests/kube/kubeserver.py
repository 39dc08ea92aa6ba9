"""A real kube-apiserver + etcd for the tests: ``PYVOLCANO_KUBECONFIG`` if set, else one started with the
project's tools (``../shared/tools/kube/kube-up``), else the tests skip and say how to run them.

Why a module of its own: the integration tests (``tests/kube``), the fault tests and the race
(``benchmarks/``) all need the same server handling, including the parts that must not go wrong on a shared
CI machine: the server is always stopped (``kube-down``), also when a test fails or the run is interrupted,
and every pytest-xdist worker that runs ``kube`` tests gets a server of its own (session fixtures run once per
worker), so workers never see each other's controllers or schedulers.  (One server shared through an xdist group
was the first plan, but ``--dist loadgroup`` of pytest-xdist 3.8 groups nothing under pytest 9, whose node ids
can no longer be rewritten.)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the project's packed Kubernetes/Volcano binaries (``../shared/tools`` beside a checkout)
TOOLS = Path(os.environ.get("PYVOLCANO_TOOLS", str(REPO.parent / "shared" / "tools")))
KUBE_UP = TOOLS / "kube" / "kube-up"
KUBE_DOWN = TOOLS / "kube" / "kube-down"

HOW_TO_RUN = ("needs a real API server: set PYVOLCANO_KUBECONFIG=/path/to/kubeconfig, or put the project's tools "
              f"at {TOOLS} (kube/kube-up starts etcd + kube-apiserver for the run; PYVOLCANO_TOOLS overrides "
              "the path)")


def tools_available() -> bool:
    return os.access(KUBE_UP, os.X_OK) and os.access(KUBE_DOWN, os.X_OK)


def available() -> bool:
    return bool(os.environ.get("PYVOLCANO_KUBECONFIG")) or tools_available()


@dataclass
class Server:
    """One API server: its kubeconfig, and (when this run started it) the kube-up DIR it lives in."""

    kubeconfig: str
    dir: Path | None = None
    _down: bool = field(default=False, repr=False)

    @property
    def owned(self) -> bool:
        """True when this run started the server (then it may be stopped and restarted by fault tests)."""
        return self.dir is not None

    def apiserver_pid(self) -> int:
        assert self.dir is not None
        return int((self.dir / "kube-apiserver.pid").read_text().strip())

    def stop_apiserver(self, grace: float = 5.0) -> list[str]:
        """Stop kube-apiserver only (etcd keeps the data); returns its command line for ``start_apiserver``.

        SIGTERM first: kube-apiserver stops listening at once and answers nothing new, but its process stays while
        watch connections are open (with a scheduler's informers and a test's watch open it had not exited 20 s
        later), so after ``grace`` seconds it gets SIGKILL, which ends those connections too."""
        pid = self.apiserver_pid()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        os.kill(pid, signal.SIGTERM)
        if not self._wait_gone(pid, grace):
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid, 10)
        return [a.decode() for a in argv]

    @staticmethod
    def _wait_gone(pid: int, timeout: float) -> bool:
        """Wait until process ``pid`` has exited (gone, or a zombie nobody reaps); False on timeout."""
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{pid}").exists():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def start_apiserver(self, argv: list[str]) -> None:
        """Start kube-apiserver again with the same flags (same port, same etcd) and record its pid for kube-down."""
        assert self.dir is not None
        log = (self.dir / "logs" / "kube-apiserver.log").open("ab")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        log.close()
        (self.dir / "kube-apiserver.pid").write_text(f"{p.pid}\n")

    def down(self) -> None:
        if self.dir is None or self._down:
            return
        self._down = True
        subprocess.run([str(KUBE_DOWN), str(self.dir)], capture_output=True, timeout=120)
        if self.dir.name.startswith("pyvolcano-kube-"):  # ours (new_dir): logs are the only thing left
            shutil.rmtree(self.dir, ignore_errors=True)


def up(directory: Path, *apiserver_flags: str) -> Server:
    """``kube-up DIR``: etcd + kube-apiserver on loopback; stopped by ``Server.down`` (and at exit at the latest)."""
    directory.mkdir(parents=True, exist_ok=True)
    srv = Server("", directory)
    atexit.register(srv.down)  # an interrupted run (KeyboardInterrupt past the fixtures) still stops it
    r = subprocess.run([str(KUBE_UP), str(directory), *apiserver_flags], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        srv.down()
        raise RuntimeError(f"kube-up {directory} failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    srv.kubeconfig = r.stdout.strip().splitlines()[-1]
    return srv


def session_server() -> Server:
    """The run's server: the one ``PYVOLCANO_KUBECONFIG`` names, or a fresh one in a new temporary DIR."""
    env = os.environ.get("PYVOLCANO_KUBECONFIG", "")
    if env:
        return Server(env)
    return up(new_dir())


def new_dir() -> Path:
    """A DIR for kube-up that nothing else deletes while the server runs (not under pytest's basetemp: pytest
    prunes old basetemps, also those of a run still going on when several runs share the machine, and
    kube-down needs DIR's pid files); ``Server.down`` removes it again."""
    return Path(tempfile.mkdtemp(prefix="pyvolcano-kube-"))


@contextlib.contextmanager
def serving() -> Iterator[Server]:
    """A real API server for a test session or module (the kube tests' fixture and the kube benchmark's): skips
    with how to run the tests when there is none, points ``tests.kube.cluster`` at it, and always tears it down."""
    import pytest

    from tests.kube import cluster

    if not available():
        pytest.skip(HOW_TO_RUN)
    srv = session_server()
    cluster.KUBECONFIG = srv.kubeconfig
    try:
        yield srv
    finally:
        srv.down()
