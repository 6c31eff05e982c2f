"""``compat_frames`` against pandas itself: the type inference of ``read_csv`` and the tie
order of ``sort_values`` that compat reproduces without calling pandas per tool call."""

from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd
import pytest

from physassist.ehr.tools.compat_chart import newest_order
from physassist.ehr.tools.compat_frames import block_rows, read_csv, sort_rows
from physassist.ehr.tools.records import text


def pandas_column(texts: list[str | None]) -> list:
    csv = "c,pad\n" + "".join(f"{'' if t is None else t},x\n" for t in texts)
    col = pd.read_csv(io.StringIO(csv))["c"]
    return [None if pd.isna(v) else (v.item() if hasattr(v, "item") else v) for v in col]


@pytest.mark.parametrize(
    "texts",
    [
        ["0388", "4019", "5849"],  # numeric-looking codes lose their zeros
        ["0388", "V1582", "4019"],  # one code with a letter keeps them all
        ["500", None, "25"],  # a missing dose makes the others floats
        ["1-2", "5", "0.5"],
        ["24982426.0", "24982427.0"],  # what the split wrote for a float column
        ["7.40", "7.4", "1e-05"],
        ["NA", "12", "None", "null"],  # pandas' missing-value strings
        [None, None],
        ["2180-05-06 22:23:00", None],
    ],
)
def test_read_csv_types_like_pandas(texts: list[str | None]) -> None:
    got = read_csv(texts, width=2)
    want = pandas_column(texts)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]


def test_block_rows_are_pandas_low_memory_blocks() -> None:
    # pandas' C parser reads 2**20 // width rows, rounded down to a power of two, per block
    assert block_rows(16) == 32768 and block_rows(8) == 65536 and block_rows(21) == 32768


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_sort_rows_ties_like_pandas(seed: int, ascending: bool) -> None:
    rng = random.Random(seed)
    keys = [
        rng.choice(["2180-01-01 08:00:00", "2180-01-02 09:00:00", "2180-01-03", None])
        for _ in range(60)
    ]
    rows = [{"t": k, "i": i} for i, k in enumerate(keys)]
    # the reference's pandas had no pyarrow: its "str" dtype is the python-backed one
    dtype = pd.StringDtype(storage="python", na_value=np.nan)
    frame = pd.DataFrame({"t": pd.array(keys, dtype=dtype), "i": range(len(keys))})
    want = frame.sort_values("t", ascending=ascending)["i"].tolist()
    assert [r["i"] for r in sort_rows(rows, "t", ascending=ascending)] == want


@pytest.mark.parametrize("seed", range(4))
def test_big_chart_sort_of_times_orders_ties_as_the_text_sort(seed: int) -> None:
    """A big chart sorts its kept rows' times as ``datetime64`` (``compat_chart.newest_order``)
    where a small chart sorts their text (``sort_rows``): the same order, ties and missing
    times included, over sizes past numpy's insertion-sort cutoff and with few distinct times."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 3000))
    ticks = rng.integers(0, int(rng.integers(2, 40)), n) * 3_600_000_000  # hours, as microseconds
    times = (np.datetime64("2180-01-01T00:00:00", "us") + ticks).astype("datetime64[us]")
    missing = rng.random(n) < 0.05
    keep = rng.random(n) < 0.9
    rows = [
        {"t": None if missing[i] else text(times[i].item()), "i": i} for i in range(n) if keep[i]
    ]
    want = [r["i"] for r in sort_rows(rows, "t", ascending=False)]
    assert newest_order(times, missing, keep) == want
