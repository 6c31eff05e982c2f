"""``ehr=compat`` against the reference implementation's own answers, call by call.

``shared/conformance/`` (docs/data.md) holds read-tool calls answered by the reference's code:
the demo file over the MIMIC-IV demo (``fixtures_store.DEMO_DIR``), the sample file over the
frozen ``sample-cohort``, the notes file over that cohort with its ``note/`` replaced by
``notes-cohort/note/`` (discharge summaries and radiology reports in the MIMIC-IV-Note layout).
Each call is replayed through ``call_tool`` in compat semantics with the call's session date; the
raw result must equal the reference's ``observation`` and ``render(.., "compat")`` its ``shown``.

Run as a script for a report of the mismatches grouped by tool and kind of difference:

    python tests/ehr/test_compat_conformance.py [demo|sample|notes ...] [--show N]
"""

from __future__ import annotations

import collections
import gzip
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_store import DEMO_DIR, shared

from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tools import ToolContext, call_tool, render

CONFORMANCE = shared("conformance")  # docs/data.md
SOURCES = {
    "demo": DEMO_DIR,
    "sample": CONFORMANCE / "sample-cohort",
    "notes": CONFORMANCE / "notes-cohort",  # only note/: assembled over sample-cohort
}


def calls_file(name: str) -> Path:
    return CONFORMANCE / f"reference_calls_{name}.jsonl.gz"


def load_calls(name: str) -> list[dict[str, Any]]:
    with gzip.open(calls_file(name), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def replay(store: EHRStore, call: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The call as a compat session of the call's subject and date would make it."""
    subject = call["arguments"].get("subject_id")
    ctx = ToolContext(
        store=store,
        subject_id=subject if isinstance(subject, int) else 0,
        current_date=call["active_date"],
        semantics="compat",
    )
    raw = call_tool(ctx, call["tool"], call["arguments"])
    return raw, render(raw, "compat")


def first_difference(got: Any, want: Any, path: str = "") -> str:
    """The first JSON path (list indices dropped) where ``got`` and ``want`` differ."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in got:
                return f"{path}.{key} missing"
            if key not in want:
                return f"{path}.{key} extra"
            if canonical(got[key]) != canonical(want[key]):
                return first_difference(got[key], want[key], f"{path}.{key}")
        return f"{path} key order" if list(got) != list(want) else f"{path} ?"
    if isinstance(want, list) and isinstance(got, list):
        for g, w in zip(got, want, strict=False):
            if canonical(g) != canonical(w):
                return first_difference(g, w, f"{path}[]")
        return f"{path} length {len(got)} vs {len(want)}"
    if type(got) is not type(want):
        return f"{path} type {type(got).__name__} vs {type(want).__name__}"
    return f"{path} value"


def shown_difference(got: str, want: str) -> str:
    """Where two rendered texts part: the reference's line, its digits masked."""
    g, w = got.splitlines(), want.splitlines()
    for a, b in zip(g, w, strict=False):
        if a != b:
            return re.sub(r"\d", "9", b[:40])
    return f"line count {len(g)} vs {len(w)}"


def compare(store: EHRStore, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of equal raw results and equal shown texts, and the mismatches by kind."""
    raw_ok = shown_ok = 0
    kinds: collections.Counter[tuple[str, str, str]] = collections.Counter()
    examples: dict[tuple[str, str, str], list[int]] = collections.defaultdict(list)
    for i, call in enumerate(calls):
        raw, shown = replay(store, call)
        raw_equal = canonical(raw) == canonical(call["observation"])
        raw_ok += raw_equal
        shown_ok += shown == call["shown"]
        if not raw_equal:
            key = (call["tool"], "raw", first_difference(raw, call["observation"]))
        elif shown != call["shown"]:
            key = (call["tool"], "shown", shown_difference(shown, call["shown"]))
        else:
            continue
        kinds[key] += 1
        examples[key].append(i)
    return {"n": len(calls), "raw": raw_ok, "shown": shown_ok, "kinds": kinds, "examples": examples}


def notes_cohort(under: Path) -> Path:
    """The notes calls' source, as the conformance README builds it: ``sample-cohort`` with
    its ``note/`` folder replaced by ``notes-cohort/note/`` (made once under ``under``)."""
    root = under / "notes-cohort"
    if not root.is_dir():
        building = under / "notes-cohort.partial"
        shutil.rmtree(building, ignore_errors=True)
        shutil.copytree(SOURCES["sample"], building, ignore=shutil.ignore_patterns("note"))
        shutil.copytree(SOURCES["notes"] / "note", building / "note")
        building.rename(root)
    return root


def open_source(name: str, cache_dir: Path) -> EHRStore:
    source = notes_cohort(cache_dir) if name == "notes" else SOURCES[name]
    return open_store(source, cache_dir=cache_dir)


def require(name: str) -> None:
    needed = [SOURCES[name], *([SOURCES["sample"]] if name == "notes" else [])]
    if not calls_file(name).is_file() or not all(p.is_dir() for p in needed):
        pytest.skip(f"conformance data for {name} not found under {CONFORMANCE.parent}")


@pytest.fixture(scope="module", params=sorted(SOURCES))
def source(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[tuple[str, EHRStore]]:
    from fixtures_store import process_store_cache

    require(request.param)
    store = open_source(request.param, process_store_cache(tmp_path_factory))
    yield request.param, store
    store.close()


def test_every_reference_call_reproduced(source: tuple[str, EHRStore]) -> None:
    name, store = source
    calls = load_calls(name)
    report = compare(store, calls)
    worst = "\n".join(f"  {n} x {k}" for k, n in report["kinds"].most_common(10))
    assert (report["raw"], report["shown"]) == (report["n"], report["n"]), (
        f"{name}: raw {report['raw']}/{report['n']}, shown {report['shown']}/{report['n']}\n{worst}"
    )


def _first_entries(got: Any, want: Any) -> tuple[Any, Any]:
    """The first differing bundle entries (whole results when not both bundles)."""
    if isinstance(got, dict) and isinstance(want, dict) and "entry" in got and "entry" in want:
        for i, (g, w) in enumerate(zip(got["entry"], want["entry"], strict=False)):
            if canonical(g) != canonical(w):
                return {"at": i, **g}, {"at": i, **w}
        return {"total": got.get("total")}, {"total": want.get("total")}
    return got, want


def main(argv: list[str]) -> None:
    show = 0
    if "--show" in argv:
        at = argv.index("--show")
        show = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    with tempfile.TemporaryDirectory() as tmp:
        for name in argv or sorted(SOURCES):
            calls = load_calls(name)
            store = open_source(name, Path(tmp))
            report = compare(store, calls)
            n = report["n"]
            print(f"== {name}: raw {report['raw']}/{n}, shown {report['shown']}/{n}")
            for key, count in report["kinds"].most_common():
                print(f"{count:5d}  {' | '.join(key)}")
                for i in report["examples"][key][:show]:
                    call = calls[i]
                    raw, shown = replay(store, call)
                    print("    args", call["arguments"], "date", call["active_date"])
                    if key[1] == "raw":
                        got, want = _first_entries(raw, call["observation"])
                        print("    got ", canonical(got)[:900])
                        print("    want", canonical(want)[:900])
                    else:
                        print("    got ", repr(shown[:600]))
                        print("    want", repr(call["shown"][:600]))
            store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
