"""The simulated patient behind the ``patient.*`` interview tools, in one package.

``replay`` answers from the session's gold trajectory (``patient=replay``), ``live`` is an LLM
patient (``patient=live``, model role ``patient``), ``phm`` answers deterministically from a
cohort's patient health model (the builder's gold replies), ``responder`` picks a sample's
patient; ``texts`` loads the patient's wording (``prompts/``). Import the module you need:
``phm`` and ``replay`` do not load Inspect.
"""
