"""Sessions: the released PhysAssistBench JSONL as typed models, validated turn tables, I/O.

The public API (ARCHITECTURE.md §4) is re-exported here. Building sessions is not data's
concern: the template builder and the LLM pipeline are in the top-level `generation` package.
"""

from physassist.data.checks import (
    Check,
    ConceptCheck,
    ForbiddenCheck,
    ValueCheck,
    WriteArgCheck,
    WriteCallCheck,
    parse_check,
)
from physassist.data.loader import SessionSet, fingerprint, load_sessions, save_sessions
from physassist.data.models import SEPARATOR, GoldAction, Problem, Session, SessionFormatError
from physassist.data.schema import TurnTable, validate_turns
from physassist.data.stats import format_stats, session_stats
from physassist.data.turns import turns_frame

__all__ = [
    "SEPARATOR",
    "Check", "ConceptCheck", "ForbiddenCheck", "GoldAction", "Problem", "Session",
    "SessionFormatError", "SessionSet", "TurnTable", "ValueCheck", "WriteArgCheck",
    "WriteCallCheck", "fingerprint", "format_stats", "load_sessions", "parse_check",
    "save_sessions", "session_stats", "turns_frame", "validate_turns",
]
