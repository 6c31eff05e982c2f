"""What the grounding check costs per turn, against the rules judge on the same turns.

    python benchmarks/grounding_cost.py                          # the sample, oracle/baseline/explorer/perturbed
    python benchmarks/grounding_cost.py --log logs/x.eval        # any Inspect log of the benchmark task
    python benchmarks/grounding_cost.py --repeats 5

For each log (by default: the sample evaluated offline by each agent, ``tracking=none``), every
repeat runs, over all its sessions in one process, the grounding scorer's work (its turns read
from the store, ``physassist.grounding.session.ground_session``) and the rules judge's
(``scorers.rules_judge.judge_turn`` on the scorer's turn inputs), each timed in CPU seconds
(``time.process_time``: a loaded machine stretches wall time, not this), and prints the median
milliseconds per turn of each, their ratio, the facts per turn and the grounded share. The
first pass (imports, regular expressions compiled) is left out. ``--json`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENTS = ("oracle", "baseline", "explorer", "perturbed")


def _sample_log(work: Path, agent: str) -> Path:
    bin_dir = Path(sys.executable).parent
    out = work / agent
    subprocess.run(
        [
            str(bin_dir / "physassist-eval"),
            "tracking=none",
            f"model={agent}",
            f"inspect.log_dir={out}",
            "inspect.display=none",
            f"hydra.run.dir={work / 'hydra' / agent}",
        ],
        check=True,
        timeout=1800,
        stdout=subprocess.DEVNULL,
    )
    return next(out.glob("*.eval"))


def measure(path: Path, repeats: int) -> dict[str, float]:
    """Median CPU ms per turn of the grounding check and of the rules judge over one log."""
    from inspect_ai.log import read_eval_log

    from physassist.grounding.session import ground_session
    from physassist.turn_records import stored_turns
    from scorers.grounding import session_turns
    from scorers.rules_judge import judge_turn
    from scorers.session_scorer import turn_inputs

    log = read_eval_log(str(path))
    samples = [
        (
            s.input if isinstance(s.input, str) else s.input[0].text,
            s.metadata,
            stored_turns(s.store),
        )
        for s in log.samples or []
    ]
    turns = sum(len(records) for *_, records in samples)

    def grounding() -> tuple[int, int]:
        facts = grounded = 0
        for opening, _, records in samples:
            for g in ground_session(opening, session_turns(records)):
                facts += g.facts
                grounded += g.count("grounded")
        return facts, grounded

    def rules() -> None:
        for _, metadata, records in samples:
            for ti in turn_inputs(metadata, records):
                judge_turn(ti)

    grounding()  # warm: imports, compiled expressions
    rules()
    times: dict[str, list[float]] = {"grounding": [], "rules": []}
    facts = grounded = 0
    for _ in range(repeats):
        started = time.process_time()
        facts, grounded = grounding()
        times["grounding"].append(time.process_time() - started)
        started = time.process_time()
        rules()
        times["rules"].append(time.process_time() - started)
    g_ms = statistics.median(times["grounding"]) / turns * 1000
    r_ms = statistics.median(times["rules"]) / turns * 1000
    return {
        "turns": turns,
        "grounding_ms_per_turn": round(g_ms, 3),
        "rules_ms_per_turn": round(r_ms, 3),
        "ratio": round(g_ms / r_ms, 2),
        "facts_per_turn": round(facts / turns, 2),
        "grounded_pct": round(100 * grounded / facts, 1) if facts else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log",
        type=Path,
        action="append",
        default=None,
        help="an Inspect log (default: run the sample)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs = (
            {p.stem: p for p in args.log}
            if args.log
            else {a: _sample_log(Path(tmp), a) for a in AGENTS}
        )
        results = {name: measure(path, args.repeats) for name, path in logs.items()}
    header = (
        "log",
        "turns",
        "grounding ms/turn",
        "rules ms/turn",
        "ratio",
        "facts/turn",
        "grounded %",
    )
    rows = [header] + [(n, *(str(v) for v in r.values())) for n, r in results.items()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
