"""When stdout is not a terminal (here: pytest's capture), a run prints one short line per
finished session: done/total, mRS so far, unscored turns so far; other evals print none."""

from __future__ import annotations

from fixtures_tracking import compose

import physassist.cli.eval as ev


def test_one_progress_line_per_finished_session_when_stdout_is_not_a_tty(tmp_path, capsys) -> None:
    cfg = compose(["model=oracle", "inspect.limit=2", "inspect.display=none", "tracking=none", f"inspect.log_dir={tmp_path}"])
    out = ev.run_experiment(cfg, ev.JobContext())
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("sessions ")]
    assert lines == ["sessions 1/2  mRS so far 100.0  unscored turns 0", "sessions 2/2  mRS so far 100.0  unscored turns 0"]
    assert out.metrics["mrs"] == 100.0

    from inspect_ai import eval as inspect_eval

    from physassist.cli.config import check_config, resolve

    inspect_eval(ev.build_task(check_config(resolve(cfg))), model="physassist/oracle", limit=1, display="none", log_dir=str(tmp_path))
    assert "sessions " not in capsys.readouterr().out  # outside a physassist-eval run: silent
