"""Sessions: the released PhysAssistBench JSONL as typed models, validated turn tables, I/O.

The public API (ARCHITECTURE.md §4) is re-exported here, loaded on first use (PEP 562): the
session models need only pydantic, while the loader and the turn tables bring pandas and
pandera, which a command that only reads a session (``physassist-eval --help``, a config
check) must not pay for. Building sessions is not data's concern: the template builder and the
LLM pipeline are in the top-level `generation` package.
"""

from __future__ import annotations

from physassist.lazy import exports

_HOME = {
    **dict.fromkeys(
        [
            "Check",
            "ConceptCheck",
            "ForbiddenCheck",
            "ValueCheck",
            "WriteArgCheck",
            "WriteCallCheck",
            "parse_check",
        ],
        "physassist.data.checks",
    ),
    **dict.fromkeys(
        ["SessionSet", "fingerprint", "load_sessions", "save_sessions"], "physassist.data.loader"
    ),
    **dict.fromkeys(
        ["SEPARATOR", "GoldAction", "Problem", "Session", "SessionFormatError"],
        "physassist.data.models",
    ),
    **dict.fromkeys(["TurnTable", "validate_turns"], "physassist.data.schema"),
    **dict.fromkeys(["format_stats", "session_stats"], "physassist.data.stats"),
    "turns_frame": "physassist.data.turns",
}
__all__ = sorted(_HOME)

__getattr__ = exports(__name__, _HOME)
