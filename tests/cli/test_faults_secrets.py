"""Nothing secret is written anywhere.

A header a provider needs (``X-Api-Key`` written on the command line, ``Authorization`` read from
the environment through ``${oc.env:...}``) and the provider's key (the variable ``api_key_env``
names) reach a real OpenAI-compatible server on 127.0.0.1, and appear in no file the run wrote
(Hydra's output dir, a sweep's dir, the Inspect log and the members of its ``.eval`` archive, the
MLflow store: the SQLite database row by row and every artifact), in no MLflow record (params,
tags, traces) and on no line printed; the same for a sweep, a rescoring by an LLM judge and
``physassist-generate``. A password in a URL is still refused before anything is written.
"""

from __future__ import annotations

import sqlite3
import zipfile
from pathlib import Path

import pytest
import zipfile_zstd  # noqa: F401 - Inspect's .eval members are zstd-compressed
from fixtures_http import ScriptedServer, agent_policy, grader_policy
from fixtures_tracking import cli, store_uri

from physassist.agents.oracle import OracleAgent
from physassist.cli.secrets import overrides, problem
from physassist.redaction import MASK, header_name, redact, secret_name

LITERAL = "sk-literal-7f3a9c2e5b1d"  # an X-Api-Key header written on the command line
FROM_ENV = (
    "sk-environment-4d8b1e6f0a"  # an Authorization header read through ${oc.env:PA_TEST_AUTH}
)
PROVIDER_KEY = "sk-provider-key-9e2c7a1b"  # the key api_key_env names
SECRETS = (LITERAL, FROM_ENV, PROVIDER_KEY)
HEADERS = (
    f"+model.args.default_headers={{X-Api-Key: {LITERAL}, Authorization: ${{oc.env:PA_TEST_AUTH}}}}"
)
ENV = {"PA_TEST_AUTH": FROM_ENV, "OPENAI_COMPATIBLE_API_KEY": PROVIDER_KEY}


def found(root: Path, *printed: str, needles: tuple[str, ...] = SECRETS) -> list[str]:
    """Where under ``root`` (files, the members of zip archives, the rows of SQLite databases)
    and in ``printed`` any of ``needles`` occurs."""
    hits = []

    def scan(where: str, data: bytes) -> None:
        hits.extend(f"{where}: {n}" for n in needles if n.encode() in data)

    for i, text in enumerate(printed):
        scan(f"printed[{i}]", text.encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        scan(str(path), data)
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    scan(f"{path}!{name}", archive.read(name))
        if data.startswith(b"SQLite format 3"):
            with sqlite3.connect(path) as db:
                for line in db.iterdump():
                    scan(f"{path} (rows)", line.encode())
    return hits


def mlflow_records(uri: str) -> str:
    """Every run's params and tags and every trace of a store, as text."""
    import mlflow

    client = mlflow.MlflowClient(uri)
    parts = []
    for experiment in client.search_experiments():
        for run in client.search_runs([experiment.experiment_id]):
            parts += [repr(run.data.params), repr(run.data.tags), run.info.run_name or ""]
        for trace in client.search_traces(locations=[experiment.experiment_id], max_results=100):
            parts.append(trace.to_json())
    return "\n".join(parts)


def _eval(tmp_path: Path, server: ScriptedServer, *extra: str, timeout: float = 150):
    return cli(
        [
            "physassist-eval",
            *extra,
            "model=openai_compatible",
            "model.name=oracle",
            f"model.base_url={server.base_url}",
            "inspect.limit=1",
            HEADERS,
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"tracking.uri={store_uri(tmp_path)}",
            f"hydra.run.dir={tmp_path / 'out'}",
            f"hydra.sweep.dir={tmp_path / 'multirun'}",
        ],
        cwd=tmp_path,
        env=ENV,
        timeout=timeout,
    )


def _reached(server: ScriptedServer) -> None:
    """The headers went out with every chat request (the redaction is only in the records)."""
    served = server.served()
    assert served and all(r.headers.get("x-api-key") == LITERAL for r in served), served[:1]
    assert all(r.headers.get("authorization") == FROM_ENV for r in served)


@pytest.mark.slow
def test_a_run_and_its_llm_rescoring_write_no_header_and_no_key(tmp_path) -> None:
    with ScriptedServer({"oracle": agent_policy(OracleAgent()), "grader": grader_policy}) as server:
        proc = _eval(tmp_path, server)
        assert proc.returncode == 0, proc.stderr[-2000:]
        _reached(server)
        [log] = (tmp_path / "logs").glob("*.eval")
        rescore = cli(
            [
                "physassist-rescore",
                f"source={log}",
                "judge=llm",
                "judge.model=grader",
                "judge.provider=openai-api/compatible",
                f"judge.base_url={server.base_url}",
                "judge.api_key_env=PA_TEST_JUDGE_KEY",
                f"inspect.log_dir={tmp_path / 'logs'}",
                f"tracking.uri={store_uri(tmp_path)}",
                f"hydra.run.dir={tmp_path / 'rescore'}",
            ],
            cwd=tmp_path,
            env={**ENV, "PA_TEST_JUDGE_KEY": PROVIDER_KEY + "-judge"},
            timeout=150,
        )
        assert rescore.returncode == 0, rescore.stderr[-2000:]
        assert any(r.model == "grader" for r in server.served())
    printed = (proc.stdout, proc.stderr, rescore.stdout, rescore.stderr)
    assert found(tmp_path, *printed, mlflow_records(store_uri(tmp_path))) == []
    # The records are there, masked: the scan reads what it should.
    masked = found(tmp_path, needles=("X-Api-Key",))
    assert any(".hydra" in h for h in masked) and any(".eval!" in h for h in masked), masked
    assert any(f"'X-Api-Key': '{MASK}'" in h or "(rows)" in h for h in masked)


@pytest.mark.slow
def test_a_sweep_writes_no_header_and_no_key(tmp_path) -> None:
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}) as server:
        proc = _eval(tmp_path, server, "-m", "query=implicit")
        assert proc.returncode == 0, proc.stderr[-2000:]
        _reached(server)
    assert (tmp_path / "multirun" / "multirun.yaml").is_file()
    assert found(tmp_path, proc.stdout, proc.stderr, mlflow_records(store_uri(tmp_path))) == []
    assert (
        "Launching 1 jobs" in proc.stdout + proc.stderr
    )  # Hydra's line quoting the overrides, masked


@pytest.mark.slow
def test_generate_writes_no_header_and_no_key(tmp_path) -> None:
    proc = cli(
        [
            "physassist-generate",
            "generator=scripted",
            "scenarios=[med_safety]",
            "tiers=[1]",
            f"+generator.args.default_headers={{X-Api-Key: {LITERAL}}}",
            "+generator.args.credentials=${oc.env:PA_TEST_AUTH}",
            f"output_dir={tmp_path / 'generated'}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"tracking.uri={store_uri(tmp_path)}",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        env=ENV,
        timeout=80,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert found(tmp_path, proc.stdout, proc.stderr, mlflow_records(store_uri(tmp_path))) == []
    assert found(tmp_path / "generated", needles=("X-Api-Key",))  # the manifest records it, masked


@pytest.mark.parametrize(
    "args",
    [
        ["model.base_url=http://user:pa55w0rd@127.0.0.1:9/v1"],
        ["-m", "model.base_url=http://127.0.0.1:9/v1,http://u:pa55w0rd@127.0.0.1:9/v1"],
    ],
)
def test_a_password_in_a_url_is_refused_before_anything_is_written(tmp_path, args) -> None:
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
    assert (
        line.startswith("physassist-eval: error: model.base_url: a password in a URL")
        and "api_key_env" in line
    ), line
    assert "pa55w0rd" not in proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []  # no Hydra dir, no log, no store: nothing to leak


def test_what_is_masked() -> None:
    for name in (
        "X-Api-Key",
        "api-key",
        "Authorization",
        "credentials",
        "api_key",
        "access_token",
        "accessToken",
        "password",
        "client_secret",
        "Ocp-Apim-Subscription-Key",
        "auth",
    ):
        assert secret_name(name), name
    for name in ("api_key_env", "max_tokens", "base_url", "name", "temperature", "timeout"):
        assert not secret_name(name), name
    assert (
        header_name("default_headers") and header_name("extra_headers") and not header_name("args")
    )
    config = {
        "model": {
            "args": {
                "default_headers": {"X-Trace": "abc", "Authorization": "${oc.env:T}"},
                "organization": "org-1",
                "api_key": "k",
            },
            "api_key_env": "OPENAI_API_KEY",
        }
    }
    assert redact(config) == {
        "model": {
            "args": {
                "default_headers": {"X-Trace": MASK, "Authorization": "${oc.env:T}"},
                "organization": "org-1",
                "api_key": MASK,
            },
            "api_key_env": "OPENAI_API_KEY",
        }
    }
    assert overrides(
        [
            "+model.args.default_headers={X-Api-Key: sk-1, Y: ${oc.env:Z}}",
            "query=explicit",
            "model.args.api_key=abc",
            "+m.args.default_headers={X: a},{X: b}",
        ]
    ) == [
        "+model.args.default_headers={X-Api-Key: '***', Y: ${oc.env:Z}}",
        "query=explicit",
        "model.args.api_key='***'",
        "+m.args.default_headers={X: '***'},{X: '***'}",
    ]
    assert problem("model.base_url", "http://user:pw@host/v1") and problem(
        "tracking.uri", "https://a:b@mlflow:5000"
    )
    assert "MLFLOW_TRACKING_PASSWORD" in problem("tracking.uri", "https://a:b@mlflow:5000")
    assert (
        problem("model.base_url", "http://127.0.0.1:8000/v1") is None
        and problem("model.base_url", "http://u@h/v1") is None
    )
