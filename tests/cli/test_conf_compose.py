"""Every option of every config group composes and maps to valid task arguments."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from fixtures_tracking import CONF, compose
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import DictConfig, OmegaConf

from physassist.cli.config import (
    LEAST,
    ConfigError,
    check_config,
    eval_options,
    model_specs,
    resolve,
    task_args,
)
from physassist.cli.schema import EVAL_GROUPS
from physassist.options import BY_KEY


def eval_groups() -> tuple[str, ...]:
    """The groups ``conf/eval.yaml`` composes: its defaults list, read from the file."""
    defaults = OmegaConf.load(CONF / "eval.yaml")["defaults"]
    return tuple(
        str(key)
        for entry in defaults
        if isinstance(entry, DictConfig)
        for key, value in entry.items()
        if value is not None and not str(key).startswith("override ")
    )


GROUPS = eval_groups()
EXPERIMENTS = (
    "paper_main",
    "paper_explicit",
    "paper_patient",
    "ablation_menu",
    "ablation_observations",
    "ablation_terminal",
    "ablation_history",
    "compat_vs_strict",
    "validity_floors",
)
KEYS = {
    "OPENAI_API_KEY": "sk-test",
    "ANTHROPIC_API_KEY": "sk-test",
    "OPENAI_COMPATIBLE_API_KEY": "EMPTY",
}


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def task_parameters() -> set[str]:
    from tasks.physassistbench import physassistbench

    return set(inspect.signature(physassistbench).parameters)


def data_overrides(group: str, tmp_path: Path) -> list[str]:
    """Mandatory values of the data options point at an existing (empty) directory."""
    if group == "dataset":
        return [f"dataset.source={tmp_path}", f"dataset.ehr_source={tmp_path}"]
    return []


def test_the_schema_types_every_group_eval_composes() -> None:
    assert GROUPS == EVAL_GROUPS


def test_every_group_has_its_documented_options() -> None:
    assert set(options("menu")) == {"on", "off", "scenario", "gold"}
    assert set(options("observations")) == {"keep", "removed", "history_removed"}
    assert set(options("terminal")) == {"prepare_to_answer", "natural", "submit"}
    assert {"oracle", "baseline", "openai", "anthropic", "openai_compatible", "mockllm"} <= set(
        options("model")
    )
    assert set(options("dataset")) == {"sample", "physassistbench", "hf"}
    assert set(options("experiment")) == set(EXPERIMENTS)


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_maps_to_valid_task_arguments(group: str, tmp_path: Path, monkeypatch) -> None:
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    params = task_parameters()
    for option in options(group):
        if (group, option) == ("judge", "human"):  # judges stored runs: physassist-rescore only
            with pytest.raises(ConfigError, match="physassist-rescore"):
                check_config(resolve(compose(["judge=human"])))
            continue
        source = f"hf:{tmp_path}" if option == "hf" else str(tmp_path)
        extra = (
            [f"dataset.source={source}", f"dataset.ehr_source={tmp_path}"]
            if group == "dataset" and option != "sample"
            else []
        )
        config = resolve(compose([f"{group}={option}", *extra]))
        check_config(config)
        args = task_args(config)
        assert set(args) <= params, f"{group}={option}: unknown task args {set(args) - params}"
        inspect.signature(__import__("tasks.physassistbench", fromlist=["x"]).physassistbench).bind(
            **args
        )
        for key, option in BY_KEY.items():
            if option.values and "." in key:
                group_name, field = key.split(".")
                assert config[group_name][field] in option.values
        assert (
            args["tool_budget"] == 16 and args["temperature"] == 0.2 and args["taus"] == [0.6, 0.75]
        )
        model, roles = model_specs(config)
        assert model.name
        if group == "judge" and option == "llm":
            assert roles["grader"].name == "openai/gpt-5.4-mini"
        if group == "patient" and option == "live":
            assert "patient" in roles
        eval_options(config)


def test_default_is_the_offline_experiment() -> None:
    config = resolve(compose())
    args = task_args(config)
    assert config["model"]["name"] == "physassist/oracle"
    assert args["dataset"] == "sample" and args["ehr_source"] == "sample"
    assert args["judge"] == "rules" and args["menu"] == "on" and args["query"] == "implicit"
    assert (
        config["tracking"]["uri"] == "sqlite:///mlruns/mlflow.db" and config["tracking"]["enabled"]
    )
    check_config(config)  # no API key needed


def test_realtime_event_log_is_off_unless_asked() -> None:
    """Inspect's realtime event log costs ~20 ms of CPU per turn (benchmarks/README.md)."""
    assert eval_options(resolve(compose()))["log_realtime"] is False
    assert eval_options(resolve(compose(["inspect.log_realtime=true"])))["log_realtime"] is True


def test_sessions_in_flight_outnumber_the_connections_by_default() -> None:
    """More sessions than connections keep the connections busy (a session holds one only during
    a call), and the sample's 36 sessions run in one wave (benchmarks/README.md, issue 25)."""
    options = eval_options(resolve(compose()))
    assert "max_connections" not in options  # Inspect's (adaptive: 20 to start)
    assert options["max_samples"] >= 36
    assert eval_options(resolve(compose(["inspect.max_samples=4"])))["max_samples"] == 4


def test_live_metrics_are_computed_only_for_a_display() -> None:
    """Inspect recomputes the metrics about once a second for its live display; without one
    (the default) nothing would show them."""
    assert eval_options(resolve(compose()))["score_display"] is False
    assert "score_display" not in eval_options(resolve(compose(["inspect.display=full"])))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_named_experiment_composes_and_sweeps_valid_values(experiment: str, monkeypatch) -> None:
    """Each experiment composes, and each value of its sweep composes to valid task args."""
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    cfg = compose([f"experiment={experiment}"], hydra=True)
    sweep = dict(cfg.hydra.sweeper.params)
    assert sweep, f"{experiment} defines no sweep"
    params = task_parameters()
    for key, values in sweep.items():
        for value in str(values).split(","):
            config = resolve(compose([f"experiment={experiment}", f"{key}={value}"]))
            check_config(config)
            assert set(task_args(config)) <= params
    base = resolve(cfg)
    if experiment.startswith("paper_"):
        assert base["judge"]["mode"] == "llm" and base["judge"]["model"] == "openai/gpt-5.4-mini"
        assert base["ehr"]["semantics"] == "compat"
        assert base["terminal"]["budget"] == 16 and base["model"]["temperature"] == 0.2
        assert base["menu"]["mode"] == "on"


def test_paper_explicit_sweeps_query_only() -> None:
    cfg = compose(["experiment=paper_explicit"], hydra=True)
    assert dict(cfg.hydra.sweeper.params) == {"query": "implicit,explicit"}


@pytest.mark.parametrize(
    ("launcher", "target"),
    [
        ("joblib", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"),
        ("ray", "hydra_plugins.physassist_ray_launcher.ray_launcher.RayLauncher"),
        ("submitit_slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
        ("basic", "hydra._internal.core_plugins.basic_launcher.BasicLauncher"),
    ],
)
def test_launchers_compose(launcher: str, target: str) -> None:
    cfg = compose([f"hydra/launcher={launcher}"], hydra=True)
    assert cfg.hydra.launcher._target_ == target
    if launcher == "submitit_slurm":
        assert (
            cfg.hydra.launcher.timeout_min > 0 and "submitit" in cfg.hydra.launcher.submitit_folder
        )
    if launcher == "ray":
        assert "init" in cfg.hydra.launcher and cfg.hydra.launcher.num_cpus == 1


def test_sweep_callback_is_configured() -> None:
    cfg = compose(hydra=True)
    assert cfg.hydra.callbacks.mlflow_sweep._target_ == "physassist.cli.sweep.SweepCallback"


def test_unknown_option_and_group_fail_in_hydra() -> None:
    with pytest.raises(MissingConfigException, match="menu/foo"):
        compose(["menu=foo"])
    with pytest.raises(ConfigCompositionException):
        compose(["modle=oracle"])


def test_mandatory_data_paths_are_named(tmp_path: Path) -> None:
    from physassist.cli.config import ConfigError

    with pytest.raises(ConfigError, match="dataset.source"):
        resolve(compose(["dataset=physassistbench"]))
    config = resolve(
        compose(
            [
                "dataset=physassistbench",
                f"dataset.source={tmp_path / 'nope'}",
                f"dataset.ehr_source={tmp_path}",
            ]
        )
    )
    with pytest.raises(ConfigError, match="nope"):
        check_config(config)


def test_bad_values_are_named(monkeypatch) -> None:
    from physassist.cli.config import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        check_config(resolve(compose(["model=openai"])))
    with pytest.raises(ConfigError, match="terminal.mode"):
        check_config(resolve(compose(["terminal.mode=finish"])))
    with pytest.raises(ConfigError, match="taus"):
        check_config(resolve(compose(["taus=[0.6,1.5]"])))
    with pytest.raises(ConfigError, match="scenarios"):
        check_config(resolve(compose(["scenarios=[med_safty]"])))
    # every judge node has model and models (one schema): the key its judge does not read is refused
    with pytest.raises(
        ConfigError,
        match=r"^judge.models=\['a', 'b'\] is not read by judge=llm; it grades with judge.model$",
    ):
        check_config(resolve(compose(["judge=llm", "judge.models=[a,b]"])))
    with pytest.raises(ConfigError, match=r"^judge.model='a' is not read by judge=panel"):
        check_config(resolve(compose(["judge=panel", "judge.model=a"])))


def test_a_key_a_users_file_marks_required_must_be_given(tmp_path: Path) -> None:
    """``base_url: ???`` in the user's model file: OmegaConf alone would keep the schema's null."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.yaml").write_text(
        "name: openai/x\nbase_url: ???\ntemperature: 0.2\n"
    )
    user = [f"hydra.searchpath=[file://{tmp_path}]", "model=mine"]
    with pytest.raises(
        ConfigError,
        match=r"^model\.base_url \(model/mine\.yaml\) is required but not set: add "
        r"`model\.base_url=<value>`",
    ):
        resolve(compose(user, hydra=True))
    given = resolve(compose([*user, "model.base_url=http://127.0.0.1:9/v1"], hydra=True))
    assert given["model"]["base_url"] == "http://127.0.0.1:9/v1"
    assert resolve(
        compose(["model=oracle", f"hydra.searchpath=[file://{tmp_path}]"], hydra=True)
    )  # not chosen


@pytest.mark.parametrize("key", sorted(LEAST))
def test_integer_keys_below_their_least_are_refused_before_inspect(key: str) -> None:
    """Inspect would crash mid-run on them, or wait forever (``inspect.max_samples=0``)."""
    least = LEAST[key]
    kind = "a positive integer" if least else "an integer >= 0"

    def check(
        value: int,
    ) -> object:  # physassist-generate's key in its composition, the others in the eval's
        if key.startswith("generator."):
            from generation.cli import generation_of

            return generation_of(
                resolve(compose(["generator=scripted", f"{key}={value}"], name="generate"))
            )
        return check_config(resolve(compose([f"{key}={value}"])))

    with pytest.raises(
        ConfigError, match=rf"^{re.escape(key)}={least - 1} must be {kind} \(or null\)$"
    ):
        check(least - 1)
    assert check(least)


@pytest.mark.parametrize(
    ("key", "good"), [("inspect.display", "plain"), ("inspect.log_level", "WARNING")]
)
def test_inspect_display_and_log_level_are_inspects_own_choices(key: str, good: str) -> None:
    with pytest.raises(
        ConfigError,
        match=rf"^{re.escape(key)}='foo' is not valid; expected one of: .*{good.lower()}",
    ):
        check_config(resolve(compose([f"{key}=foo"])))
    assert check_config(resolve(compose([f"{key}={good}"])))


def test_temperature_below_zero_is_refused() -> None:
    with pytest.raises(ConfigError, match="model.temperature.*a number >= 0"):
        check_config(resolve(compose(["model.temperature=-1"])))
