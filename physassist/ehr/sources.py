"""Find the CSV files behind each canonical table, whatever the source layout, and fingerprint them.

Three layouts are recognised (auto-detected, in this order):

* ``mimic``: a MIMIC-IV download directory, ``<root>/{hosp,icu,note,ed}/<table>.csv[.gz]``;
* ``synthetic``: the project's synthetic cohort, the same layout plus a ``phm/`` folder
  (ignored here: patient health models are not EHR tables);
* ``split``: the reference implementation's per-subject split,
  ``<root>/<subject_id>/<module>_<table>.csv.csv.gz``, with the ``d_*`` dictionaries found
  under the root or in a ``mimiciv/{hosp,icu}`` folder next to one of its ancestors (the
  reference keeps them in ``raw_data/mimiciv`` beside ``raw_data/MIMIC-IV-split-by-patient``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from physassist.ehr.tables import DICTIONARY_TABLES, TABLES
from physassist.fingerprint import fingerprint

#: Bump when the store's tables, types, sort order or indexes change, or the checks a source
#: passes to be built (``source_check.py``): old stores rebuild (their fingerprint changes).
STORE_SCHEMA_VERSION = 5

Layout = Literal["mimic", "synthetic", "split"]

_SUFFIXES = (".csv.csv.gz", ".csv.gz", ".csv")
_SPLIT_STEMS = {f"{spec.module}_{name}": name for name, spec in TABLES.items()}


class EHRSourceError(ValueError):
    """The given path is not a usable EHR source (message names the path and why)."""


class EHRBuildError(RuntimeError):
    """Loading a source into a store failed (message names the table and file)."""


@dataclass(frozen=True)
class SourceFile:
    """One CSV file feeding a table; ``rel`` is relative to the source root."""

    path: Path
    rel: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class EHRSource:
    """A detected source: its root, layout and the files of every table it provides."""

    root: Path
    layout: Layout
    files: dict[str, tuple[SourceFile, ...]]

    def fingerprint(self) -> str:
        """Hash of layout, relative paths, sizes, mtimes and the store schema version.

        Not a content hash on purpose: full MIMIC-IV is ~10 GB of gzip, and hashing it on
        every open would take minutes, while any edit, copy-over or re-download changes a
        size or an mtime (the same trade-off make and rsync make).
        """
        items = sorted(
            (table, f.rel, f.size, f.mtime_ns) for table, fs in self.files.items() for f in fs
        )
        return fingerprint(
            [json.dumps([STORE_SCHEMA_VERSION, self.layout, items], separators=(",", ":"))]
        )


def sample_cohort_dir() -> Path:
    """The committed sample cohort, located from the package (works from any cwd)."""
    return Path(__file__).resolve().parents[2] / "data" / "sample" / "cohort"


def resolve_source_path(source: str | os.PathLike[str]) -> Path:
    """Turn ``"sample"`` or a path into an existing absolute directory, or raise."""
    path = sample_cohort_dir() if str(source) == "sample" else Path(source).expanduser()
    if not path.exists():
        hint = " (the sample cohort is not generated yet)" if str(source) == "sample" else ""
        raise EHRSourceError(f"EHR source not found: {path}{hint}")
    if not path.is_dir():
        raise EHRSourceError(f"EHR source must be a directory, got a file: {path}")
    return path.resolve()


def detect_source(source: str | os.PathLike[str]) -> EHRSource:
    """Detect the layout of ``source`` and list the files of every table it provides."""
    root = resolve_source_path(source)
    files = _mimic_files(root)
    if files:
        layout: Layout = "synthetic" if (root / "phm").is_dir() else "mimic"
        return EHRSource(root, layout, files)
    files = _split_files(root)
    if files:
        return EHRSource(root, "split", files)
    raise EHRSourceError(
        f"{root} is not an EHR source: expected a MIMIC-IV directory (hosp/ or icu/ holding "
        "tables such as patients.csv.gz), a synthetic cohort (the same plus phm/), or a "
        "per-subject split (<subject_id>/hosp_labevents.csv.csv.gz, ...)"
    )


def _stat(path: Path, root: Path) -> SourceFile:
    st = path.stat()
    return SourceFile(path, os.path.relpath(path, root), st.st_size, st.st_mtime_ns)


def _first_existing(folder: Path, stems: tuple[str, ...]) -> Path | None:
    for stem in stems:
        for suffix in _SUFFIXES:
            candidate = folder / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def _mimic_files(root: Path) -> dict[str, tuple[SourceFile, ...]]:
    found: dict[str, tuple[SourceFile, ...]] = {}
    for name, spec in TABLES.items():
        path = _first_existing(root / spec.module, (name,))
        if path is not None:
            found[name] = (_stat(path, root),)
    return found


def _split_files(root: Path) -> dict[str, tuple[SourceFile, ...]]:
    per_table: dict[str, list[SourceFile]] = {}
    with os.scandir(root) as entries:
        subject_dirs = sorted(
            (e for e in entries if e.is_dir() and e.name.isdigit()), key=lambda e: int(e.name)
        )
    for subject_dir in subject_dirs:
        with os.scandir(subject_dir.path) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                table = _split_table_of(entry.name)
                if table is None or not entry.is_file():
                    continue
                st = entry.stat()
                if st.st_size == 0:
                    continue
                per_table.setdefault(table, []).append(
                    SourceFile(
                        Path(entry.path),
                        f"{subject_dir.name}/{entry.name}",
                        st.st_size,
                        st.st_mtime_ns,
                    )
                )
    if not per_table:
        return {}
    found = {t: tuple(fs) for t, fs in per_table.items() if TABLES[t].per_subject}
    dirs = _dictionary_dirs(root)
    for name in DICTIONARY_TABLES:
        path = _find_dictionary(dirs, name)
        if path is not None:
            found[name] = (_stat(path, root),)
    return found


def _split_table_of(filename: str) -> str | None:
    for suffix in _SUFFIXES:
        if filename.endswith(suffix):
            return _SPLIT_STEMS.get(filename[: -len(suffix)])
    return None


def _dictionary_dirs(root: Path) -> list[Path]:
    """Folders that may hold the ``d_*`` tables next to a per-subject split."""
    dirs = [root]
    for dirpath, dirnames, _ in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        dirnames[:] = sorted(d for d in dirnames if not d.isdigit()) if depth < 3 else []
        dirs.extend(Path(dirpath) / d for d in dirnames)
    for ancestor in list(root.parents)[:3]:
        dirs.append(ancestor / "mimiciv")
    return dirs


def _find_dictionary(dirs: list[Path], name: str) -> Path | None:
    module = TABLES[name].module
    for folder in dirs:
        for sub in (folder, folder / module):
            path = _first_existing(sub, (name, f"{module}_{name}"))
            if path is not None:
                return path
    return None
