"""Shared helpers for the synthetic-cohort tests (imported by tests/test_synth_*.py)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from physassist.ehr.sources import sample_cohort_dir
from physassist.synth.writer import SCHEMAS, table_path

SAMPLE = sample_cohort_dir()
SAMPLE_SUBJECTS = 63


def cohort_connection(root: Path) -> duckdb.DuckDBPyConnection:
    """In-memory DuckDB with one table per cohort table (plus meta/subjects.csv as `subjects`)."""
    con = duckdb.connect()
    for name, (_module, cols) in SCHEMAS.items():
        path = table_path(root, name)
        text_cols = ", ".join(f"'{c}': 'VARCHAR'" for c, t in cols if pa.types.is_string(t))
        con.execute(
            f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}', header=true, sample_size=-1, "
            f"types={{{text_cols}}})"
        )
    con.execute(
        f"CREATE TABLE subjects AS SELECT * FROM read_csv('{root / 'meta' / 'subjects.csv'}', "
        "header=true)"
    )
    return con


@pytest.fixture(scope="session")
def sample_con() -> duckdb.DuckDBPyConnection:
    return cohort_connection(SAMPLE)
