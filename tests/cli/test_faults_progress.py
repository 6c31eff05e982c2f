"""When stdout is not a terminal (here: pytest's capture), a run prints one short line per
finished session (at most one per ``progress.EVERY_S`` seconds): done/total, mRS so far, unscored
turns so far; other evals print none."""

from __future__ import annotations

from fixtures_tracking import compose

import physassist.cli.eval as ev
from physassist.cli import progress


def test_one_progress_line_per_finished_session_when_stdout_is_not_a_tty(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # sessions of a slow model: each one a line
    cfg = compose(["model=oracle", "inspect.limit=2", "inspect.display=none", "inspect.progress_s=3600", "tracking=none",
                   f"inspect.log_dir={tmp_path}"])  # no heartbeat on a loaded machine (test_faults_calls.py has it)
    out = ev.run_experiment(cfg, ev.JobContext())
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("sessions ")]
    assert lines == ["sessions 1/2  mRS so far 100.0  unscored turns 0", "sessions 2/2  mRS so far 100.0  unscored turns 0"]
    assert out.metrics["mrs"] == 100.0

    from inspect_ai import eval as inspect_eval

    from physassist.cli.config import check_config, resolve

    inspect_eval(ev.build_task(check_config(resolve(cfg))), model="physassist/oracle", limit=1, display="none", log_dir=str(tmp_path))
    assert "sessions " not in capsys.readouterr().out  # outside a physassist-eval run: silent


def test_progress_lines_are_at_most_one_per_interval(tmp_path, capsys, monkeypatch) -> None:
    """A quick run (sessions finishing within the interval) prints no progress line at all."""
    monkeypatch.setattr(progress, "EVERY_S", 3600.0)
    cfg = compose(["model=oracle", "inspect.limit=2", "inspect.display=none", "inspect.progress_s=3600", "tracking=none",
                   f"inspect.log_dir={tmp_path}"])
    ev.run_experiment(cfg, ev.JobContext())
    assert "sessions " not in capsys.readouterr().out
