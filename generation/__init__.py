"""Session generation, in one package: new PhysAssistBench sessions from an EHR store.

``builder`` is the deterministic template builder (pure Python, no Inspect, no model:
``physassist-data build|build-sample``); ``pipeline`` is the multi-agent LLM pipeline (agents
and their per-slot Inspect solver); ``task`` is the Inspect task (registered as
``physassist/generate``); ``cli`` is ``physassist-generate``. Nothing is imported here, so the
builder never loads Inspect.
"""
