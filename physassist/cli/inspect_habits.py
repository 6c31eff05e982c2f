"""What an Inspect user types, taken as they mean it or answered in one line.

Inspect names a model ``provider/name`` (``--model openai/gpt-4o``); Hydra reads
``model=openai/gpt-4o`` as the option ``gpt-4o`` of a group ``model/openai`` and refuses it. So,
before Hydra composes, ``model=<provider>/<name>`` becomes the provider's preset with that name
(``model=openai model.name=openai/gpt-4o``), and ``model=physassist/explorer`` the offline
agent's own option (``model=explorer``); a provider without a preset is answered with the
line to write. An option Hydra does not have (``--model``, ``-T``) is one line, not argparse's
usage block.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class HabitError(ValueError):
    """An argument that cannot be taken; the message says what to write instead."""


def _one_model(value: str, conf: Path) -> tuple[str, str | None]:
    """(the model group's option, the ``model.name`` to set or None) for an Inspect model string."""
    provider, _, name = value.partition("/")
    if provider == "physassist" and (conf / "model" / f"{name}.yaml").is_file():
        return name, None  # physassist/explorer: the offline agent's own option
    if (conf / "model" / f"{provider}.yaml").is_file():
        return provider, value
    presets = ", ".join(sorted(p.stem for p in (conf / "model").glob("*.yaml")))
    raise HabitError(
        f"model={value}: no preset for provider {provider} (model presets: {presets}); any Inspect "
        f"model string goes in model.name: write model=openai model.name={value} "
        "model.api_key_env=null (the provider then reads its own key variable)"
    )


def model_arguments(arguments: Sequence[str], conf: Path) -> list[str]:
    """``arguments`` with every ``model=<provider>/<name>[,...]`` made the preset and its name
    (see the module docstring); raises ``HabitError`` for what cannot be taken."""
    out: list[str] = []
    for argument in arguments:
        key, sep, value = argument.partition("=")
        if (
            not sep
            or key != "model"
            or "/" not in value
            or (conf / "model" / f"{value}.yaml").is_file()
        ):
            out.append(argument)
            continue
        values = value.split(",")
        if not all("/" in v for v in values):
            raise HabitError(
                f"model={value}: write presets (model=oracle,openai) or one provider's models "
                f"(model=openai model.name=openai/a,openai/b), not both in one list"
            )
        chosen = [_one_model(v, conf) for v in values]
        options = list(dict.fromkeys(option for option, _ in chosen))
        names = [name for _, name in chosen if name is not None]
        if names and (len(options) > 1 or len(names) < len(values)):
            raise HabitError(
                f"model={value}: models of several presets in one list: "
                "sweep model.name within one preset"
            )
        out.append(f"model={','.join(options)}")
        if names:
            out.append(f"model.name={','.join(names)}")
    return out


def unknown_flag(arguments: Sequence[str], program: str) -> str | None:
    """One line for the first option Hydra does not have (``--model openai/gpt-4o``), or None."""
    from hydra._internal.utils import get_args_parser  # noqa: I001 - Hydra's own parser: its flags

    _, unknown = get_args_parser().parse_known_args(list(arguments))
    flags = [a for a in unknown if a.startswith("-")]
    if not flags:
        return None
    flag = flags[0]
    name, _, given = flag.lstrip("-").partition("=")
    after = list(arguments)[list(arguments).index(flag) + 1 :] if flag in arguments else []
    value = given or (
        after[0] if after and "=" not in after[0] and not after[0].startswith("-") else ""
    )
    example = f"{name}={value}" if value else "key=value"
    return (
        f"{flag}: no such option; {program} takes Hydra overrides: write {example} ({program} "
        "--help lists them)"
    )
