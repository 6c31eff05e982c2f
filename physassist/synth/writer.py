"""Byte-stable `.csv.gz` writing in MIMIC-IV layout: exact column names and order, gzip with
mtime 0 and no embedded file name, minimal quoting, one header line."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pyarrow as pa

from physassist.ehr.tables import TABLES

#: One table as columns, name -> values: a list of Python cells, a numpy array or an Arrow
#: array, whichever the generator builds cheapest (:func:`conform` casts them all).
Columns = dict[str, Any]
#: A chunk's tables by name: :data:`Columns`, an Arrow table, or None (a table with no rows).
Tables = dict[str, Any]

#: DuckDB type in the store's table declarations -> the Arrow type the generator writes.
_ARROW_TYPES: dict[str, pa.DataType] = {
    "BIGINT": pa.int64(),
    "INTEGER": pa.int64(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "TIMESTAMP": pa.timestamp("s"),
    "DATE": pa.date32(),
}

#: The MIMIC-IV tables a synthetic cohort holds (a table the store adds later is not written).
WRITTEN_TABLES = (
    "patients",
    "admissions",
    "transfers",
    "diagnoses_icd",
    "d_icd_diagnoses",
    "labevents",
    "d_labitems",
    "prescriptions",
    "pharmacy",
    "emar",
    "emar_detail",
    "microbiologyevents",
    "omr",
    "icustays",
    "chartevents",
    "inputevents",
    "d_items",
    "discharge",
    "radiology",
)

# table -> (module, [(column, type)]): names, module and column order are the store's own
# declarations (physassist.ehr.tables), so what the generator writes is what the store reads.
SCHEMAS: dict[str, tuple[str, list[tuple[str, pa.DataType]]]] = {
    name: (
        TABLES[name].module,
        [(col, _ARROW_TYPES[typ]) for col, typ in TABLES[name].columns.items()],
    )
    for name in WRITTEN_TABLES
}


def table_path(root: Path, table: str) -> Path:
    module, _ = SCHEMAS[table]
    return root / module / f"{table}.csv.gz"


def schema(table: str) -> pa.Schema:
    return pa.schema(SCHEMAS[table][1])


def empty_table(table: str) -> pa.Table:
    return schema(table).empty_table()


def conform(table: str, data: pa.Table | Columns) -> pa.Table:
    """Cast to the table's schema in MIMIC column order; a missing or extra column is a bug."""
    sch = schema(table)
    if isinstance(data, dict):
        missing = [f.name for f in sch if f.name not in data]
        extra = [k for k in data if k not in sch.names]
        if missing or extra:
            raise ValueError(f"{table}: missing columns {missing}, unexpected columns {extra}")
        arrays = [
            pa.array(data[f.name], f.type)
            if not isinstance(data[f.name], pa.Array | pa.ChunkedArray)
            else data[f.name].cast(f.type)
            for f in sch
        ]
        return pa.Table.from_arrays(arrays, schema=sch)
    if data.column_names != sch.names:
        raise ValueError(f"{table}: columns {data.column_names} != {sch.names}")
    return data.cast(sch)


class CsvGzWriter:
    """One deterministic `.csv.gz` table file: the header line, then CSV bodies appended as the
    workers rendered them (gzip mtime 0 and no embedded name, so equal input gives equal bytes)."""

    def __init__(self, path: Path, table: str, compresslevel: int = 6) -> None:
        header = (",".join(schema(table).names) + "\n").encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._raw = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._gz = gzip.GzipFile(
            filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=compresslevel
        )
        self._gz.write(header)

    def write(self, body: bytes) -> None:
        """Append header-less CSV text (as rendered by ``cohort._csv_bytes``)."""
        self._gz.write(body)

    def close(self) -> None:
        self._gz.close()
        self._raw.close()
