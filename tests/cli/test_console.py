"""What the commands print (issue 23): a short console by default, the sweep's table, one warning
line for a degenerate run, one-line errors and help that lists what each command takes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from fixtures_http import ScriptedServer, grader_policy
from fixtures_tracking import CONF, cli, compose, search_runs, store_uri

from physassist import degenerate
from physassist.cli import commands, console, sweep_summary

LINE_BUDGET = 20


def _turns(
    ends: list[str], answered: list[bool], scores: list[float], status: list[str]
) -> pd.DataFrame:
    return pd.DataFrame({"end": ends, "answered": answered, "score": scores, "status": status})


def test_a_run_with_no_answer_is_degenerate_with_its_counts() -> None:
    at_budget = _turns(["budget"] * 4, [False] * 4, [0.0] * 4, ["scored"] * 4)
    assert degenerate.summary(at_budget) == "0 of 4 turns answered: all ended at the budget"
    mixed = _turns(
        ["budget", "budget", "answered", "error"],
        [False] * 4,
        [0.0, 0.0, 0.0, None],
        ["scored"] * 3 + ["error"],
    )
    assert degenerate.summary(mixed) == (
        "0 of 4 turns answered: 2 ended at the budget, 1 ended with an empty reply, 1 ended in a "
        "system fault"
    )


def test_a_run_with_nothing_scored_is_degenerate_and_one_answer_is_enough() -> None:
    undecided = _turns(["answered"] * 3, [True] * 3, [None] * 3, ["undecided"] * 3)
    assert degenerate.summary(undecided) == "0 of 3 turns scored: all undecided by the judge"
    one_answer = _turns(["budget", "answered"], [False, True], [0.0, 0.5], ["scored"] * 2)
    assert degenerate.summary(one_answer) is None
    faults = _turns(["error"] * 2, [False] * 2, [None] * 2, ["error"] * 2)
    assert degenerate.summary(faults) is None  # the faults line says it (physassist.faults)


def test_sweep_table_has_the_swept_values_as_columns(tmp_path: Path) -> None:
    metrics = {
        "mrs": 31.9,
        "mrs_ci_low": 27.9,
        "mrs_ci_high": 35.6,
        "pass_turn_0.60": 22.9,
        "pass_turn_0.75": 6.9,
        "n_turns": 144,
        "unscored_turns": 0,
    }
    for num, query in ((1, "explicit"), (0, "implicit")):  # recorded out of order (parallel jobs)
        sweep_summary.record(
            tmp_path,
            {
                "num": num,
                "overrides": ["model=baseline", f"query={query}"],
                "status": "FINISHED",
                "run_id": f"{num}" * 32,
                "metrics": metrics,
                "taus": [0.6, 0.75],
                "note": "",
            },
        )
    lines = sweep_summary.table(sweep_summary.read(tmp_path)).splitlines()
    assert lines[0].split() == [
        "query",
        "mRS",
        "[95%",
        "CI]",
        "Pass@Turn",
        "0.60",
        "Pass@Turn",
        "0.75",
        "unscored",
        "MLflow",
        "run",
    ]
    assert lines[2].split() == [
        "implicit",
        "31.9",
        "[27.9,",
        "35.6]",
        "22.9",
        "6.9",
        "0",
        "of",
        "144",
        "00000000",
    ]
    assert lines[3].split()[0] == "explicit" and len(lines) == 4


def test_verbose_flag_is_taken_out_of_argv(monkeypatch) -> None:
    monkeypatch.delenv(console.VERBOSE_ENV, raising=False)
    argv = ["physassist-eval", "model=oracle"]
    assert not console.take_verbose_flag(argv) and console.inspect_display(None) == "none"
    argv = ["physassist-eval", "-v", "model=oracle"]
    assert console.take_verbose_flag(argv) and argv == ["physassist-eval", "model=oracle"]
    assert console.inspect_display(None) == "full" and console.inspect_display("plain") == "plain"


def test_each_command_names_only_what_it_takes() -> None:
    assert "model" not in commands.names("physassist-rescore", CONF)
    assert {"judge", "tracking", "source", "taus"} <= set(
        commands.names("physassist-rescore", CONF)
    )
    assert commands.groups("generate", CONF) == [
        "tracking",
        "inspect",
        "generator",
    ]  # inspect: its calls' bounds
    assert "experiment" in commands.groups("eval", CONF) and "generator" not in commands.groups(
        "eval", CONF
    )
    assert commands.groups_help("rescore", CONF).splitlines() == [
        "judge: human, llm, panel, rules",
        "grounding: off, on",
        "tracking: mlflow, none",
    ]


def test_errors_and_help_are_the_commands_own(tmp_path: Path) -> None:
    proc = cli(
        ["physassist-eval", "-m", "query=implicit,explicit", "--cfg", "job"],
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "physassist-eval: error: Only one of --run, --multirun, --cfg, --info and "
        "--shell_completion can be specified"
        " (--cfg prints one composition: physassist-eval query=implicit --cfg job)"
    ]
    proc = cli(["physassist-rescore", "source=X", "model=baseline"], cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "physassist-rescore: error: model: no such config group or key (groups and keys: "
        "grounding, inspect, judge, source, taus, tracking)"
    )
    for program, takes, what in (
        ("physassist-rescore", "judge: ", "source (required)"),
        ("physassist-generate", "generator: scripted", "store:"),
    ):
        shown = cli([program, "--help"], cwd=tmp_path, timeout=120).stdout
        assert takes in shown and what in shown
        assert not any(
            line.startswith(("model:", "menu:", "dataset:")) for line in shown.splitlines()
        ), program


def _printed(proc) -> list[str]:
    return (proc.stdout + proc.stderr).splitlines()


def _quiet(lines: list[str]) -> None:
    text = "\n".join(lines)
    for noise in (
        "Flushing the async trace logging queue",
        "httpx",
        "HTTP Request:",
        "total time:",
        "Warning",
        "Completed all tasks",
        "[root]",  # Inspect's status lines through Hydra's job logging
    ):
        assert noise not in text, noise


def test_inspects_status_lines_stay_out_of_a_jobs_console() -> None:
    """Inspect's log display (what ``display=none`` runs as: ``staging.quiet_display``) logs its
    status on the root logger; its throttled trailing line fires from the event loop, naming
    asyncio's file, and Hydra's job logging printed it in every sweep: "[root][INFO] - Task:
    ..."."""
    import asyncio
    import io
    import logging
    from types import SimpleNamespace

    from inspect_ai._display.log.display import LogTaskDisplay

    from physassist.staging import quiet_display

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # as Hydra's job logging: the root's console handler
    handler.setFormatter(logging.Formatter("[%(name)s][%(levelname)s] - %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    profile = SimpleNamespace(name="physassist", model="mockllm/model", steps=1)
    display = LogTaskDisplay(SimpleNamespace(profile=profile))

    async def samples() -> None:
        display.sample_complete(1, 3)
        display.sample_complete(2, 3)  # within Inspect's 5 s window: fired later, by the loop
        await asyncio.sleep(5.5)

    try:
        with quiet_display({"display": "none"}):
            asyncio.run(samples())
            logging.getLogger().warning("a warning on the root logger still shows")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert stream.getvalue().splitlines() == [
        "[root][WARNING] - a warning on the root logger still shows"
    ]


@pytest.mark.slow
def test_an_eval_and_its_llm_rescore_print_at_most_20_lines_and_a_degenerate_eval_says_so(
    tmp_path: Path,
) -> None:
    """One eval serves both commands' consoles (an eval is the expensive part): the eval's, then
    an LLM rescoring of its log, then the degenerate eval's warning."""
    common = [
        f"tracking.uri={store_uri(tmp_path)}",
        f"inspect.log_dir={tmp_path / 'logs'}",
        "inspect.limit=2",
    ]
    # the first eval of a fresh machine (it builds the sample's EHR store) starts with the table
    proc = cli(
        ["physassist-eval", *common],
        cwd=tmp_path,
        timeout=300,
        env={"PHYSASSIST_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = _printed(proc)
    assert len(lines) <= LINE_BUDGET, "\n".join(lines)
    # what was run, then the table (after the progress lines, if any)
    at = next(
        (k for k, line in enumerate(lines) if line.startswith("model ") and " | dataset " in line),
        0,
    )
    assert (
        lines[at]
        == "model physassist/oracle | dataset sample: 2 sessions, en | ehr strict | judge rules"
    ), "\n".join(lines)
    assert lines[at + 1].split() == ["metric", "value", "95%", "CI"], "\n".join(lines)
    assert any(line.startswith("MLflow run:") for line in lines)
    _quiet(lines)
    # physassist-rescore with an LLM grader on that eval's log is as quiet
    log = next((tmp_path / "logs").glob("*.eval"))
    with ScriptedServer({"grader": grader_policy}) as server:
        proc = cli(
            [
                "physassist-rescore",
                f"source={log}",
                "judge=llm",
                "judge.provider=openai-api/compatible",
                "judge.model=grader",
                f"judge.base_url={server.base_url}",
                "judge.api_key_env=OPENAI_COMPATIBLE_API_KEY",
                "tracking=none",
                f"inspect.log_dir={tmp_path / 'logs'}",
            ],
            cwd=tmp_path,
            timeout=300,
            env={"OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
        )
        graded = len(server.served("grader"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = _printed(proc)
    assert graded >= 8 and len(lines) <= LINE_BUDGET, "\n".join(lines)
    _quiet(lines)
    # the README's first worked example as it was: no turn fits the budget, nothing answered
    (tmp_path / "conf" / "terminal").mkdir(parents=True)
    (tmp_path / "conf" / "terminal" / "tight.yaml").write_text(
        "mode: prepare_to_answer\nbudget: 2\nnudge: false\n"
    )
    proc = cli(
        [
            "physassist-eval",
            "--config-dir",
            str(tmp_path / "conf"),
            "terminal=tight",
            "model=explorer",
            *common,
        ],
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    warning = "0 of 8 turns answered: all ended at the budget"
    assert proc.stderr.strip().splitlines() == [f"physassist-eval: warning: {warning}"]
    run = search_runs(store_uri(tmp_path), filter_string="tags.`choice.terminal` = 'tight'").iloc[0]
    assert run["tags.physassist.degenerate"] == warning and run["metrics.mrs"] == 0.0


@pytest.mark.slow
def test_a_two_job_sweep_prints_a_line_per_job_and_one_table(tmp_path: Path) -> None:
    proc = cli(
        [
            "physassist-eval",
            "-m",
            "model=oracle,empty",
            "inspect.limit=1",
            f"tracking.uri={store_uri(tmp_path)}",
            f"inspect.log_dir={tmp_path / 'logs'}",
        ],
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = _printed(proc)
    assert len(lines) <= LINE_BUDGET, "\n".join(lines)
    _quiet(lines)
    header = next(i for i, line in enumerate(lines) if line.startswith("model "))
    assert [line.split()[0] for line in lines[header + 2 : header + 4]] == ["oracle", "empty"]
    assert lines[header + 2].split()[1:4] == ["100.0", "[100.0,", "100.0]"]
    assert (
        "degenerate: 0 of 4 turns answered" in lines[header + 3]
    )  # the empty floor answers nothing
    assert sum(line.startswith("job model=") for line in lines) == 2


@pytest.mark.slow
def test_the_offline_generator_preset_runs(tmp_path: Path) -> None:
    proc = cli(
        [
            "physassist-generate",
            "generator=scripted",
            "scenarios=[med_safety]",
            "tiers=[1]",
            "tracking=none",
            f"output_dir={tmp_path / 'out'}",
            f"inspect.log_dir={tmp_path / 'logs'}",
        ],
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (
        tmp_path / "out" / "med_safety.jsonl"
    ).is_file() and "sessions: 1 of 1 slots" in proc.stdout


def test_plots_of_a_run_with_nothing_scored_say_nothing(tmp_path: Path) -> None:
    """Every turn a system fault: the figures are drawn without matplotlib's or numpy's warnings."""
    import subprocess
    import sys

    script = (
        "import pandas as pd; from pathlib import Path; from physassist.cli import console; "
        "console.setup()\n"
        "from physassist.tracking.plots import run_plots\n"
        "turns = pd.DataFrame({'session_id': ['s'] * 4, 'epoch': 1, 'turn': range(4), 'task_type': "
        "['IL', 'DG', 'CR', 'WU'],"
        " 'subtype': 'none', 'tool_source': 'ehr', 'score': float('nan'), 'status': 'error'})\n"
        f"run_plots(turns, Path({str(tmp_path)!r}), taus=[0.6, 0.75])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, console.VERBOSE_ENV: "0"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr


def test_the_result_table_is_preceded_by_what_was_run() -> None:
    """One line names the model, the dataset (sessions, language), the EHR semantics and the
    judge with its graders: ``100.0 [100.0, 100.0]`` alone tells a newcomer nothing."""
    from physassist.cli.config import resolve
    from physassist.cli.printing import run_line
    from physassist.tracking.params import flatten_config

    params = flatten_config(resolve(compose(["judge=llm", "ehr=compat", "language=zh"])))
    assert run_line(params, {"n_sessions": 36.0}) == (
        "model physassist/oracle | dataset sample: 36 sessions, zh | ehr compat | judge llm "
        "(openai/gpt-5.4-mini)"
    )
    params = flatten_config(resolve(compose(["judge=panel"])))
    assert run_line(params, {}).endswith(
        "| judge panel (" + ", ".join(resolve(compose(["judge=panel"]))["judge"]["models"]) + ")"
    )


def test_the_noise_line_under_the_result_table() -> None:
    """One line, three cases: measured noise, none (repeats that agree), unmeasured (none)."""
    from physassist.cli.printing import noise_line, result_table

    measured = {
        "mrs": 43.8,
        "noise.mrs": 2.04,
        "mde.mrs": 2.91,
        "repeats.patient": 1,
        "repeats.agent": 3,
        "repeats.judge": 3,
    }
    assert noise_line(measured) == (
        "noise: +-2.0 points between identical runs; detects >= 2.9 (mRS, 80% power; 3 epochs, 3 "
        "judgings; not repeated: patient)"
    )
    none = {
        "noise.mrs": 0.0,
        "mde.mrs": 0.0,
        "repeats.patient": 1,
        "repeats.agent": 2,
        "repeats.judge": 1,
    }
    assert noise_line(none).startswith(
        "noise: none between identical runs (2 epochs agree; not repeated: patient, judge)"
    )
    assert noise_line({"mrs": 50.0}).startswith("noise: unmeasured (one epoch, one judging)")
    assert result_table(measured, [0.6]).splitlines()[-1] == noise_line(measured)


def test_the_sweep_table_shows_noise_only_when_a_job_measured_it(tmp_path: Path) -> None:
    for num, seed in ((0, "0"), (1, "1")):
        metrics = {
            "mrs": 43.8 + num,
            "mrs_ci_low": 40.3,
            "mrs_ci_high": 47.5,
            "noise.mrs": 2.0,
            "mde.mrs": 2.8,
            "n_turns": 432,
            "unscored_turns": 0,
        }
        sweep_summary.record(
            tmp_path,
            {
                "num": num,
                "overrides": [f"model.args.seed={seed}"],
                "status": "FINISHED",
                "run_id": f"{num}" * 32,
                "metrics": sweep_summary.headline(metrics, [0.6]),
                "taus": [0.6],
                "note": "",
            },
        )
    lines = sweep_summary.table(sweep_summary.read(tmp_path)).splitlines()
    assert lines[0].split()[:6] == ["model.args.seed", "mRS", "[95%", "CI]", "noise", "detects"]
    assert lines[2].split()[4:6] == ["+-2.0", "2.8"]
