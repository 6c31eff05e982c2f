"""SIGTERM and SIGHUP (kill, timeout, docker stop, SLURM preemption, a closed terminal) end a
single run, a basic sweep and a joblib sweep like Ctrl-C: afterwards no run is RUNNING, every
KILLED run says why, the exit status is 128 + the signal (143, 129; 130 for Ctrl-C), and running
the sweep again finishes each job exactly once. The model is the scripted HTTP server with a
latency, so the signal lands while a job evaluates (for the joblib sweep, while both do: its
answers take 30 s, so no job can finish first). A run whose tracking agent died before the
signal is ended KILLED all the same, through a new agent."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures_http import ScriptedServer, agent_policy
from fixtures_tracking import VENV_BIN

from physassist.agents.oracle import OracleAgent


def _runs(uri: str) -> list:
    import mlflow

    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("physassist")
    return client.search_runs([experiment.experiment_id]) if experiment else []


def _jobs_running(db: Path) -> int:
    """How many jobs' runs are RUNNING: read-only SQL, as an MlflowClient on a store the command
    is still creating would run its own migrations there ("attempt to write a readonly
    database")."""
    import sqlite3

    if not db.is_file():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as con:
            (n,) = con.execute(
                "SELECT count(*) FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                "WHERE r.status = 'RUNNING' AND t.key = 'physassist.kind' AND t.value = 'job'"
            ).fetchone()
        return n
    except sqlite3.Error:
        return 0


def _wait_for(what: Callable[[], bool], proc: subprocess.Popen, timeout: float = 600) -> None:
    """Until ``what()``; 600 s: on a 2-core machine shared by other jobs the joblib workers took
    over 150 s to start."""
    deadline = time.monotonic() + timeout
    while not what():
        assert proc.poll() is None, f"ended first ({proc.returncode}): {proc.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.3)


EVAL = (str(VENV_BIN / "physassist-eval"),)


def _command(tmp_path: Path, url: str, *extra: str, program: tuple[str, ...] = EVAL) -> list[str]:
    return [
        *program,
        *extra,
        "model=openai_compatible",
        "model.name=oracle",
        f"model.base_url={url}",
        "inspect.limit=2",
        "inspect.display=none",
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
        f"hydra.run.dir={tmp_path / 'out'}",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]


def _tree(pid: int) -> list[str]:
    """The command lines of a process and its descendants (for a failure message)."""
    import psutil

    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []
    lines = []
    for proc in procs:
        try:
            lines.append(f"{proc.pid} {proc.status()} {' '.join(proc.cmdline())[:150]}")
        except psutil.Error:
            lines.append(f"{proc.pid} (gone or a zombie)")
    return lines


def _interrupt(
    tmp_path: Path,
    signum: int,
    *extra: str,
    server: ScriptedServer | None = None,
    jobs: int = 1,
    program: tuple[str, ...] = EVAL,
    before: Callable[[subprocess.Popen], None] = lambda proc: None,
) -> tuple[int, str, list]:
    """Start the command, send ``signum`` once ``jobs`` job runs evaluate (RUNNING, and the model
    asked since the start); the exit status, stderr and the runs after it ended. ``server``: a
    running one (a re-run must name the same URL: it is part of the sweep's and the jobs' keys).
    ``before(proc)``: done to the evaluating command just before the signal."""
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    env = {**os.environ, "OPENAI_COMPATIBLE_API_KEY": "EMPTY", "PYTHONUNBUFFERED": "1"}
    with contextlib.ExitStack() as stack:
        if server is None:
            # 1 s a response: the two sessions' eval lasts >= 8 s, so the signal lands inside it
            # (at 0.3 s a quiet machine's run once ended first: exit 0, nothing left to interrupt)
            server = stack.enter_context(
                ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=1.0)
            )
        asked = len(server.served())
        proc = subprocess.Popen(
            _command(tmp_path, server.base_url, *extra, program=program),
            cwd=tmp_path,
            env=env,
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            db = tmp_path / "mlruns" / "mlflow.db"
            _wait_for(lambda: _jobs_running(db) >= jobs and len(server.served()) > asked, proc)
            before(proc)
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired as exc:  # say which signal, and who is still there
            raise AssertionError(
                f"{signal.Signals(signum).name}: not ended in 90 s; alive: {_tree(proc.pid)}; "
                f"stderr: {(exc.stderr or b'')[-2000:]!r}"
            ) from exc
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc.returncode, err, _runs(uri)


def _all_ended(runs: list, reason: str) -> None:
    assert runs and not [r for r in runs if r.info.status == "RUNNING"]
    for run in runs:
        assert run.info.status == "KILLED" and run.info.end_time, run
        if run.data.tags.get("physassist.kind") == "job":
            assert reason in run.data.tags["physassist.end_reason"], run.data.tags


def _name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_ends_a_single_run_killed_with_the_reason(tmp_path, signum) -> None:
    """Ctrl-C sent to the command alone too; each time Inspect's own first-Ctrl-C cancellation
    wrote its log, as cancelled."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    code, err, runs = _interrupt(tmp_path, signum)
    assert code == 128 + signum, err[-2000:]
    assert err.strip().splitlines()[-1] == f"physassist-eval: interrupted ({_name(signum)})"
    _all_ended(runs, f"interrupted ({_name(signum)})")
    logs = list_eval_logs(str(tmp_path / "logs"), recursive=True)
    assert [read_eval_log(log, header_only=True).status for log in logs] == ["cancelled"]


def _kill_tracking_agent(proc: subprocess.Popen) -> None:
    """SIGKILL the command's tracking agent (its child ``python -m physassist.tracking``, not the
    agent's plotter) and wait until it is gone."""
    import psutil

    agents = [
        c for c in psutil.Process(proc.pid).children() if "physassist.tracking" in c.cmdline()
    ]
    assert len(agents) == 1, _tree(proc.pid)
    agents[0].kill()
    agents[0].wait(timeout=30)  # reaped by the command's Popen, or a zombie: either way not running


@pytest.mark.slow
def test_sigterm_after_the_tracking_agent_died_ends_the_run_killed_through_a_new_agent(
    tmp_path,
) -> None:
    """The agent holding the run is gone (SIGKILL, the OOM killer) when SIGTERM comes in the
    eval: the command ends its run KILLED with the signal's reason through a new agent
    (``EvalRun._end``), well within the bound after the signal, and exits as for SIGTERM."""
    started = []
    code, err, runs = _interrupt(
        tmp_path,
        signal.SIGTERM,
        before=lambda proc: (_kill_tracking_agent(proc), started.append(time.monotonic())),
    )
    took = time.monotonic() - started[0]
    assert code == 128 + signal.SIGTERM, err[-2000:]
    assert err.strip().splitlines()[-1] == "physassist-eval: interrupted (SIGTERM)", err[-2000:]
    assert "still ending" not in err
    _all_ended(runs, "interrupted (SIGTERM)")
    assert len(runs) == 1 and took < 45, (
        took
    )  # the process's own bound is 60 s (signals.EXIT_BOUND_S)


def _rerun_finishes_each_job_once(tmp_path: Path, server: ScriptedServer, sweep: list[str]) -> None:
    server.latency = 0.0
    again = subprocess.run(
        _command(tmp_path, server.base_url, *sweep),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
    )
    assert again.returncode == 0, again.stderr[-2000:]
    runs = _runs(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    jobs = [r for r in runs if r.data.tags.get("physassist.kind") == "job"]
    assert sorted(r.info.status for r in jobs) == [
        "FINISHED",
        "FINISHED",
    ]  # one run per job, resumed
    assert len({r.data.tags["physassist.job_key"] for r in jobs}) == 2


def _ended_by(signum: int, code: int, err: str, runs: list) -> None:
    assert code == 128 + signum, err[-2000:]
    _all_ended(runs, f"interrupted ({_name(signum)})")
    assert {r.data.tags.get("physassist.kind") for r in runs} == {"sweep", "job"}


@pytest.mark.slow
def test_sigterm_ends_a_basic_sweep_and_its_job_run_and_a_rerun_finishes_each_job_once(
    tmp_path,
) -> None:
    sweep = ["-m", "hydra/launcher=basic", "query=implicit,explicit"]
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=0.3) as server:
        _ended_by(signal.SIGTERM, *_interrupt(tmp_path, signal.SIGTERM, *sweep, server=server))
        _rerun_finishes_each_job_once(tmp_path, server, sweep)


@pytest.mark.slow
def test_each_signal_ends_a_joblib_sweep_and_both_job_runs_and_a_rerun_finishes_each_job_once(
    tmp_path,
) -> None:
    """SIGTERM, then SIGHUP on the sweep's re-run, then Ctrl-C on the next: each ends the sweep
    and both jobs (in their worker processes) KILLED with its own reason and exit status; the
    last re-run finishes each job exactly once."""
    sweep = ["-m", "hydra/launcher=joblib", "query=implicit,explicit"]
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=30) as server:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            code, err, runs = _interrupt(tmp_path, signum, *sweep, server=server, jobs=2)
            _ended_by(signum, code, err, runs)
            assert len([r for r in runs if r.data.tags.get("physassist.kind") == "job"]) == 2
        _rerun_finishes_each_job_once(tmp_path, server, sweep)


_WAIT_SWALLOWS = """
import sys, time
import joblib.parallel
from physassist.cli.eval import main

class Time:  # joblib's wait for its jobs, in a library that catches the first interrupt and goes on
    swallowed = False
    def sleep(self, seconds):
        try:
            time.sleep(0.5)
        except KeyboardInterrupt:
            if Time.swallowed:
                raise
            Time.swallowed = True
            print("swallowed", file=sys.stderr, flush=True)
    def __getattr__(self, name):
        return getattr(time, name)

joblib.parallel.time = Time()
sys.exit(main())  # as the console script does
"""


@pytest.mark.slow
def test_a_ctrl_c_sent_to_a_joblib_sweep_alone_that_its_wait_swallowed_still_ends_it_killed(
    tmp_path,
) -> None:
    """``kill -INT <sweep pid>``: SIGINT keeps Python's handler (Inspect cancels an eval only
    under it), so nothing delivered it again when it was lost; the sweep waited for its jobs."""
    sweep = ("-m", "hydra/launcher=joblib", "query=implicit,explicit")
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=30) as server:
        code, err, runs = _interrupt(
            tmp_path,
            signal.SIGINT,
            *sweep,
            server=server,
            jobs=2,
            program=(sys.executable, "-c", _WAIT_SWALLOWS),
        )
    assert "swallowed" in err, err[-2000:]
    _ended_by(signal.SIGINT, code, err, runs)
    assert len([r for r in runs if r.data.tags.get("physassist.kind") == "job"]) == 2


_SWALLOWED = """
import os, signal, time
from physassist import signals
signals.install()
class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs inside the finalizer
try:
    Finalized()
    time.sleep(60)
except KeyboardInterrupt:
    raise SystemExit(signals.exit_code())
"""


def test_a_signal_that_lands_in_a_finalizer_still_ends_the_command() -> None:
    """Python swallows an exception raised in a finalizer ("Exception ignored in ..."), so the
    KeyboardInterrupt a SIGTERM became there was lost and the command went on (exit 0 after the
    sleep): it must be delivered again."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _SWALLOWED], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-2000:]
    assert time.monotonic() - started < 30


_AFTER_AN_EVAL = """
import signal, sys
from physassist import signals
from physassist.cli.eval import main
sys.argv = ["physassist-eval", *sys.argv[1:]]
main()  # installs signals, then evaluates (Inspect's event loop, its model calls)
try:
    signal.raise_signal(signal.SIGINT)
except KeyboardInterrupt:
    pass
signals.taken()
print("noticed", signals.interrupted(),
      "ours", signal.set_wakeup_fd(-1) == signals._wakeup[1].fileno())
"""


def test_a_ctrl_c_after_an_eval_is_still_noticed_through_our_wakeup_fd(tmp_path) -> None:
    """An event loop's ``add_signal_handler`` would replace the wakeup fd ``signals`` reads
    SIGINT from (asyncio's, anyio's ``open_signal_receiver``); Inspect's eval uses neither (it
    sets SIGINT's handler with ``signal.signal``), so the fd is still ours after it."""
    argv = [
        "tracking=none",
        "inspect.limit=1",
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"hydra.run.dir={tmp_path / 'out'}",
    ]
    proc = subprocess.run(
        [sys.executable, "-c", _AFTER_AN_EVAL, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "noticed True ours True", proc.stdout[-2000:]


_CAUGHT = """
import time
from physassist import signals
signals.AGAIN_S = 0.5
signals.install()
def library():  # catches everything, as some do, and goes on
    try:
        print("ready", flush=True)
        time.sleep(120)
    except BaseException:
        pass
try:
    library()
    time.sleep(120)
except KeyboardInterrupt:
    signals.taken()
    raise SystemExit(signals.exit_code())
"""


def _signal_ready(script: str, signum: int) -> tuple[int, str, str]:
    """Run ``script``, send ``signum`` once it printed "ready"; its exit status, stdout, stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{signal.Signals(signum).name}: not ended in 30 s") from exc
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_a_library_caught_is_delivered_again_until_the_command_takes_it(signum) -> None:
    code, _, err = _signal_ready(_CAUGHT, signum)
    assert code == 128 + signum, err[-2000:]
    assert "still ending" not in err  # taken, not ended by the bound


_CANCEL_CAUGHT = """
import time
import anyio
from physassist import signals
signals.AGAIN_S = 0.5
signals.install()
async def evaluate():  # an eval whose wind-down swallows the cancellation and goes on
    try:
        print("ready", flush=True)
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        print("cancelled", flush=True)
    time.sleep(60)
try:
    anyio.run(evaluate)
except KeyboardInterrupt:
    signals.taken()
    raise SystemExit(signals.exit_code())
"""


def test_a_ctrl_c_first_cancels_the_event_loop_and_a_swallowed_cancellation_is_interrupted_again() -> (  # noqa: E501
    None
):
    """Ctrl-C keeps the event loop's graceful first cancellation (Inspect writes its log under
    it: the handler Python installs stays in place), and when the cancellation is swallowed the
    interrupt comes again (the loop's second Ctrl-C raises KeyboardInterrupt)."""
    code, out, err = _signal_ready(_CANCEL_CAUGHT, signal.SIGINT)
    assert out.split() == ["cancelled"], err[-2000:]
    assert code == 130, err[-2000:]


_IN_SERIALIZER = """
import os, signal, sys, time
from pydantic import BaseModel, model_serializer
import tasks.physassistbench

class Sessions(BaseModel):
    n: int = 1
    @model_serializer(mode="wrap")
    def _dump_in_read_order(self, handler):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while pydantic serializes a session
        time.sleep(10)
        return handler(self)

def physassistbench(**args):
    return Sessions().model_dump()

tasks.physassistbench.physassistbench = physassistbench
from physassist.cli.eval import main
sys.exit(main())  # as the console script does
"""


def test_a_ctrl_c_in_pydantics_serializer_while_the_task_is_built_is_an_interrupt_not_bad_input(
    tmp_path,
) -> None:
    """Pydantic reports a KeyboardInterrupt raised in a serializer as a ValueError ("Error
    calling function `_dump_in_read_order`: KeyboardInterrupt"): the command said it was a config
    error (exit 2). No run exists yet: exit 130, nothing in MLflow."""
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _IN_SERIALIZER,
            "inspect.limit=1",
            f"tracking.uri={uri}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == "physassist-eval: interrupted (Ctrl-C)"
    assert "error" not in proc.stderr.lower()
    assert not _runs(uri)


_STUCK = """
import subprocess, sys, time
from physassist import signals
signals.EXIT_BOUND_S = 1.0
signals.install()
try:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(child.pid, flush=True)
    time.sleep(120)
except KeyboardInterrupt:
    time.sleep(120)  # an ending that never ends (a library joining a thread that waits forever)
"""


def test_a_command_whose_ending_hangs_after_sigterm_stops_within_the_bound_with_its_children() -> (
    None
):
    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-c", _STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        child = psutil.Process(int(proc.stdout.readline()))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)  # every holder of the pipe is gone, the child too
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "still ending 1 s after SIGTERM" in err
    try:
        child.wait(timeout=30)  # SIGKILLed: gone as soon as the kernel (and init) are done with it
    except psutil.TimeoutExpired:
        pytest.fail(f"the command's child {child.pid} outlived it")


def _dead_owner() -> str:
    from physassist.tracking.owner import Owner

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return str(Owner(Owner.me().host, proc.pid, time.time() - 5))


def test_runs_whose_owner_is_gone_are_ended_by_the_next_command_that_opens_the_experiment(
    tmp_path,
) -> None:
    """A job, a sweep parent and a single run a dead process left RUNNING end KILLED with the
    reason; a run of a live process and a run that names no owner are left alone."""
    from physassist.tracking import claims
    from physassist.tracking.owner import Owner
    from physassist.tracking.runs import KIND_TAG, SWEEP_TAG, Tracker

    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    tracker = Tracker(uri, "physassist")
    dead = _dead_owner()
    gone = [
        tracker.create_run("job", {KIND_TAG: "job", SWEEP_TAG: "sw", claims.OWNER_TAG: dead}),
        tracker.create_run("sweep", {KIND_TAG: "sweep", SWEEP_TAG: "sw", claims.OWNER_TAG: dead}),
        tracker.create_run("single", {KIND_TAG: "job", claims.OWNER_TAG: dead}),
    ]
    alive = tracker.create_run("live", {KIND_TAG: "job", claims.OWNER_TAG: str(Owner.me())})
    unowned = tracker.create_run("other tool", {})
    proc = subprocess.run(
        [
            str(VENV_BIN / "physassist-report"),
            "--tracking-uri",
            uri,
            "--out",
            str(tmp_path / "report"),
            "--no-log",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "3 run(s) whose process is gone (kill -9, a crash) marked KILLED" in proc.stderr, (
        proc.stderr[-2000:]
    )
    for run_id in gone:
        run = tracker.client.get_run(run_id)
        assert run.info.status == "KILLED" and run.data.tags[claims.END_TAG].startswith(
            f"{dead} stopped without finishing"
        )
    assert {tracker.client.get_run(r).info.status for r in (alive, unowned)} == {"RUNNING"}


@pytest.mark.slow
def test_after_kill_9_of_a_sweep_the_next_eval_ends_its_runs_killed(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    code, _, runs = _interrupt(tmp_path, signal.SIGKILL, "-m", "query=implicit,explicit")
    assert code == -signal.SIGKILL and [r.info.status for r in runs if r.info.status == "RUNNING"]
    later = subprocess.run(
        [
            str(VENV_BIN / "physassist-eval"),
            "inspect.limit=1",
            "inspect.display=none",
            f"tracking.uri={uri}",
            f"inspect.log_dir={tmp_path / 'logs2'}",
            f"hydra.run.dir={tmp_path / 'out2'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert later.returncode == 0, later.stderr[-2000:]
    ended = [r for r in _runs(uri) if r.info.run_id in {x.info.run_id for x in runs}]
    assert ended and all(r.info.status == "KILLED" for r in ended)
    assert all("stopped without finishing" in r.data.tags["physassist.end_reason"] for r in ended)
