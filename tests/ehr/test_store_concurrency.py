"""One store serves many threads (a cursor each) and several processes at once."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fixtures_store as fx
from fixtures_store import write_tiny_source

from physassist.ehr.store import EHRStore

demo_store = fx.demo_store
store_cache = fx.store_cache

_PER_SUBJECT = (
    "SELECT count(*), coalesce(sum(valuenum), 0), max(CAST(charttime AS VARCHAR)) "
    "FROM labevents WHERE subject_id = ?"
)


def _subjects(store: EHRStore) -> list[int]:
    return [
        s
        for (s,) in store.cursor().execute("SELECT subject_id FROM patients ORDER BY 1").fetchall()
    ]


def test_threads_each_with_a_cursor_agree_with_serial(demo_store: EHRStore) -> None:
    subjects = _subjects(demo_store) * 4
    serial = [demo_store.cursor().execute(_PER_SUBJECT, [s]).fetchone() for s in subjects]

    def one(sid: int) -> tuple:
        cur = demo_store.cursor()
        try:
            return cur.execute(_PER_SUBJECT, [sid]).fetchone()
        finally:
            cur.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(one, subjects))
    assert parallel == serial


def test_threads_share_the_subject_row_cache(demo_store: EHRStore) -> None:
    store = EHRStore(demo_store.path)  # a fresh cache that the threads fill at once
    subjects = _subjects(store)
    columns = ("labevent_id", "valuenum")

    def load(sid: int) -> tuple:
        return store.subject_rows("labevents", sid, columns)

    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(load, subjects * 3))
    serial = [
        tuple(
            store.rows(
                "SELECT labevent_id, valuenum, _row FROM labevents WHERE subject_id = ? "
                "ORDER BY _row",
                [s],
            )
        )
        for s in subjects
    ]
    assert parallel == serial * 3
    store.close()


def test_concurrent_first_calls_load_once(demo_store: EHRStore) -> None:
    """Threads asking at once for what is not loaded yet wait for one load of it: a subject's
    table (also while ``prefetch`` fills it) and a dictionary (the ICD one is 112k rows)."""
    store = EHRStore(demo_store.path)
    sid = _subjects(store)[0]
    loads: list[object] = []
    load, rows = store._load, store.rows
    store._load = lambda key, subject: loads.append(key) or load(key, subject)
    store.rows = lambda sql, params=(): loads.append(sql) or rows(sql, params)
    columns = ("labevent_id", "valuenum")
    store.prefetch(sid, [("labevents", columns)])
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda _: store.subject_rows("labevents", sid, columns), range(16)))
        icd = list(
            pool.map(lambda _: store.dictionary("d_icd_diagnoses", ("icd_code",)), range(16))
        )
    store.close()
    assert len(loads) == 2
    assert all(g is got[0] for g in got) and got[0]
    assert all(d is icd[0] for d in icd) and icd[0]


_CHILD = """
import json, sys
from physassist.ehr.store import open_store
with open_store(sys.argv[1]) as store:
    rows = [store.cursor().execute(sys.argv[2], [s]).fetchone() for s in json.loads(sys.argv[3])]
print(json.dumps(rows))
"""


def test_two_processes_read_the_store_while_this_one_has_it_open(demo_store: EHRStore) -> None:
    subjects = _subjects(demo_store)[:20]
    expected = [list(demo_store.cursor().execute(_PER_SUBJECT, [s]).fetchone()) for s in subjects]
    args = [sys.executable, "-c", _CHILD, str(demo_store.path), _PER_SUBJECT, json.dumps(subjects)]
    children = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert json.loads(out) == json.loads(json.dumps(expected))


_BUILDER = """
import os, sys
from physassist.ehr.store import open_store
with open_store(sys.argv[1], cache_dir=sys.argv[2]) as store:
    print(store.path, os.stat(store.path).st_ino, store.row_counts()["labevents"])
"""


def test_processes_opening_an_unbuilt_source_build_it_once(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    cache = tmp_path / "cache"
    args = [sys.executable, "-c", _BUILDER, str(src), str(cache)]
    children = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        outputs.append(out.strip())
    assert len(set(outputs)) == 1 and outputs[0].endswith(" 3")  # same file, same inode: built once
    assert len(list(cache.glob("*.duckdb"))) == 1
    assert not [p for p in cache.iterdir() if ".building" in p.name]
