"""``physassist-ehr build|call``: output, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_store import write_tiny_source

from physassist.cli.ehr import main


def test_build_prints_path_fingerprint_and_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_tiny_source(tmp_path / "src")
    assert main(["build", str(src), "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    store = next((tmp_path / "cache").glob("*.duckdb"))
    assert f"store:       {store}" in out
    assert f"fingerprint: {store.stem}" in out
    counts = {
        line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("  ")
    }
    assert counts["labevents"] == "3"
    assert counts["patients"] == "2"
    assert counts["chartevents"] == "0"


def test_bad_source_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["build", str(tmp_path / "empty"), "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert str(tmp_path / "empty") in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["Patient.read", "{not json"], "not valid JSON"),
        (["Patient.read", "[1, 2]"], "must be a JSON object"),
        (["--date", "2150/05/01", "Patient.read", "{}"], "--date must be YYYY-MM-DD"),
    ],
)
def test_call_rejects_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    src = write_tiny_source(tmp_path / "src")
    code = main(
        ["call", str(src), "--cache-dir", str(tmp_path / "cache"), "--subject", "1", *extra]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_call_answers_a_tool_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_tiny_source(tmp_path / "src")
    base = ["call", str(src), "--cache-dir", str(tmp_path / "cache"), "--subject", "1"]
    assert main([*base, "--render", "json", "Patient.read", json.dumps({"subject_id": 1})]) == 0
    patient = json.loads(capsys.readouterr().out)
    assert patient["resourceType"] == "Patient"
    assert patient["gender"] == "female"
    assert (
        main(
            [
                *base,
                "--render",
                "json",
                "Observation.search",
                json.dumps({"subject_id": 1, "code": "Creatinine"}),
            ]
        )
        == 0
    )
    bundle = json.loads(capsys.readouterr().out)
    values = sorted(e["resource"]["valueQuantity"]["value"] for e in bundle["entry"])
    assert values == [1.1, 1.4]
