"""``physassist-ehr``: build an EHR store, or answer one tool call against it.

    physassist-ehr build SOURCE [--cache-dir D] [--force]
    physassist-ehr prune [--cache-dir D]
    physassist-ehr call SOURCE --subject N [--hadm H] [--date YYYY-MM-DD]
                        [--semantics strict|compat] [--render full|compat|json] TOOL '{json}'

SOURCE is a MIMIC-IV directory, a per-subject split, a synthetic cohort, a built
``.duckdb`` store, or ``sample``. Errors print one line on stderr and exit with code 2; a
call the store cannot answer (a system fault, e.g. a corrupt block) exits with code 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
import time
from collections.abc import Sequence

from physassist.ehr.sources import EHRSourceError
from physassist.ehr.store import (
    EHRBuildError,
    EHRStore,
    build_store,
    open_store,
    prune_stores,
)
from physassist.ehr.tools import ToolContext, call_tool, render
from physassist.faults import SystemFault
from physassist.gc_freeze import command_start
from physassist.options import DEFAULTS, values


class _UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="physassist-ehr", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build (or reuse) the store of a source")
    build.add_argument(
        "source", help="MIMIC-IV dir, per-subject split, synthetic cohort or 'sample'"
    )
    build.add_argument("--cache-dir", default=None, help="store cache (default $PHYSASSIST_CACHE)")
    build.add_argument("--force", action="store_true", help="rebuild even if cached")

    prune = sub.add_parser("prune", help="remove cached stores whose source is gone or has changed")
    prune.add_argument("--cache-dir", default=None, help="store cache (default $PHYSASSIST_CACHE)")

    call = sub.add_parser("call", help="answer one tool call for one subject")
    call.add_argument("source", help="a source (as for build) or a built .duckdb store")
    call.add_argument("tool", help="dotted tool name, e.g. Observation.search")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    call.add_argument("--subject", type=int, required=True, help="the session's subject_id")
    call.add_argument("--hadm", type=int, default=None, help="the session's hadm_id")
    call.add_argument("--date", default=None, help="session current_date, YYYY-MM-DD")
    call.add_argument("--semantics", choices=values("semantics"), default=DEFAULTS["semantics"])
    call.add_argument("--render", choices=values("render"), default=DEFAULTS["render"])
    call.add_argument("--cache-dir", default=None, help="store cache (default $PHYSASSIST_CACHE)")
    return parser


def _build(args: argparse.Namespace) -> None:
    # the store's lines: a slow build (the full MIMIC-IV) says at once that it is building
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    started = time.perf_counter()
    path = build_store(args.source, cache_dir=args.cache_dir, force=args.force)
    seconds = time.perf_counter() - started
    with EHRStore(path) as store:
        print(f"store:       {store.path}")
        print(f"fingerprint: {store.fingerprint}")
        print(f"source:      {store.source} ({store.layout})")
        print(f"seconds:     {seconds:.1f}")
        counts = store.row_counts()
        width = max(map(len, counts))
        for table, n in counts.items():
            print(f"  {table:<{width}}  {n:>12,}")


def _prune(args: argparse.Namespace) -> None:
    removed, cached = prune_stores(args.cache_dir)
    for store in removed:
        print(f"removed: {store}")
    print(
        f"{len(removed)} of {cached} stores removed, {sum(removed.values()) / 2**20:,.1f} MiB freed"
    )


def _call(args: argparse.Namespace) -> None:
    if args.date is not None:
        try:
            dt.date.fromisoformat(args.date)
        except ValueError:
            raise _UsageError(f"--date must be YYYY-MM-DD, got {args.date!r}") from None
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        raise _UsageError(
            f"tool arguments are not valid JSON ({exc.msg}): {args.arguments!r}"
        ) from None
    if not isinstance(arguments, dict):
        raise _UsageError(f"tool arguments must be a JSON object, got: {args.arguments!r}")
    with open_store(args.source, cache_dir=args.cache_dir) as store:
        ctx = ToolContext(
            store=store,
            subject_id=args.subject,
            hadm_id=args.hadm,
            current_date=args.date,
            semantics=args.semantics,
        )
        result = call_tool(ctx, args.tool, arguments)
        print(render(result, args.render))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``physassist-ehr``; returns the process exit code."""
    from physassist.cli import entry

    return entry.run("physassist-ehr", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    command_start()
    args = _parser().parse_args(argv)
    try:
        {"build": _build, "prune": _prune, "call": _call}[args.command](args)
    except (_UsageError, EHRSourceError, EHRBuildError) as exc:
        print(f"physassist-ehr: error: {exc}", file=sys.stderr)
        return 2
    except SystemFault as exc:  # the store could not answer: not a tool answer, so no output
        print(f"physassist-ehr: system fault: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
