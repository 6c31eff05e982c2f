"""The multi-agent LLM pipeline: one agent per module (planner, questions, answer, gates,
patient, rubric, translate; prompts in ``prompts/``) and their per-slot solver (``solver``),
used by the generation task (``generation.task``)."""
