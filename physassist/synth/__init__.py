"""Synthetic MIMIC-IV-layout cohort with clinical archetypes and patient health models.

Public API: `generate_cohort(out_dir, n_subjects, seed=0)`, `load_phm(cohort_dir, subject_id)`.
The patient that answers from a PHM is `solvers.patient.phm.PHMResponder`.
"""

from physassist.synth.archetypes import ARCHETYPE_SCENARIOS, ARCHETYPES
from physassist.synth.cohort import CohortReport, generate_cohort
from physassist.synth.phm import load_phm

__all__ = ["ARCHETYPES", "ARCHETYPE_SCENARIOS", "CohortReport", "generate_cohort", "load_phm"]
