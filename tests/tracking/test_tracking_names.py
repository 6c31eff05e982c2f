"""Run and sweep names say what differs from the defaults."""

from __future__ import annotations

from fixtures_tracking import compose

import physassist.cli.eval as ev
from physassist import staging
from physassist.cli import config
from physassist.tracking import names
from physassist.tracking.names import run_name, sweep_name, swept_factors

DEFAULTS = config.default_choices()


def test_defaults_come_from_eval_yaml() -> None:
    assert (
        DEFAULTS["model"] == "oracle"
        and DEFAULTS["query"] == "implicit"
        and DEFAULTS["menu"] == "on"
    )
    assert "override hydra/launcher" not in DEFAULTS


def test_default_run_is_named_by_its_model_only() -> None:
    assert run_name("physassist/oracle", dict(DEFAULTS), DEFAULTS) == "oracle"


def test_non_default_choices_and_overrides_follow_the_model_in_order() -> None:
    choices = {
        **DEFAULTS,
        "model": "openai",
        "query": "explicit",
        "menu": "off",
        "tracking": "none",
    }
    overrides = [
        "model=openai",
        "query=explicit",
        "menu=off",
        "terminal.budget=4",
        "inspect.limit=20",
        "tracking.uri=sqlite:///x.db",
        "inspect.display=none",
        "hydra.run.dir=/tmp/x",
    ]
    name = run_name("openai/gpt-5.4-mini", choices, DEFAULTS, overrides, "/data/physassistbench")
    assert (
        name == "gpt-5.4-mini | query=explicit | menu=off | terminal.budget=4 | inspect.limit=20 | "
        "dataset=physassistbench"
    )


def test_a_swept_default_value_is_still_named() -> None:
    # in a sweep over query, the implicit job must not look like the plain default run
    assert (
        run_name("physassist/oracle", dict(DEFAULTS), DEFAULTS, ["query=implicit"])
        == "oracle | query=implicit"
    )


def test_runs_differing_only_in_a_model_setting_are_named_apart() -> None:
    """``model.args.seed=0,1`` are two runs: their names (the report's labels) say which, while
    where the model is served stays out of the name."""
    choices = {**DEFAULTS, "model": "explorer_sampled"}
    swept = swept_factors(["model=explorer_sampled", "model.args.seed=0,1", "inspect.epochs=3"])
    named = {
        run_name(
            "physassist/explorer",
            choices,
            DEFAULTS,
            ["model=explorer_sampled", f"model.args.seed={seed}", "inspect.epochs=3"],
            swept=swept,
        )
        for seed in (0, 1)
    }
    assert named == {
        "model.args.seed=0 | explorer | inspect.epochs=3",
        "model.args.seed=1 | explorer | inspect.epochs=3",
    }
    served = [
        "model.base_url=http://127.0.0.1:8000/v1",
        "model.temperature=0.7",
        "model.args.api_key='***'",
        "+model.args.default_headers={X-Api-Key: '***'}",
    ]
    assert (
        run_name("physassist/explorer", choices, DEFAULTS, served)
        == "explorer | model.temperature=0.7"
    )


def test_sweep_parent_names_the_experiment_and_its_factors() -> None:
    args = [
        "model=oracle,baseline",
        "query=implicit,explicit",
        "judge=rules",
        "hydra/launcher=joblib",
        "terminal.budget=range(2,10,4)",
        "taus=[0.5,0.6]",
    ]
    assert swept_factors(args) == ["model", "query", "terminal.budget"]
    assert sweep_name("paper_explicit", args) == "paper_explicit: model x query x terminal.budget"
    assert sweep_name(None, ["language=en,zh"]) == "sweep: language"


def test_run_experiment_names_from_the_job(tmp_path) -> None:
    cfg = compose(["menu=off", "tracking.run_name=null"])
    job = ev.JobContext(overrides=["menu=off"], choices={**DEFAULTS, "menu": "off"})
    assert config.run_name(config.resolve(cfg), job.choices, job.overrides) == "oracle | menu=off"
    named = compose(["tracking.run_name=mine"])
    assert config.run_name(config.resolve(named), job.choices, job.overrides) == "mine"


def test_report_markdown_escapes_the_separator_of_run_names() -> None:
    import re

    import pandas as pd

    from physassist.report.tables import Table

    md = Table("t", "T", pd.DataFrame({"run": ["oracle | menu=off"], "mRS": [61.25]})).markdown()
    header, _, row = md.splitlines()[2:5]
    assert "oracle \\| menu=off" in row
    unescaped_pipes = re.compile(r"(?<!\\)\|")
    assert len(unescaped_pipes.findall(row)) == len(unescaped_pipes.findall(header))


def test_a_sweep_job_leads_with_its_swept_values() -> None:
    """MLflow's run list shows ~20 characters of a name: four ``explorer | menu=…`` children
    looked alike, so the swept value comes first (a swept model as its bare name)."""
    choices = {**DEFAULTS, "model": "explorer", "menu": "gold"}
    name = run_name(
        "physassist/explorer",
        choices,
        DEFAULTS,
        ["menu=gold", "model=explorer", "terminal.budget=4"],
        swept=["menu"],
    )
    assert name == "menu=gold | explorer | terminal.budget=4"
    both = run_name(
        "physassist/baseline",
        {**DEFAULTS, "model": "baseline", "query": "explicit"},
        DEFAULTS,
        ["model=baseline", "query=explicit"],
        swept=["query", "model"],
    )
    assert both == "query=explicit | baseline"
    cfg = compose(["menu=gold", "model=explorer", "tracking.run_name=null"])
    job = ev.JobContext(overrides=["menu=gold", "model=explorer"], choices=choices)
    assert (
        config.run_name(
            config.resolve(cfg),
            job.choices,
            job.overrides,
            ["menu=on,off,scenario,gold", "model=explorer"],
        )
        == "menu=gold | explorer"
    )


def test_a_sweep_parent_gets_each_jobs_headline_under_its_swept_values() -> None:
    metrics = {
        "mrs": 36.6782407,
        "mrs_ci_low": 31.04,
        "mrs_ci_high": 42.96,
        "pass_turn_0.60": 40.0,
        "pass_turn_0.75": 30.0,
        "unscored_turns": 0.0,
        "mrs.tier.1": 3.0,
        "n_turns": 144.0,
    }
    parent = staging.parent_metrics(
        metrics,
        ["menu=gold", "model=explorer", "inspect.log_dir=x"],
        ["menu=on,off,scenario,gold", "model=explorer"],
    )
    assert list(parent.items()) == [
        ("mrs/menu-gold", 36.7),
        ("mrs_ci_low/menu-gold", 31.0),
        ("mrs_ci_high/menu-gold", 43.0),
    ]


def test_a_finished_run_name_carries_its_headline_and_a_parent_its_jobs() -> None:
    from physassist.tracking.metric_names import parent_description, parent_metrics

    metrics = {"mrs": 49.46, "mrs_ci_low": 45.31, "mrs_ci_high": 54.0}
    assert (
        names.with_headline("menu=gold | explorer", metrics)
        == "menu=gold | explorer | mRS 49.5 [45.3, 54.0]"
    )
    assert (
        names.with_headline("explorer", {"mrs": float("nan")}) == "explorer"
    )  # nothing scored: no number
    assert names.with_headline("oracle", {}) == "oracle"
    parent = {
        **parent_metrics(metrics, "menu-gold"),
        **parent_metrics({"mrs": 0.0, "mrs_ci_low": 0.0, "mrs_ci_high": 0.0}, "menu-off"),
    }
    assert (
        parent_description(parent)
        == "mRS [95% CI] of each job: **menu=gold** 49.5 [45.3, 54.0] · **menu=off** 0.0 [0.0, 0.0]"
    )
    assert parent_description({"jobs_total": 2.0}) == ""
