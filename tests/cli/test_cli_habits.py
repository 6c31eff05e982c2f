"""What an Inspect user types: ``model=<provider>/<name>`` is taken, ``--model`` is one line."""

from __future__ import annotations

import pytest
from fixtures_tracking import CONF, cli

from physassist.cli.inspect_habits import HabitError, model_arguments, unknown_flag


def test_an_inspect_model_string_becomes_its_preset_and_name() -> None:
    assert model_arguments(["model=openai/gpt-4o", "query=explicit"], CONF) == [
        "model=openai",
        "model.name=openai/gpt-4o",
        "query=explicit",
    ]
    assert model_arguments(["model=physassist/explorer"], CONF) == ["model=explorer"]
    assert model_arguments(["-m", "model=anthropic/a,anthropic/b"], CONF) == [
        "-m",
        "model=anthropic",
        "model.name=anthropic/a,anthropic/b",
    ]
    assert model_arguments(["-m", "model=physassist/oracle,physassist/baseline"], CONF) == [
        "-m",
        "model=oracle,baseline",
    ]
    kept = ["model=oracle", "model.name=openai/x", "+model.args.x=a/b", "dataset.source=/data/x"]
    assert model_arguments(kept, CONF) == kept


def test_what_cannot_be_taken_says_what_to_write() -> None:
    with pytest.raises(
        HabitError,
        match=(
            r"^model=google/gemini-2.5-flash: no preset for provider google .*write model=openai "
            r"model.name=google/gemini-2.5-flash model.api_key_env=null"
        ),
    ):
        model_arguments(["model=google/gemini-2.5-flash"], CONF)
    with pytest.raises(HabitError, match="not both in one list"):
        model_arguments(["model=oracle,openai/gpt-4o"], CONF)
    with pytest.raises(HabitError, match="several presets"):
        model_arguments(["model=openai/a,anthropic/b"], CONF)


def test_an_option_hydra_does_not_have_is_named_with_what_to_write() -> None:
    assert unknown_flag(["--model", "openai/gpt-4o"], "physassist-eval") == (
        "--model: no such option; physassist-eval takes Hydra overrides: write model=openai/gpt-4o "
        "(physassist-eval --help lists them)"
    )
    assert unknown_flag(["-T", "query=explicit"], "physassist-eval").startswith(
        "-T: no such option;"
    )
    for fine in (
        ["-m", "model=a,b"],
        ["--cfg", "job"],
        ["--config-dir", "/x", "terminal=tight"],
        ["-c", "job", "--package", "model"],
    ):
        assert unknown_flag(fine, "physassist-eval") is None, fine


def test_the_command_takes_provider_slash_name_and_answers_model_in_one_line(tmp_path) -> None:
    composed = cli(
        ["physassist-eval", "model=openai/gpt-4o", "--cfg", "job"], cwd=tmp_path, timeout=120
    )
    assert composed.returncode == 0 and "name: openai/gpt-4o" in composed.stdout, composed.stderr[
        -2000:
    ]
    flag = cli(["physassist-eval", "--model", "openai/gpt-4o"], cwd=tmp_path, timeout=120)
    assert flag.returncode == 2 and flag.stdout == ""
    assert flag.stderr.splitlines() == [
        "physassist-eval: error: --model: no such option; physassist-eval takes Hydra overrides: "
        "write model=openai/gpt-4o (physassist-eval --help lists them)"
    ]
