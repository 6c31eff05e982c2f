"""Each option is declared once (physassist/options.py): the YAML, the task signature, the
checks, the MLflow names and the config reference (docs/config.md) all agree with that one table."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest
from fixtures_tracking import CONF, compose

from physassist.cli.config import ConfigError, check_config, resolve, task_args
from physassist.options import (
    BY_KEY,
    BY_PARAM,
    DEFAULTS,
    OPTIONS,
    OptionError,
    check,
    markdown_table,
    values,
)
from physassist.tracking.params import flatten_config

ROOT = Path(__file__).resolve().parents[2]
#: Group files physassist-eval refuses by design (physassist-rescore's judge=human).
RESCORE_ONLY = {"judge": {"human"}}


def test_the_composed_defaults_are_the_declared_defaults() -> None:
    config = resolve(compose())
    for option in OPTIONS:
        node = config
        for part in option.key.split("."):
            node = node[part]
        assert node == option.default, option.key


@pytest.mark.parametrize(
    "option", [o for o in OPTIONS if o.values and o.identity], ids=lambda o: o.key
)
def test_every_choice_of_a_group_is_one_yaml_file_and_nothing_else(option) -> None:
    group, field = option.key.split(".")
    files = {p.stem: p for p in (CONF / group).glob("*.yaml")}
    declared = {str(v) for v in option.values} | RESCORE_ONLY.get(group, set())
    assert set(files) == declared, (
        f"conf/{group}/ holds {sorted(files)}; {option.key} declares {sorted(declared)}"
    )
    for name in files:
        assert resolve(compose([f"{group}={name}"]))[group][field] == name
    for name in RESCORE_ONLY.get(group, ()):
        with pytest.raises(ConfigError, match="physassist-rescore"):
            check_config(resolve(compose([f"{group}={name}"])))


def test_every_yaml_value_of_an_option_is_accepted() -> None:
    composed = {}  # one composition per group file, checked for each option of its group
    for option in OPTIONS:
        group, _, field = option.key.partition(".")
        for path in sorted((CONF / group).glob("*.yaml")) if field else []:
            if path.stem in RESCORE_ONLY.get(group, ()):
                continue
            if path not in composed:
                composed[path] = resolve(
                    compose([f"{group}={path.stem}", *_data(group, path.stem)])
                )
            option.check(composed[path][group][field], option.key)


def _data(group: str, name: str) -> list[str]:
    return (
        ["dataset.source=/", "dataset.ehr_source=/"]
        if group == "dataset" and name != "sample"
        else []
    )


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


def test_the_loop_settings_are_the_table() -> None:
    """``LoopSettings`` restates no option: each field is an option's task parameter, typed with
    its Literal values (closed choices) or its value's type (``kind | None`` for a null default),
    defaulting to its default."""
    import dataclasses

    from solvers.session_loop import LoopSettings

    hints = typing.get_type_hints(LoopSettings)
    for field in dataclasses.fields(LoopSettings):
        option = BY_PARAM.get(field.name)
        assert option is not None, f"LoopSettings.{field.name} is no option's task parameter"
        assert field.default == option.default and not option.many, field.name
        if option.values and type(option.default) is not bool:
            assert typing.get_origin(hints[field.name]) is typing.Literal, field.name
            assert typing.get_args(hints[field.name]) == option.values, field.name
        elif option.default is None:  # a null default: its kind, or null (``patient.seed``)
            assert option.kind is not None and hints[field.name] == option.kind | None, field.name
        else:
            assert hints[field.name] is type(option.default), field.name
    assert LoopSettings(menu=False).menu == "off"  # spelled as the option spells it (-T menu=off)
    with pytest.raises(OptionError, match=r"^terminal='x' is not valid"):
        LoopSettings(terminal="x")  # type: ignore[arg-type]  # the check a bad -T value meets


def test_one_check_one_message_for_config_and_task() -> None:
    with pytest.raises(
        ConfigError, match=r"^terminal.budget=0 is not valid; expected: a positive integer$"
    ):
        check_config(resolve(compose(["terminal.budget=0"])))
    with pytest.raises(
        OptionError, match=r"^tool_budget=0 is not valid; expected: a positive integer$"
    ):
        check("tool_budget", 0)
    with pytest.raises(
        ConfigError, match=r"^taus: 0.0 is not valid; expected: thresholds in \(0, 1\]$"
    ):  # typed float by the schema
        task_args(resolve(compose(["taus=[0,0.6]"])))
    with pytest.raises(OptionError, match=r"^taus: 0 is not valid"):
        check("taus", [0])  # the scorer's check is the same rule
    with pytest.raises(
        ConfigError,
        match=r"^menu.mode='sometimes' is not valid; valid options: on, off, scenario, gold$",
    ):
        task_args(resolve(compose(["menu.mode=sometimes"])))


def test_names_follow_the_one_rule() -> None:
    """An identity option is its group's name as MLflow param and (but for semantics, the EHR
    layer's word) as task parameter; every other option is logged under its config key."""
    for option in OPTIONS:
        group = option.key.split(".")[0]
        assert option.mlflow == (group if option.identity else None), option.key
        if option.identity and option.param is not None:
            assert option.param == group or (option.key, option.param) == (
                "ehr.semantics",
                "semantics",
            ), option.key


def test_mlflow_param_names_come_from_the_table() -> None:
    params = flatten_config(resolve(compose()))
    for option in OPTIONS:
        name = option.mlflow or option.key
        assert name in params, name
    assert params["ehr"] == "strict" and "ehr.semantics" not in params
    assert BY_KEY["ehr.semantics"].mlflow == "ehr"


CONFIG_PAGE = ROOT / "docs" / "config.md"  # the config reference


def test_config_reference_and_help_show_the_tables() -> None:
    from scorers.judges import markdown_table as judges_table

    page = CONFIG_PAGE.read_text(encoding="utf-8")
    assert markdown_table() in page, (
        "docs/config.md options table is stale: paste `python -m physassist.options`"
    )
    assert judges_table() in page, (
        "docs/config.md judges table is stale: paste it from `physassist-eval --help`"
    )
    cfg = compose(hydra=True)
    assert markdown_table() in cfg.hydra.help.footer and judges_table() in cfg.hydra.help.footer


@pytest.mark.parametrize("group", ["model", "judge", "dataset", "tracking", "inspect", "prices"])
def test_config_reference_lists_each_groups_keys(group: str) -> None:
    """The "keys" column is prose, so it is checked, not generated: it names exactly the keys
    of the group's schema (outside parentheses, which hold defaults and notes)."""
    import dataclasses
    import re

    from physassist.cli.schema import group_schema

    page = CONFIG_PAGE.read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith(f"| `{group}` |"))
    keys_column = re.sub(r"\([^()]*\)", "", row.rstrip(" |").rsplit(" | ", 1)[1])
    listed = set(re.findall(r"`([a-z_]+)`", keys_column))
    assert listed == {f.name for f in dataclasses.fields(group_schema(group))}, row


def test_every_declared_judge_is_one_registered_module() -> None:
    from scorers.judges import JUDGES

    assert sorted(JUDGES) == sorted(values("judge")), (
        "a value of options.Judge has no scorers/<x>_judge.py JUDGE (or one too many)"
    )


#: Keys and values the groups' schema (physassist/cli/schema.py, from OPTIONS) refuses while
#: Hydra composes: (overrides, a user's group files, the one line physassist-eval prints).
REFUSED = {
    "typo in a user's group file": (
        ["terminal=mine"],
        {"terminal/mine.yaml": "mode: natural\nbudget: 16\nnudge: true\nnudg: false\n"},
        "terminal.nudg (terminal/mine.yaml): no such key; terminal has mode, budget, nudge; did "
        "you mean terminal.nudge?",
    ),
    "mistyped value in a user's group file": (
        ["terminal=tight"],
        {"terminal/tight.yaml": "mode: natural\nbudget: lots\nnudge: true\n"},
        "terminal.budget (terminal/tight.yaml): Value 'lots' of type 'str' could not be converted "
        "to Integer",
    ),
    "typo on the command line": (
        ["terminal.nudg=false"],
        {},
        "terminal.nudg (command line): no such key; terminal has mode, budget, nudge; did you mean "
        "terminal.nudge?",
    ),
    "typo in a role key": (
        ["judge=llm", "judge.api_key=X"],
        {},
        "judge.api_key (command line): no such key; judge has mode, context, repeats, provider, "
        "base_url, api_key_env, model, models; did you mean judge.api_key_env?",
    ),
    "mistyped value on the command line": (
        ["terminal.budget=many"],
        {},
        "terminal.budget (command line): Value 'many' of type 'str' could not be converted to "
        "Integer",
    ),
    "null for a required option": (
        ["terminal.budget=null"],
        {},
        "terminal.budget (command line): may not be null",
    ),
    "a key added to an open node without +": (
        ["model.args.seed=1"],
        {},
        "model.args.seed (command line): no such key; add a key to model.args with "
        "+model.args.seed=<value>",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_schema_refuses_unknown_keys_and_wrong_types_in_one_line(
    case: str, tmp_path: Path
) -> None:
    from physassist.cli.hydra_errors import one_line

    overrides, files, line = REFUSED[case]
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(Exception) as refused:  # noqa: PT011  (Hydra's composition errors vary)
        compose([*overrides, f"hydra.searchpath=[file://{tmp_path}]"])
    assert one_line(refused.value) == line


@pytest.mark.parametrize(
    ("name", "overrides", "line"),  # the first override makes the shipped config complete
    [
        (
            "rescore",
            ["source=x", "judge.modle=y"],
            "judge.modle (command line): no such key; judge has mode, context, repeats, provider, "
            "base_url, api_key_env, model, models; did you mean judge.mode?",
        ),
        (
            "rescore",
            ["source=x", "sorce=x"],
            "sorce (command line): no such key; rescore has judge, grounding, tracking, inspect, "
            "source, taus; did you mean source?",
        ),
        (
            "generate",
            ["generator.name=x", "inspect.limt=2"],
            "inspect.limt (command line): no such key; inspect has log_dir, max_connections, "
            "max_samples, limit, epochs, fail_on_error, retry_on_error, seed, max_retries, "
            "timeout, attempt_timeout, display, log_level, log_realtime, progress_s; did you mean "
            "inspect.limit?",
        ),
        (
            "generate",
            ["generator.name=x", "seed=abc"],
            "seed (command line): Value 'abc' of type 'str' could not be converted to Integer",
        ),
    ],
)
def test_rescore_and_generate_have_their_schema(name: str, overrides: list[str], line: str) -> None:
    from physassist.cli.hydra_errors import one_line

    assert resolve(compose(overrides[:1], name=name))  # composes as shipped
    with pytest.raises(Exception) as refused:  # noqa: PT011  (Hydra's composition errors vary)
        compose(overrides, name=name)
    assert one_line(refused.value) == line


def test_open_nodes_stay_open_and_a_users_complete_group_file_composes(tmp_path: Path) -> None:
    (tmp_path / "prices").mkdir()
    (tmp_path / "prices" / "mine.yaml").write_text(
        "models:\n  openai/gpt-5.4-mini: {input: 0.25, output: 2.0}\n"
    )
    (tmp_path / "terminal").mkdir()
    (tmp_path / "terminal" / "tight.yaml").write_text("mode: natural\nbudget: 4\nnudge: false\n")
    config = resolve(
        compose(
            [
                "prices=mine",
                "terminal=tight",
                "+model.args.seed=1",
                f"hydra.searchpath=[file://{tmp_path}]",
            ]
        )
    )
    assert config["prices"]["models"] == {"openai/gpt-5.4-mini": {"input": 0.25, "output": 2.0}}
    assert config["terminal"] == {"mode": "natural", "budget": 4, "nudge": False}
    assert config["model"]["args"] == {"dataset": "sample", "seed": 1}
    check_config(config)


def test_an_option_a_users_group_file_leaves_out_is_named(tmp_path: Path) -> None:
    """The schema fills in no option (a default would also hide a ``???``): the file states it."""
    (tmp_path / "terminal").mkdir()
    (tmp_path / "terminal" / "short.yaml").write_text("mode: natural\nbudget: 4\n")
    with pytest.raises(ConfigError, match=r"^terminal.nudge is required but not set"):
        resolve(compose(["terminal=short", f"hydra.searchpath=[file://{tmp_path}]"]))
