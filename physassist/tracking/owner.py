"""Which process holds something (a sweep job's run, a pending sweep parent), and whether it
is still alive: on this host its process must exist; on another, it must have shown a sign of
life within ``LEASE_S``."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

import psutil

LEASE_S = 180.0  # a holder on another host with no sign of life for this long is gone

_pid: int | None = None  # the process this one acts for (``act_for``), else its own


def act_for(pid: int) -> None:
    """Claim and hold in the name of process ``pid`` (the tracking agent, for its command)."""
    global _pid
    _pid = pid


@dataclass(frozen=True)
class Owner:
    """The process that holds a run: host, pid and the time it claimed it."""

    host: str
    pid: int
    since: float

    @classmethod
    def me(cls) -> Owner:
        return cls(socket.gethostname(), _pid or os.getpid(), time.time())

    @classmethod
    def parse(cls, text: str | None) -> Owner | None:
        try:
            host, pid, since = str(text).rsplit(":", 2)
            return cls(host, int(pid), float(since))
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}:{self.since:.3f}"

    def alive(self, heartbeat: float | None = None, now: float | None = None) -> bool:
        """On this host: its process exists (and is not a newer one with the same pid).
        Elsewhere: it claimed or sent a heartbeat within ``LEASE_S``."""
        if self.host == socket.gethostname():
            try:
                proc = psutil.Process(self.pid)
                if proc.status() == psutil.STATUS_ZOMBIE:
                    return False
                started: float = proc.create_time()
                return started <= self.since + 1
            except psutil.Error:
                return False
        last = max(self.since, heartbeat or 0.0)
        return (now or time.time()) - last < LEASE_S
