"""Inspect solvers: the PhysAssistBench assistant loop (``session_loop``), its terminal
strategies, tool menu and the simulated patient (``patient``).

Nothing is imported here, so that ``solvers.patient.phm`` (used by the pure session builder)
does not load Inspect; import from the module that owns a name.
"""
