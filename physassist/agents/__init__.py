"""Offline assistants as Inspect model providers: ``physassist/oracle``, ``physassist/baseline``.

They let the default experiment run with no API key and give the judges a sanity ordering
(oracle >> baseline >> empty answers). Importing the modules registers the providers; the
package's ``inspect_ai`` entry point (``physassist._registry``) does that.
"""
