"""Inspect AI tasks of PhysAssist."""
