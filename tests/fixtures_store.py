"""Shared EHR-store fixtures. Bind the ones you need in a test module (keeps ruff quiet):

    import fixtures_store as fx
    demo_store = fx.demo_store
    store_cache = fx.store_cache  # every store fixture depends on it

``demo_store`` builds the MIMIC-IV demo (``DEMO_DIR``) once per test process (per xdist worker)
into a session temp cache, and skips with the reason when the demo is absent.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tables import TABLES


def shared(name: str) -> Path:
    """``shared/<name>`` in the nearest folder above the checkout that has one (a clone next to
    it, or a worktree further down; docs/data.md), else beside the checkout."""
    here = Path(__file__).resolve().parents[1]
    for parent in here.parents:
        if (parent / "shared" / name).is_dir():
            return parent / "shared" / name
    return here.parent / "shared" / name


def _demo_dir() -> Path:
    """The open MIMIC-IV Clinical Database Demo (docs/data.md): ``$PHYSASSIST_MIMIC_DEMO``, else
    ``shared/mimic-iv-demo`` above the checkout."""
    if os.environ.get("PHYSASSIST_MIMIC_DEMO"):
        return Path(os.environ["PHYSASSIST_MIMIC_DEMO"]).expanduser()
    return shared("mimic-iv-demo")


DEMO_DIR = _demo_dir()

#: A small subject of the demo with labs, prescriptions, eMAR and microbiology.
DEMO_SUBJECT = 10000032


def require_demo() -> Path:
    if not (DEMO_DIR / "hosp").is_dir():
        pytest.skip(f"MIMIC-IV demo not found at {DEMO_DIR}")
    return DEMO_DIR


def demo_file(table: str) -> Path | None:
    """The demo's CSV for a canonical table, or None if the demo lacks it."""
    path = DEMO_DIR / TABLES[table].module / f"{table}.csv.gz"
    return path if path.is_file() else None


def read_demo(table: str) -> pd.DataFrame:
    """A demo table as text, exactly as in the file (test oracle, independent of DuckDB)."""
    path = demo_file(table)
    assert path is not None, table
    return pd.read_csv(path, dtype=str, keep_default_na=False)


_CACHE_DIR: list[Path] = []


@pytest.fixture(scope="session")
def store_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store cache per test process. Each module binds this fixture under its own name, which
    pytest treats as a separate session fixture, so the directory is kept here: a later module then
    reopens the demo/sample store by fingerprint (milliseconds) instead of rebuilding it (~3 s)."""
    return process_store_cache(tmp_path_factory)


def process_store_cache(factory: pytest.TempPathFactory) -> Path:
    """The store cache directory of this test process (made on first use)."""
    if not _CACHE_DIR:
        _CACHE_DIR.append(factory.mktemp("stores"))
    return _CACHE_DIR[0]


@pytest.fixture(scope="session")
def demo_store(store_cache: Path) -> Iterator[EHRStore]:
    require_demo()
    store = open_store(DEMO_DIR, cache_dir=store_cache)
    yield store
    store.close()


# ------------------------------------------------------------------ a tiny hand-written source

TINY_PATIENTS = (
    "subject_id,gender,anchor_age,anchor_year,anchor_year_group,dod\n1,F,70,2150,2011 - 2013,\n"
    "2,M,55,2160,2014 - 2016,2165-03-01\n"
)
TINY_LABITEMS = (
    "itemid,label,fluid,category\n50912,Creatinine,Blood,Chemistry\n"
    "50971,Potassium,Blood,Chemistry\n"
)
TINY_LABEVENTS = (
    "labevent_id,subject_id,hadm_id,specimen_id,itemid,order_provider_id,charttime,storetime,"
    "value,valuenum,valueuom,ref_range_lower,ref_range_upper,flag,priority,comments\n"
    "3,2,200,30,50971,,2160-01-02 08:00:00,,5.9,5.9,mEq/L,3.3,5.1,abnormal,STAT,\n"
    "1,1,100,10,50912,,2150-05-02 06:00:00,,1.4,1.4,mg/dL,0.4,1.1,abnormal,ROUTINE,\n"
    "2,1,100,11,50912,,2150-05-01 06:00:00,,1.1,1.1,mg/dL,0.4,1.1,,ROUTINE,\n"
)


def write_tiny_source(root: Path) -> Path:
    """A three-table MIMIC-IV-layout source (mixed .csv and .csv.gz), built in milliseconds."""
    hosp = root / "hosp"
    hosp.mkdir(parents=True, exist_ok=True)
    (hosp / "patients.csv").write_text(TINY_PATIENTS)
    (hosp / "d_labitems.csv").write_text(TINY_LABITEMS)
    with gzip.open(hosp / "labevents.csv.gz", "wt") as f:
        f.write(TINY_LABEVENTS)
    return root
