"""Provenance tags for a run: code version, data fingerprint, package versions, log path.

A number in a table is only as good as what it can be traced back to: these tags say which
commit (and whether the tree had uncommitted changes), which exact session files, which library
versions and which Inspect log produced a run.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterable
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

_SESSION_SUFFIXES = (".jsonl", ".json", ".parquet", ".gz")


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_tags(repo: Path | None = None) -> dict[str, str]:
    """Commit and dirty flag of the repository holding the code (empty outside a git tree)."""
    repo = repo or Path(__file__).resolve().parents[2]
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
    """``version.<package>`` tags for the libraries that shape results, plus Python."""
    tags = {"version.python": sys.version.split()[0]}
    for name in packages:
        try:
            tags[f"version.{name}"] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return tags


def fingerprint_path(path: Path, *, content: bool = True) -> str:
    """A short sha256 over a file or a directory tree (relative names + bytes, sorted).

    ``content=False`` hashes names and sizes only: cheap enough for a full MIMIC-IV download.
    """
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        rel = file.name if file == path else file.relative_to(path).as_posix()
        h.update(rel.encode())
        if content:
            with open(file, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    h.update(chunk)
        else:
            h.update(str(file.stat().st_size).encode())
    return h.hexdigest()[:16]


def session_files(path: Path) -> list[Path]:
    """The session files of a dataset directory (or the file itself)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(_SESSION_SUFFIXES))


def dataset_fingerprint(path: Path) -> str:
    """Content hash of the session files a run read."""
    h = hashlib.sha256()
    for file in session_files(path):
        h.update(file.name.encode())
        h.update(fingerprint_path(file).encode())
    return h.hexdigest()[:16]


def provenance_tags(
    *,
    dataset_path: Path | None,
    ehr_path: Path | None,
    inspect_log: str | None,
    repo: Path | None = None,
) -> dict[str, str]:
    """All provenance tags of one run."""
    tags = {**git_tags(repo), **package_versions()}
    if dataset_path is not None and dataset_path.exists():
        tags["physassist.dataset_fingerprint"] = dataset_fingerprint(dataset_path)
        tags["physassist.dataset_path"] = str(dataset_path)
    if ehr_path is not None and ehr_path.exists():
        tags["physassist.ehr_fingerprint"] = fingerprint_path(ehr_path, content=False)
        tags["physassist.ehr_path"] = str(ehr_path)
    if inspect_log:
        tags["physassist.inspect_log"] = inspect_log
    return tags
