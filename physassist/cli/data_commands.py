"""The subcommands of `physassist-data` (validate and describe session data, build the cohort
and the sessions): their parser and what each runs. A CLI-support module, not an entry point:
`physassist-data` (``physassist.cli.data``) and `python -m physassist.synth` (its ``synth``)
both run ``main``.

    physassist-data validate SOURCE [--language en|zh] [--lenient] [--scenarios ...]
    physassist-data stats SOURCE [--language en|zh] [--json]
    physassist-data synth --out DIR --subjects N [--seed S] [--chunk-size N] [--workers N] [--compresslevel 0-9]
    physassist-data build --store SOURCE --out DIR [--per-slot N] [--seed S] [--timepoint T] [--force] [...]
    physassist-data build-sample [--root data/sample] [--seed S]

`validate` and `stats` never write anything. Exit codes: 0 success; 1 invalid data (the
message lists every problem), an unreadable source or an output directory that must not be
overwritten; 2 bad command-line usage, or an EHR source (``--store``) that is not one or fails
its check (as ``physassist-ehr build`` says).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from physassist.data.models import SessionFormatError
from physassist.ehr.sources import EHRSourceError
from physassist.gc_freeze import command_start
from physassist.vocab import LANGUAGES, SCENARIOS, TIMEPOINTS

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _load(args: argparse.Namespace):
    from physassist.data.loader import load_sessions

    return load_sessions(args.source, language=args.language, lenient=args.lenient,
                         scenarios=args.scenarios)


def cmd_validate(args: argparse.Namespace) -> int:
    sessions = _load(args)
    print(f"OK: {sessions.summary()}")
    print(f"fingerprint: {sessions.fingerprint}")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    from physassist.data.stats import format_stats, session_stats

    sessions = _load(args)
    stats = session_stats(sessions, language=args.language)
    stats["source"] = str(args.source)
    stats["fingerprint"] = sessions.fingerprint
    stats["skipped"] = [list(item) for item in sessions.skipped]
    if args.json:
        print(json.dumps(stats, ensure_ascii=False, indent=2))
    else:
        print(format_stats(stats))
        if sessions.skipped:
            print(f"\nSkipped {len(sessions.skipped)} invalid session(s) (--lenient).")
    return EXIT_OK


def cmd_synth(args: argparse.Namespace) -> int:
    from physassist.synth import generate_cohort

    tuning = {name: getattr(args, name) for name in ("chunk_size", "workers", "compresslevel")
              if getattr(args, name) is not None}  # unset: the generator's own defaults
    print(f"synthetic cohort of {generate_cohort(args.out, args.subjects, seed=args.seed, **tuning)}")
    return EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    from generation.builder import build_sessions

    report = build_sessions(args.store, args.out, sessions_per_slot=args.per_slot,
                            seed=args.seed, scenarios=args.scenarios, tiers=args.tiers,
                            timepoint=args.timepoint, force=args.force)
    print(report)
    return EXIT_OK


def cmd_build_sample(args: argparse.Namespace) -> int:
    from generation.builder import build_sample

    print(build_sample(root=args.root, seed=args.seed))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="physassist-data",
        description="Validate, describe and build PhysAssistBench session data.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def source_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("source", help="a directory of <scenario>.jsonl files, a .jsonl or "
                                      ".parquet file, 'sample', or hf:<dataset id or path>")
        p.add_argument("--language", choices=LANGUAGES, default="en",
                       help="language whose fields must be present (default: en)")
        p.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=None,
                       help="only these scenarios")
        p.add_argument("--lenient", action="store_true",
                       help="skip invalid sessions (and report them) instead of failing")

    p = sub.add_parser("validate", help="check sessions against the schema; writes nothing")
    source_options(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("stats", help="counts by scenario x tier, task type x turn, ...")
    source_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("synth", help="generate a synthetic cohort in MIMIC-IV layout")
    p.add_argument("--out", required=True,
                   help="output directory (hosp/, icu/, note/, phm/, meta/ are replaced)")
    p.add_argument("--subjects", type=int, required=True, help="number of subjects")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk-size", type=int, default=None, help="subjects per vectorised chunk")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes (default: automatic)")
    p.add_argument("--compresslevel", type=int, default=None,
                   help="gzip level 0-9 (default: 6 up to 5k subjects, else 1)")
    p.set_defaults(func=cmd_synth)

    p = sub.add_parser("build", help="build sessions deterministically from an EHR store")
    p.add_argument("--store", required=True,
                   help="EHR source: MIMIC-IV dir, synthetic cohort, .duckdb store or 'sample'")
    p.add_argument("--out", required=True,
                   help="output folder (<scenario>.jsonl and manifest.json), written whole in one rename")
    p.add_argument("--force", action="store_true", help="replace an existing --out folder")
    p.add_argument("--per-slot", type=int, default=3, help="sessions per scenario x tier")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=None)
    p.add_argument("--tiers", nargs="+", type=int, choices=(1, 2, 3), default=None)
    p.add_argument("--timepoint", choices=TIMEPOINTS, default=TIMEPOINTS[0],
                   help="when sessions happen: at the end of the discharge date (default, the "
                        "paper's) or on a morning inside the stay (in-stay)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("build-sample", help="regenerate data/sample (cohort and sessions)")
    p.add_argument("--root", default="data/sample")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_build_sample)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``physassist-data`` (and ``python -m physassist.synth``); returns the exit status."""
    from physassist.cli import entry

    return entry.run("physassist-data", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    command_start()
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "subjects", 1) < 1:
        parser.error("--subjects must be at least 1")
    if getattr(args, "per_slot", 1) < 1:
        parser.error("--per-slot must be at least 1")
    try:
        return args.func(args)
    except SessionFormatError as err:
        print(f"physassist-data: error: invalid session data\n{err}", file=sys.stderr)
        return EXIT_ERROR
    except EHRSourceError as err:  # the same line and code as physassist-ehr build
        print(f"physassist-data: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ValueError) as err:  # a missing source, a non-cohort output dir, no network
        print(f"physassist-data: error: {err}", file=sys.stderr)
        return EXIT_ERROR
