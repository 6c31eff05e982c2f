"""Every benchmark option, declared once: config key, task parameter, values, default, meaning.

``OPTIONS`` is the one table. From it come: the mapping of a composed Hydra config to the
task's keyword arguments (``task_args``), the one check of each value with one message
(``check``), the short MLflow param names (``mlflow_names``), the typed task signature (the
``Literal`` aliases below and ``DEFAULTS``) and the options table of docs/config.md and of
``physassist-eval --help`` (``python -m physassist.options``). Names: the config key is the
option's name in YAML, overrides and the docs. ``param`` is its task parameter (``-T``): the
group's name for the option that identifies its group (``menu.mode`` -> ``menu``), except
``ehr.semantics`` -> ``semantics``, the EHR layer's word (``ToolContext.semantics``,
``physassist-ehr --semantics``; ``ehr`` beside ``ehr_source`` would read as the EHR itself);
else the key's last part, with its group where that alone is vague (``ehr_source``,
``patient_miss``, ``judge_context``, ``tool_budget``). MLflow names follow one rule
(``Option.mlflow``): the identity option under its group's name, every other under its key. The YAML group files under
``conf/`` hold the same defaults; ``tests/cli/test_options.py`` composes them against this table.

This module imports nothing but the vocabulary, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from physassist.vocab import LANGUAGES, LITERACY_LEVELS, SCENARIOS, TIERS

# Closed choices. Each value set is a Literal type: the task signature uses it as is and
# ``get_args`` gives the valid values.
Language = Literal[LANGUAGES]  # type: ignore[valid-type]
Query = Literal["implicit", "explicit"]
Menu = Literal["on", "off", "scenario", "gold"]
Observations = Literal["keep", "removed", "history_removed"]
Terminal = Literal["prepare_to_answer", "natural", "submit"]
PatientMode = Literal["replay", "live"]
Literacy = Literal[LITERACY_LEVELS]  # type: ignore[valid-type]
PatientMiss = Literal["unknown", "same_tool"]
Semantics = Literal["compat", "strict"]
Render = Literal["compat", "full", "json"]
Judge = Literal["rules", "llm", "panel"]
JudgeContext = Literal["gold_answer", "evidence"]
GroundingMode = Literal["on", "off"]
History = Literal["free", "gold"]


class ConfigError(ValueError):
    """The composed config cannot run; the message names the key and the problem."""


class OptionError(ConfigError):
    """A value an option does not accept; the message names the option and what it accepts."""


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _threshold(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1


def _temperature(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _seed(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


@dataclass(frozen=True)
class Option:
    """One option: where it lives in the config, what the task calls it, what it accepts."""

    key: str  # dotted config key (``menu.mode``)
    param: str | None  # task parameter (``menu``); None for options Inspect takes directly
    default: Any
    meaning: str
    choices: Any = None  # a Literal alias, or a tuple of allowed values
    rule: Callable[[Any], bool] | None = None  # for open values: is this one acceptable?
    expects: str = ""  # what ``rule`` accepts, for the message
    many: bool = False  # a list of values (None = all)
    identity: bool = False  # what its group selects (the rule of ``mlflow``)
    kind: type | None = (
        None  # the value's type where a null default does not show it (the schema's)
    )

    @property
    def mlflow(self) -> str | None:
        """The short MLflow param of an identity option: its group's name.

        The one naming rule: the option that identifies what its group selects (the sessions,
        the model, the tool semantics, the menu, ...) is logged, swept and compared under the
        group's name, as ``physassist-eval ehr=compat`` chooses it (``ehr.semantics`` -> ``ehr``,
        ``menu.mode`` -> ``menu``); the report's factors and the comparability parts are these
        group names. Every other option is logged under its config key.
        """
        return self.key.split(".")[0] if self.identity else None

    @property
    def values(self) -> tuple[Any, ...]:
        """The accepted values of a closed option (empty for an open one)."""
        if self.choices is None:
            return ()
        return tuple(self.choices) if isinstance(self.choices, tuple) else get_args(self.choices)

    def accepts(self, value: Any) -> bool:
        if self.values:
            return value in self.values
        return self.rule is None or self.rule(value)

    def spelled(self, value: Any) -> Any:
        """``value`` as this option spells it: Inspect reads ``-T`` values as YAML 1.1, where
        ``off`` and ``on`` are booleans, so ``-T menu=off`` arrives as False."""
        if isinstance(value, bool) and {"on", "off"} <= set(self.values):
            return "on" if value else "off"
        return value

    def check(self, value: Any, name: str | None = None) -> Any:
        """``value`` (as this option spells it) if this option accepts it; else an OptionError
        naming ``name`` (default the task parameter) and the accepted values."""
        name = name or self.param or self.key
        value = self.spelled(value)
        items = value if self.many else [value]
        if self.many and value is not None and not isinstance(value, list | tuple):
            raise OptionError(f"{name}={value!r} must be a list")
        if self.many and self.rule is not None and not value and value is not None:
            raise OptionError(f"{name}={value!r} is not valid; expected {self.expects}")
        for item in items or ():
            if not self.accepts(item):
                valid = ", ".join(map(str, self.values)) if self.values else self.expects
                what = "valid options" if self.values else "expected"
                shown = f"{name}: {item!r}" if self.many else f"{name}={item!r}"
                raise OptionError(f"{shown} is not valid; {what}: {valid}")
        return value


OPTIONS: tuple[Option, ...] = (
    Option(
        "dataset.source",
        "dataset",
        "sample",
        "sessions: sample, a released JSONL file/directory, Parquet, or hf:<id>",
        rule=_text,
        expects="a path or hf:<id>",
        identity=True,
    ),
    Option(
        "ehr.source",
        "ehr_source",
        "sample",
        "EHR: sample, a MIMIC-IV / cohort directory, or a built .duckdb store",
        rule=_text,
        expects="a path",
    ),
    Option(
        "ehr.semantics",
        "semantics",
        "strict",
        "tool semantics: strict (leak-free) or compat (the reference code)",
        Semantics,
        identity=True,
    ),
    Option(
        "ehr.render",
        "render",
        "full",
        "what the model sees of a tool result: full text, compat text, raw json",
        Render,
    ),
    Option(
        "language.code",
        "language",
        "en",
        "language of questions, rubrics and prompts",
        Language,
        identity=True,
    ),
    Option(
        "query.mode",
        "query",
        "implicit",
        "physician questions as asked (implicit) or their explicit paraphrases",
        Query,
        identity=True,
    ),
    Option(
        "menu.mode",
        "menu",
        "on",
        "tools offered each turn: all, none, the scenario's, the gold turn's",
        Menu,
        identity=True,
    ),
    Option(
        "observations.mode",
        "observations",
        "keep",
        "tool results kept, replaced by a placeholder, or earlier turns' traffic dropped",
        Observations,
        identity=True,
    ),
    Option(
        "terminal.mode",
        "terminal",
        "prepare_to_answer",
        "how a turn ends (solvers/terminal: one module per strategy)",
        Terminal,
        identity=True,
    ),
    Option(
        "terminal.budget",
        "tool_budget",
        16,
        "tool calls allowed per turn (paper: 16)",
        rule=_positive_int,
        expects="a positive integer",
    ),
    Option(
        "terminal.nudge",
        "nudge",
        True,
        "ask once for a plain-text answer when a turn ends without one",
        (True, False),
    ),
    Option(
        "patient.mode",
        "patient",
        "replay",
        "patient tools answered from the gold trajectory (replay) or by an LLM (live, role "
        "patient)",
        PatientMode,
        identity=True,
    ),
    Option(
        "patient.literacy",
        "literacy",
        "high",
        "replayed patient's health-literacy variant",
        Literacy,
    ),
    Option(
        "patient.miss",
        "patient_miss",
        "unknown",
        "replay of a question the gold has no reply for: a fixed unknown, or the same tool's reply",
        PatientMiss,
    ),
    Option(
        "patient.seed",
        "patient_seed",
        None,
        "live patient's sampling seed (null: the provider's); runs differing only in it measure "
        "the patient's noise",
        rule=_seed,
        expects="null or an integer >= 0",
        kind=int,
    ),
    Option(
        "judge.mode",
        "judge",
        "rules",
        "rubric judge (scorers/: one module per judge; the judges table)",
        Judge,
        identity=True,
    ),
    Option(
        "judge.context",
        "judge_context",
        "gold_answer",
        "what the llm judge verifies against: the gold answer or the EHR evidence",
        JudgeContext,
    ),
    Option(
        "judge.repeats",
        "judge_repeats",
        1,
        "times each turn is judged; a turn's score is their mean, and their spread is the judge's "
        "noise",
        rule=_positive_int,
        expects="a positive integer",
    ),
    Option(
        "grounding.mode",
        "grounding",
        "on",
        "the judge-free grounding check: every fact an answer states matched against what the "
        "assistant received (scorer physassist_grounding)",
        GroundingMode,
        identity=True,
    ),
    Option(
        "history.mode",
        "history",
        "free",
        "what turn t starts from: the model's own turns < t (free, the paper's) or the gold ones, "
        "gold tool calls executed (gold)",
        History,
        identity=True,
    ),
    Option(
        "taus",
        "taus",
        [0.6, 0.75],
        "Pass@Turn / Pass@Session thresholds",
        rule=_threshold,
        expects="thresholds in (0, 1]",
        many=True,
    ),
    Option(
        "scenarios", "scenarios", None, "scenarios to evaluate (null = all)", SCENARIOS, many=True
    ),
    Option(
        "tiers", "tiers", None, "data-richness tiers to evaluate (null = all)", TIERS, many=True
    ),
    Option(
        "model.temperature",
        "temperature",
        0.2,
        "assistant sampling temperature (paper: 0.2)",
        rule=_temperature,
        expects="a number >= 0",
    ),
    Option(
        "model.name",
        None,
        "physassist/oracle",
        "the assistant: any Inspect model string, or a preset (model=openai)",
        rule=_text,
        expects="a model name",
        identity=True,
    ),
)

BY_PARAM: dict[str, Option] = {o.param: o for o in OPTIONS if o.param}
BY_KEY: dict[str, Option] = {o.key: o for o in OPTIONS}
#: Task parameter -> default (the task signature's defaults).
DEFAULTS: dict[str, Any] = {o.param: o.default for o in OPTIONS if o.param}


def values(param: str) -> tuple[Any, ...]:
    """The accepted values of the option whose task parameter is ``param``."""
    return BY_PARAM[param].values


def check(param: str, value: Any) -> Any:
    """The one check of an option, by task parameter; returns ``value``."""
    return BY_PARAM[param].check(value)


def lookup(config: Mapping[str, Any], dotted: str) -> Any:
    """The value at the dotted key of a composed config; a ``ConfigError`` naming it if absent."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ConfigError(f"{dotted} is missing from the config")
        node = node[part]
    return node


def task_args(config: Mapping[str, Any]) -> dict[str, Any]:
    """The task's keyword arguments for a resolved config, each value checked under its
    config key (``menu.mode='x' is not valid; ...``)."""
    args: dict[str, Any] = {}
    for option in OPTIONS:
        value = lookup(config, option.key)
        if option.many and value is not None:
            value = list(value)
        option.check(value, option.key)
        if option.param is not None:
            args[option.param] = value
    return args


def mlflow_names() -> dict[tuple[str, ...], str]:
    """Config path -> short MLflow param name, for the keys that name their group's choice."""
    return {tuple(o.key.split(".")): o.mlflow for o in OPTIONS if o.mlflow}


def _yaml(value: Any) -> str:
    """A value as it is written in YAML / on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def markdown_table() -> str:
    """The options table of docs/config.md and of ``physassist-eval --help``."""
    rows = ["| config key | task parameter | values | default | meaning |", "|---|---|---|---|---|"]
    for o in OPTIONS:
        accepted = ", ".join(map(_yaml, o.values)) if o.values else o.expects
        rows.append(
            f"| `{o.key}` | {f'`{o.param}`' if o.param else '-'} | {accepted} | "
            f"`{_yaml(o.default)}` | {o.meaning} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
