"""A local ``mlflow server`` on 127.0.0.1 over a SQLite store, for the tests and the screenshots.

Bounded: if the server is not healthy within ``startup_seconds`` (a loaded 2-core machine
starts it slowly) it raises ``TrackingError``; on exit the server is stopped, killed if it hangs.
MLflow's server-side job execution (a job runner and three huey consumers, each importing MLflow)
is off unless the environment turns it on: tracking never uses it, and it tripled the server's
start-up CPU (measured at load ~10 on 2 cores: 10 processes, ~14 s CPU, healthy after ~30 s; off:
2 processes, ~5 s CPU, healthy after 7-16 s).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from physassist.tracking.mlflow_store import TrackingError, open_client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]  # (host, port) for an AF_INET socket
        return port


@contextlib.contextmanager
def mlflow_server(backend_uri: str, artifact_root: Path, startup_seconds: float = 150) -> Iterator[str]:
    """Serve ``backend_uri`` (artifacts of new experiments under ``artifact_root``); yields the base URL."""
    open_client(backend_uri)  # schema from the cached template: the server starts fast
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            backend_uri,
            "--default-artifact-root",
            artifact_root.as_uri(),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise TrackingError(f"mlflow server did not come up on {base} (exit {server.poll()})")
            time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
