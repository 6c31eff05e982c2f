"""``pip install -e .`` builds the project's metadata without a deprecation warning: the license
is an SPDX expression with its file (PEP 639), not the TOML table setuptools deprecated (it printed
a 20-line warning box, three times, in the README's first command)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_install_declares_the_license_by_spdx_expression_without_a_deprecation_warning(
    tmp_path,
) -> None:
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # what the metadata reads; no package
        shutil.copy(ROOT / name, tmp_path / name)  # sources, so nothing is written in the repo
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--ignore-installed",
            "--report",
            str(report),
            "-e",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    assert "Deprecat" not in output and "`project.license`" not in output, output[-3000:]
    metadata = json.loads(report.read_text())["install"][0]["metadata"]
    assert metadata["license_expression"] == "Apache-2.0"
    assert metadata["license_file"] == ["LICENSE"]
