"""Inspect solvers: the PhysAssistBench assistant loop, terminal strategies, patient simulator."""

from .session_loop import ERRORS_KEY, TURNS_KEY, LoopSettings, physassist_session

__all__ = ["ERRORS_KEY", "TURNS_KEY", "LoopSettings", "physassist_session"]
