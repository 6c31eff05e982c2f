"""The topic kinds a turn can be about and the :class:`Topic` that binds one to a patient's
entities (its own module, below ``topics.py`` and ``signals.py``, which both build topics)."""

from __future__ import annotations

from dataclasses import dataclass

from physassist.vocab import CLINICAL_REASONING as CR
from physassist.vocab import DATA_GATHERING as DG
from physassist.vocab import INFORMATION_LOOKUP as IL
from physassist.vocab import WRITE_UPDATE as WU

#: kind -> (task type, tool source, gold tools in call order)
KINDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "lab_latest": (IL, "ehr", ("Observation.search",)),
    "med_current": (IL, "ehr", ("MedicationRequest.search",)),
    "dx_primary": (IL, "ehr", ("Condition.search",)),
    "encounter_info": (IL, "ehr", ("Encounter.search",)),
    "culture_latest": (IL, "ehr", ("DiagnosticReport.search",)),
    "imaging_latest": (IL, "ehr", ("DiagnosticReport.search",)),
    "lab_pair": (DG, "ehr", ("Observation.search", "Observation.search")),
    "lab_and_med": (DG, "ehr", ("Observation.search", "MedicationRequest.search")),
    "med_and_admin": (DG, "ehr", ("MedicationRequest.search", "MedicationAdministration.search")),
    "lab_trend": (CR, "ehr", ("Observation.search",)),
    "drug_lab_safety": (CR, "ehr", ("MedicationRequest.search", "Observation.search")),
    "abx_response": (CR, "ehr", ("MedicationAdministration.search", "Observation.search")),
    "admin_reliability": (
        CR,
        "ehr",
        ("MedicationRequest.search", "MedicationAdministration.search"),
    ),
    "order_lab_recheck": (WU, "write", ("ServiceRequest.create",)),
    "continue_med": (WU, "write", ("MedicationRequest.create",)),
    "flag_abnormal": (WU, "write", ("Flag.create",)),
    "followup_visit": (WU, "write", ("ServiceRequest.create",)),
    "adherence_check": (
        DG,
        "mixed",
        ("MedicationRequest.search", "patient.get_medication_adherence"),
    ),
    "duplicate_therapy": (CR, "ehr", ("MedicationRequest.search",)),
    "duplicate_class": (CR, "ehr", ("MedicationRequest.search", "MedicationRequest.search")),
    "interaction": (CR, "ehr", ("MedicationRequest.search", "MedicationRequest.search")),
    "anticoag_bridge": (
        CR,
        "ehr",
        ("MedicationRequest.search", "MedicationRequest.search", "Observation.search"),
    ),
    "treatment_effect": (CR, "ehr", ("MedicationAdministration.search", "Observation.search")),
    "home_function": (
        DG,
        "patient",
        ("patient.get_social_history", "patient.get_functional_status"),
    ),
    "symptom_pain": (DG, "patient", ("patient.get_symptom_history", "patient.get_pain_assessment")),
}


@dataclass(frozen=True)
class Topic:
    """One turn's subject: a kind bound to entities (lab labels are MIMIC-IV labels)."""

    kind: str
    lab: str | None = None
    lab2: str | None = None
    drug: str | None = None  # searchable drug word, lower-case
    name: str | None = None  # the drug as a physician says it (vocab.drug_spoken)
    drug2: str | None = None  # a second drug (duplicate therapy, interaction, bridge)
    name2: str | None = None
    done: bool = False  # a treatment course that ended before the session (running.py)
    when: str | None = None  # why a repeat lab is ordered (followup.reason); None: follow-up

    @property
    def task_type(self) -> str:
        return KINDS[self.kind][0]

    @property
    def source(self) -> str:
        return KINDS[self.kind][1]

    @property
    def tools(self) -> tuple[str, ...]:
        return KINDS[self.kind][2]

    @property
    def resource_types(self) -> frozenset[str]:
        return frozenset(t.split(".")[0] for t in self.tools if not t.startswith("patient."))

    @property
    def entities(self) -> tuple[str, ...]:
        return tuple(e for e in (self.lab, self.lab2, self.drug, self.drug2) if e)

    def label(self) -> str:
        ents = ", ".join(self.entities)
        return f"{self.kind}({ents})" if ents else self.kind
