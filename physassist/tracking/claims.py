"""Exactly-once runs: a job claims its MLflow run before it evaluates, and holds it while it runs.

The claim is an MLflow param on the sweep's parent run. Params are write-once (the store refuses
a second value for a key: a primary key in its database), so logging one is an atomic
compare-and-set that holds for any number of processes and hosts, on SQLite or through a
tracking server over HTTP:

* ``physassist.job.<job key>`` = the job's child run id. The first process to log it created
  the run; a process that loses the race deletes its own fresh run and uses the winner's.
* ``physassist.claim.<job key>.<n>`` = the owner of attempt n (``host:pid:unix time``). A re-run
  takes over a child run whose owner is gone (its process is dead on this host, or it sent no
  heartbeat for ``LEASE_S``) by claiming attempt n+1; losing means another process resumed it.

While it runs, the owner's tracking agent refreshes ``physassist.heartbeat`` on its run
(``heartbeat``); the owner marks the run KILLED on Ctrl-C, SIGTERM or SIGHUP
(``physassist.signals``) and FAILED on an exception, and stops its own process if the sweep
process that launched it dies, so no orphan goes on evaluating and logging for a sweep that is
gone (``holding``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from physassist.tracking.owner import Owner
from physassist.tracking.runs import JOB_TAG, KIND_TAG, SWEEP_TAG, SweepInfo, Tracker

if TYPE_CHECKING:
    from mlflow.entities import Run

log = logging.getLogger(__name__)

JOB_PARAM = "physassist.job."  # + job key -> child run id (on the parent run)
CLAIM_PARAM = "physassist.claim."  # + job key + "." + attempt -> owner (on the parent run)
OWNER_TAG = "physassist.owner"
ATTEMPT_TAG = "physassist.attempt"
HEARTBEAT_TAG = "physassist.heartbeat"
END_TAG = "physassist.end_reason"  # why a run ended KILLED or FAILED
RESUMED_TAG = "physassist.resumed_from"  # the attempt a resumed run took over

HEARTBEAT_S = 30.0  # how often a running job says it is alive
PARENT_POLL_S = 2.0  # how often a job checks that its sweep process still exists


@dataclass(frozen=True)
class Claim:
    """The result of claiming: ``mine`` (evaluate and log into ``run_id``), ``finished`` (skip)
    or ``busy`` (another live process holds it: ``owner``)."""

    state: str
    run_id: str
    attempt: int = 1
    owner: str | None = None


def _refused(exc: Exception) -> bool:
    """The store refused a second value for a write-once param: someone else holds the claim."""
    return "changing param values is not allowed" in str(exc).lower()


def _log_param_once(tracker: Tracker, run_id: str, key: str, value: str) -> str:
    """Log a write-once param; returns the value that is now stored (ours or the winner's)."""
    try:
        tracker._write(lambda: tracker.client.log_param(run_id, key, value))
        return value
    except Exception as exc:  # noqa: BLE001 - only the refusal is an answer
        if not _refused(exc):
            raise
    return tracker._call(lambda: tracker.client.get_run(run_id)).data.params[key]


def _heartbeat(run: Run) -> float | None:
    beat = run.data.tags.get(HEARTBEAT_TAG)
    if beat is None:
        return None
    try:
        return float(beat)
    except ValueError:
        return None


def holder(run: Run, claimed: str | None) -> Owner | None:
    """The live process holding ``run`` (``claimed``: the owner of its latest claim), or None
    when the run is free to take over.

    A run that is not RUNNING is free once its latest claimant has tagged it as its own (it
    ended that attempt); before that, the claimant is between claiming and resuming it.
    """
    tagged = run.data.tags.get(OWNER_TAG)
    if run.info.status != "RUNNING" and (claimed is None or claimed == tagged):
        return None
    owner = Owner.parse(claimed or tagged)
    beat = _heartbeat(run) if tagged == str(owner) else None
    return owner if owner is not None and owner.alive(beat) else None


def new_run(tracker: Tracker, run_name: str, tags: Mapping[str, str], owner: Owner) -> str:
    """Create a RUNNING run held by ``owner`` (a single run: nobody else can claim it).

    A create whose response was lost is sent again (by MLflow's HTTP client or ``_write``), so
    the store may hold two; the ones this call made carry its owner and are deleted but one."""
    all_tags = {KIND_TAG: "job", **tags, OWNER_TAG: str(owner), ATTEMPT_TAG: "1"}
    run = tracker._write(
        lambda: tracker.client.create_run(tracker.experiment_id, run_name=run_name, tags=all_tags)
    )
    run_id: str = run.info.run_id  # (mlflow's searchable_attribute decorator loses the type)
    try:  # the run exists: failing the claim now would leave it RUNNING with nobody to end it
        for twin in tracker.find_runs({OWNER_TAG: str(owner), KIND_TAG: all_tags[KIND_TAG]}):
            if twin.info.run_id != run_id:
                tracker._write(functools.partial(tracker.client.delete_run, twin.info.run_id))
    except Exception as exc:  # noqa: BLE001 - a leftover twin is named, not fatal
        log.warning(
            "run %s: cannot look for or delete a twin a retried create made: %s", run_id, exc
        )
    return run_id


def claim_job(
    tracker: Tracker,
    parent_run_id: str,
    sweep_id: str,
    key: str,
    run_name: str,
    tags: Mapping[str, str],
) -> Claim:
    """Claim job ``key`` of a sweep: create its child run, or take over a stale one, atomically."""
    me = Owner.me()
    params = tracker._call(lambda: tracker.client.get_run(parent_run_id)).data.params
    run_id = params.get(JOB_PARAM + key)
    if run_id is None:
        child_tags = {
            **tags,
            SWEEP_TAG: sweep_id,
            JOB_TAG: key,
            "mlflow.parentRunId": parent_run_id,
        }
        mine = new_run(tracker, run_name, child_tags, me)
        run_id = _log_param_once(tracker, parent_run_id, JOB_PARAM + key, mine)
        if run_id == mine:
            _log_param_once(tracker, parent_run_id, f"{CLAIM_PARAM}{key}.1", str(me))
            return Claim("mine", mine, 1, str(me))
        tracker._write(lambda: tracker.client.delete_run(mine))  # lost the race: not a duplicate
        params = tracker._call(lambda: tracker.client.get_run(parent_run_id)).data.params
    run = tracker._call(lambda: tracker.client.get_run(run_id))
    if run.info.status == "FINISHED":
        return Claim("finished", run_id)
    prefix = f"{CLAIM_PARAM}{key}."
    attempts = {int(k[len(prefix) :]): v for k, v in params.items() if k.startswith(prefix)}
    last = max(attempts, default=0)
    live = holder(run, attempts.get(last))
    if live is not None:
        return Claim("busy", run_id, last, str(live))
    attempt = last + 1
    owner = _log_param_once(tracker, parent_run_id, f"{prefix}{attempt}", str(me))
    if owner != str(me):
        return Claim("busy", run_id, attempt, owner)
    previous = (
        f"attempt {last} by {attempts.get(last) or run.data.tags.get(OWNER_TAG)}"
        f" ended {run.info.status}"
    )
    tracker.set_tags(
        run_id,
        {
            OWNER_TAG: str(me),
            ATTEMPT_TAG: str(attempt),
            HEARTBEAT_TAG: f"{time.time():.0f}",
            RESUMED_TAG: previous,
        },
    )
    if END_TAG in run.data.tags:
        tracker._write(lambda: tracker.client.delete_tag(run_id, END_TAG))
    tracker._write(lambda: tracker.client.update_run(run_id, status="RUNNING", name=run_name))
    return Claim("mine", run_id, attempt, str(me))


def claim(
    tracker: Tracker,
    run_name: str,
    tags: Mapping[str, str],
    sweep: SweepInfo | None,
    key: str | None,
) -> Claim:
    """The run an experiment logs into, made before it evaluates: a sweep job's claimed child
    run, or a new run for a single experiment (or a job whose sweep has no parent run)."""
    if sweep is not None and sweep.parent_run_id and key:
        return claim_job(tracker, sweep.parent_run_id, sweep.sweep_id, key, run_name, tags)
    me = Owner.me()
    return Claim("mine", new_run(tracker, run_name, tags, me), 1, str(me))


def mark_stale(tracker: Tracker, sweep_id: str, why: str = "") -> list[str]:
    """Mark the sweep's RUNNING child runs whose owner is gone KILLED (``why``: added to the
    reason); returns their ids."""
    stale = []
    for run in tracker.find_runs({SWEEP_TAG: sweep_id, KIND_TAG: "job"}, status="RUNNING"):
        if holder(run, None) is None:
            end_run(
                tracker,
                run.info.run_id,
                "KILLED",
                f"{run.data.tags.get(OWNER_TAG)} stopped without finishing{why}",
            )
            stale.append(run.info.run_id)
    return stale


def end_abandoned(tracker: Tracker) -> list[str]:
    """Mark KILLED every RUNNING run of the experiment whose owner is gone (its process died
    on this host: ``kill -9``, a crash, a lost machine; or no heartbeat for ``LEASE_S``
    elsewhere), with the reason; returns their ids. Every command that opens the experiment
    calls it, so a run is not left looking alive until the same sweep is re-run. Runs that
    name no owner (older versions, other tools) are left alone."""
    ended = []
    for run in tracker.find_runs({}, status="RUNNING"):
        owner = run.data.tags.get(OWNER_TAG)
        if owner is None or Owner.parse(owner) is None or holder(run, None) is not None:
            continue
        sweep_id = run.data.tags.get(SWEEP_TAG)
        if run.data.tags.get(KIND_TAG) == "sweep" and sweep_id and live_children(tracker, sweep_id):
            continue  # an identical sweep in another process still runs its jobs and will close it
        with contextlib.suppress(Exception):  # another command may be ending it at the same moment
            end_run(
                tracker,
                run.info.run_id,
                "KILLED",
                f"{owner} stopped without finishing (found by {Owner.me()})",
            )
            ended.append(run.info.run_id)
    return ended


def live_children(tracker: Tracker, sweep_id: str) -> list[Run]:
    """The sweep's child runs still held by a live process (possibly another sweep's)."""
    running = tracker.find_runs({SWEEP_TAG: sweep_id, KIND_TAG: "job"}, status="RUNNING")
    return [r for r in running if holder(r, None) is not None]


def end_run(tracker: Tracker, run_id: str, status: str, reason: str) -> None:
    """End ``run_id`` ``status`` (KILLED, FAILED) with ``reason`` in its end tag."""
    tracker.set_tags(run_id, {END_TAG: reason})  # masked and cut as every tag (set_tags)
    tracker.terminate(run_id, status)


@contextlib.contextmanager
def heartbeat(tracker: Tracker, run_id: str) -> Iterator[None]:
    """Refresh the run's heartbeat every ``HEARTBEAT_S`` while the block runs (its lease, for
    a process on another host that wonders whether the owner is alive)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            with contextlib.suppress(Exception):  # a missed beat only shortens the lease
                tracker.set_tags(run_id, {HEARTBEAT_TAG: f"{time.time():.0f}"})

    thread = threading.Thread(target=beat, name=f"physassist-heartbeat-{run_id[:8]}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


#: How long an orphaned job waits for its run to be ended KILLED before it exits anyway (the
#: tracking agent, or the next command's dead-owner check, ends it then).
ORPHAN_END_S = 10.0


@contextlib.contextmanager
def holding(end: Callable[[str, str], None], *, sweep_pid: int | None = None) -> Iterator[None]:
    """Hold a run while the block runs: ``end(status, reason)`` ends it KILLED on Ctrl-C,
    SIGTERM or SIGHUP and FAILED on an error.

    ``sweep_pid``: the sweep process that launched this job in another process (joblib, submitit
    local); when it dies, the run is ended KILLED (waiting at most ``ORPHAN_END_S``) and this
    process exits: an orphan must not go on evaluating and logging for a sweep that is gone.
    """
    stop = threading.Event()
    parent = os.getppid()

    def watch() -> None:
        while not stop.wait(PARENT_POLL_S):
            if os.getppid() != parent:
                ender = threading.Thread(
                    target=end, args=("KILLED", f"sweep process {parent} died"), daemon=True
                )
                ender.start()
                ender.join(ORPHAN_END_S)
                os._exit(70)

    if sweep_pid is not None and sweep_pid != os.getpid():
        threading.Thread(target=watch, name="physassist-sweep-watch", daemon=True).start()
    try:
        yield
    except (KeyboardInterrupt, SystemExit):
        from physassist import signals

        signals.taken()  # not delivered again while the run is being ended KILLED
        with contextlib.suppress(Exception):
            end("KILLED", signals.reason())
        raise
    except BaseException as exc:
        with contextlib.suppress(Exception):
            end("FAILED", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        stop.set()
