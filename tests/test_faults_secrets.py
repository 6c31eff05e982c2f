"""A secret planted in the config (a password in ``model.base_url``, a key in ``model.args``, a
token in a sweep's values) is refused in one line that does not quote it, before anything is
written: no file under the working directory, Hydra's output dirs, Inspect's log dir or the
MLflow store contains it, and nothing printed does."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_tracking import cli

from physassist.cli.secrets import problem

SECRET = "pa55w0rd"


def _written(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ([f"model.base_url=http://user:{SECRET}@127.0.0.1:9/v1"], "model.base_url"),
        ([f"+model.args.api_key={SECRET}"], "model.args.api_key"),
        (["-m", f"model.base_url=http://127.0.0.1:9/v1,http://u:{SECRET}@127.0.0.1:9/v1"], "model.base_url"),
        (["-m", "query=implicit,explicit", f"+judge.token={SECRET}"], "judge.token"),
    ],
)
def test_a_secret_in_the_config_is_refused_before_anything_is_written(tmp_path, args, key) -> None:
    proc = cli(
        [
            "physassist-eval",
            *args,
            "model=openai_compatible",
            "inspect.limit=1",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
            f"hydra.run.dir={tmp_path / 'out'}",
            f"hydra.sweep.dir={tmp_path / 'multirun'}",
        ],
        cwd=tmp_path,
        env={"OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"physassist-eval: error: {key}: a ") and "api_key_env" in line, line
    assert SECRET not in proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []  # no Hydra dir, no log, no store: nothing to leak


def test_what_counts_as_a_secret() -> None:
    assert problem("model.base_url", "http://user:pw@host/v1") and problem("tracking.uri", "https://a:b@mlflow:5000")
    assert "MLFLOW_TRACKING_PASSWORD" in problem("tracking.uri", "https://a:b@mlflow:5000")
    assert problem("model.args.api_key", "sk-1") and problem("judge.args.access_token", "t")
    assert problem("model.args.password", "p") and problem("model.args.client_secret", "s")
    for key, value in (
        ("model.api_key_env", "OPENAI_API_KEY"), ("model.max_tokens", 1024), ("model.args.api_key", None),
        ("model.base_url", "http://127.0.0.1:8000/v1"), ("model.base_url", "http://user@host/v1"),
    ):
        assert problem(key, value) is None, key
