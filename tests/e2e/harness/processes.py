"""What the harness runs beside the tests: a component's process, its log in a file, ended with
the test process however that ends; and a thread that polls and acts until told to stop."""

from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Loaded once here: between fork and exec (preexec_fn) only the call itself should run.
_LIBC = ctypes.CDLL("libc.so.6", use_errno=True)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's pick for port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def moto_environment(endpoint: str) -> dict[str, str]:
    """What a Go AWS SDK client needs to talk to moto at `endpoint` and nowhere else: test
    credentials, the Region, the endpoint (AWS_ENDPOINT_URL, which the SDK's default config
    honours) and no instance metadata lookup."""
    from tests.e2e.harness.stack_objects import REGION

    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "PATH": "/usr/bin:/bin",
    }


def die_with_parent() -> None:
    # prctl(PR_SET_PDEATHSIG, SIGTERM): the kernel ends the component when the test process
    # that started it dies, however it dies.
    _LIBC.prctl(1, signal.SIGTERM)


class LoggedProcess:
    """One component (`name`) started with `command` and `environment`, its output appended to
    `<work_dir>/<name>.log`."""

    def __init__(self, name: str, work_dir: Path) -> None:
        self.name = name
        self.log_file = work_dir / f"{name}.log"
        self._process: subprocess.Popen[bytes] | None = None

    def launch(self, command: list[str], environment: dict[str, str]) -> None:
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                preexec_fn=die_with_parent,
            )

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def check_running(self) -> None:
        if self._process is not None and self._process.poll() is not None:
            raise AssertionError(
                f"e2e: {self.name} exited ({self._process.returncode}):\n" + self.log()[-3000:]
            )

    def wait(self, what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Polls `probe` until truthy, the process alive; fails naming `what` and its last log
        lines."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_running()
            found = probe()
            if found:
                return found
            if time.monotonic() > deadline:
                tail = "\n".join(self.log().splitlines()[-20:])
                raise AssertionError(
                    f"e2e: timed out after {timeout:.0f} s waiting for {what}:\n{tail}"
                )
            time.sleep(0.2)


class Poller:
    """Runs `sync_once` every `interval` seconds in a thread while entered; what the last round
    failed on is kept in `last_error` (None once one succeeds) for the wait that times out."""

    interval = 0.3

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.last_error: Exception | None = None

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync_once()
                self.last_error = None
            except Exception as error:  # kept for the wait that times out on it
                if self._stop.is_set():
                    return
                self.last_error = error

    def sync_once(self) -> None:
        raise NotImplementedError
