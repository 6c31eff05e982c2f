"""Each option is declared once (physassist/options.py): the YAML, the task signature, the
checks, the MLflow names and the README table all agree with that one table."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest
from fixtures_tracking import CONF, compose

from physassist.cli.config import ConfigError, check_config, resolve, task_args
from physassist.options import BY_KEY, DEFAULTS, OPTIONS, OptionError, check, markdown_table
from physassist.tracking.params import flatten_config

ROOT = Path(__file__).resolve().parents[1]
#: Group files physassist-eval refuses by design (physassist-rescore's judge=human).
RESCORE_ONLY = {"judge": {"human"}}


def test_the_composed_defaults_are_the_declared_defaults() -> None:
    config = resolve(compose())
    for option in OPTIONS:
        node = config
        for part in option.key.split("."):
            node = node[part]
        assert node == option.default, option.key


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.values and o.key.endswith((".mode", ".code"))], ids=lambda o: o.key)
def test_every_choice_of_a_group_is_one_yaml_file_and_nothing_else(option) -> None:
    group, field = option.key.split(".")
    files = {p.stem: p for p in (CONF / group).glob("*.yaml")}
    declared = {str(v) for v in option.values} | RESCORE_ONLY.get(group, set())
    assert set(files) == declared, f"conf/{group}/ holds {sorted(files)}; {option.key} declares {sorted(declared)}"
    for name in files:
        assert resolve(compose([f"{group}={name}"]))[group][field] == name
    for name in RESCORE_ONLY.get(group, ()):
        with pytest.raises(ConfigError, match="physassist-rescore"):
            check_config(resolve(compose([f"{group}={name}"])))


def test_every_yaml_value_of_an_option_is_accepted() -> None:
    for option in OPTIONS:
        group, _, field = option.key.partition(".")
        for path in sorted((CONF / group).glob("*.yaml")) if field else []:
            if path.stem in RESCORE_ONLY.get(group, ()):
                continue
            config = resolve(compose([f"{group}={path.stem}", *_data(group, path.stem)]))
            option.check(config[group][field], option.key)


def _data(group: str, name: str) -> list[str]:
    return ["dataset.source=/", "dataset.ehr_source=/"] if group == "dataset" and name != "sample" else []


def test_the_task_signature_is_the_table() -> None:
    from tasks.physassistbench import physassistbench

    fn = getattr(physassistbench, "__wrapped__", physassistbench)
    params = inspect.signature(fn).parameters
    hints = typing.get_type_hints(fn)
    assert set(params) == set(DEFAULTS)
    for name, option in ((o.param, o) for o in OPTIONS if o.param):
        default = params[name].default
        assert (list(default) if isinstance(default, tuple) else default) == option.default, name
        if option.values and not option.many and name != "nudge":
            assert typing.get_origin(hints[name]) is typing.Literal, name
            assert typing.get_args(hints[name]) == option.values, name


def test_one_check_one_message_for_config_and_task() -> None:
    with pytest.raises(ConfigError, match=r"^terminal.budget=0 is not valid; expected: a positive integer$"):
        check_config(resolve(compose(["terminal.budget=0"])))
    with pytest.raises(OptionError, match=r"^tool_budget=0 is not valid; expected: a positive integer$"):
        check("tool_budget", 0)
    with pytest.raises(ConfigError, match=r"^taus: 0 is not valid; expected: thresholds in \(0, 1\]$"):
        task_args(resolve(compose(["taus=[0,0.6]"])))
    with pytest.raises(OptionError, match=r"^taus: 0 is not valid"):
        check("taus", [0])  # the scorer's check is the same rule
    with pytest.raises(ConfigError, match=r"^menu.mode='sometimes' is not valid; valid options: on, off, scenario, gold$"):
        task_args(resolve(compose(["menu.mode=sometimes"])))


def test_mlflow_param_names_come_from_the_table() -> None:
    params = flatten_config(resolve(compose()))
    for option in OPTIONS:
        name = option.mlflow or option.key
        assert name in params, name
    assert params["ehr"] == "strict" and "ehr.semantics" not in params
    assert BY_KEY["ehr.semantics"].mlflow == "ehr"


def test_readme_and_help_show_the_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, "README options table is stale: paste `python -m physassist.options`"
    cfg = compose(hydra=True)
    assert markdown_table() in cfg.hydra.help.footer
