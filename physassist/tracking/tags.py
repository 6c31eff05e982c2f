"""Provenance tags for a run: code version, data fingerprint, package versions, log path.

A number in a table is only as good as what it can be traced back to: these tags say which
commit (and whether the tree had uncommitted changes), which exact session files, which library
versions and which Inspect log produced a run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path

PACKAGES: tuple[str, ...] = (
    "physassist",
    "inspect_ai",
    "hydra-core",
    "omegaconf",
    "mlflow",
    "duckdb",
    "pandas",
    "pandera",
    "datasets",
)


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_tags(repo: Path | None = None) -> dict[str, str]:
    """Commit and dirty flag of the repository holding the code (empty outside a git tree), as
    this process first read them: the code it runs is the code it loaded."""
    return dict(_git_tags(repo or Path(__file__).resolve().parents[2]))


@cache
def _git_tags(repo: Path) -> dict[str, str]:
    commit = _git(["rev-parse", "HEAD"], repo)
    if not commit:
        return {}
    status = _git(["status", "--porcelain", "--untracked-files=no"], repo)
    return {
        "mlflow.source.git.commit": commit,
        "physassist.git_commit": commit,
        "physassist.git_dirty": "true" if status else "false",
    }


def package_versions(packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """``version.<package>`` tags for the libraries that shape results, plus Python (read once
    per process: an installed distribution's metadata is ~10 file reads)."""
    return dict(_package_versions(tuple(packages)))


@cache
def _package_versions(packages: tuple[str, ...]) -> dict[str, str]:
    tags = {"version.python": sys.version.split()[0]}
    for name in packages:
        try:
            tags[f"version.{name}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return tags


INSPECT_LOG_TAG = "physassist.inspect_log"  # the run's Inspect log (a skipped job reports it)


def provenance_tags(
    *,
    dataset: tuple[str, str] | None = None,
    ehr: tuple[str, str] | None = None,
    inspect_log: str | None = None,
    repo: Path | None = None,
) -> dict[str, str]:
    """All provenance tags of one run; ``dataset`` and ``ehr`` are (fingerprint, path), the
    fingerprints ``physassist-data validate`` and ``physassist-ehr build`` print."""
    tags = {**git_tags(repo), **package_versions()}
    for kind, known in (("dataset", dataset), ("ehr", ehr)):
        if known is not None:
            tags[f"physassist.{kind}_fingerprint"], tags[f"physassist.{kind}_path"] = known
    if inspect_log:
        tags[INSPECT_LOG_TAG] = inspect_log
    return tags
