"""Canonical MIMIC-IV tables of the EHR store: names, columns, DuckDB types, sort keys.

Every table the tools read is declared here once. The store loader reads CSVs with
exactly these types (no type sniffing: ICD codes and NDCs keep their leading zeros,
and a 160M-row file is never scanned just to guess types), creates absent tables empty
with these columns, and sorts per-subject tables by ``sort_key`` so that DuckDB's
row-group zone maps skip everything but one subject's rows.

Column names follow MIMIC-IV v2.2 / v3.x. What a source must hold is declared here too and
checked when the store is built (``source_check.py``): the ``keys`` (present, never NULL) and
the columns the tools read (derived from their ``@read_tool`` declarations,
``tools/reads.py``; ``lookups`` for the dictionaries, which the tools read whole) must be there,
except the ``optional`` ones a release may lack. Any other source column missing from a
release is loaded as NULL; a source column unknown here is dropped. ``icd_code`` values are
stripped of surrounding blanks on load, so joins on the code need no ``trim()``.

Besides the native columns each table has ``_row`` (BIGINT): the row's position in its
source file, in file order. Within one subject it orders rows exactly as the reference
implementation's per-subject CSVs do, so "file order" and "CSV row index" (compat ids
such as ``rx-<subject>-<row index>``) are reproducible:
``row_number() OVER (ORDER BY _row) - 1`` over one subject's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

ROW_COLUMN = "_row"


@dataclass(frozen=True)
class TableSpec:
    """One canonical table: where it lives in MIMIC-IV and how it is typed and sorted."""

    name: str
    module: str  # hosp | icu | note
    columns: dict[str, str]  # column -> DuckDB type, in MIMIC-IV order
    sort_key: tuple[str, ...]  # physical order; per-subject tables start with subject_id
    time_column: str | None = None  # the column a time cutoff applies to (None: not timed)
    #: What identifies or joins a row (NOT NULL in MIMIC-IV's own schema): present, never NULL.
    keys: tuple[str, ...] = ()
    #: Columns the tools read that a release may lack: loaded as NULL, listed at build.
    optional: tuple[str, ...] = ()
    #: A dictionary's columns the tools read from the rows they look up (``records.lookup``
    #: reads whole rows, so no ``@read_tool`` declares them), and the table whose codes it names.
    lookups: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    #: The scenarios whose sessions the builder cannot make without this table's rows
    #: (``generation/builder/prefilter.RULES``; ``tests/ehr/test_source_check.py`` holds it to them).
    scenarios: tuple[str, ...] = ()

    @property
    def per_subject(self) -> bool:
        return "subject_id" in self.columns

    @property
    def is_dictionary(self) -> bool:
        return not self.per_subject


_ID = "BIGINT"
_TS = "TIMESTAMP"
_S = "VARCHAR"
_I = "INTEGER"
_F = "DOUBLE"


def _cols(spec: str) -> dict[str, str]:
    """Parse ``"a:T b:T ..."`` into an ordered column -> type mapping."""
    out: dict[str, str] = {}
    for item in spec.split():
        name, typ = item.split(":")
        out[name] = {"id": _ID, "ts": _TS, "s": _S, "i": _I, "f": _F, "d": "DATE"}[typ]
    return out


_NOTE = _cols(
    "note_id:s subject_id:id hadm_id:id note_type:s note_seq:i charttime:ts storetime:ts text:s"
)

_ALL_SCENARIOS = ("diagnostic_workup", "med_safety", "treatment_response", "discharge_planning")

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "patients",
            "hosp",
            _cols("subject_id:id gender:s anchor_age:i anchor_year:i anchor_year_group:s dod:d"),
            ("subject_id",),
            keys=("subject_id",),
        ),
        TableSpec(
            "admissions",
            "hosp",
            _cols(
                "subject_id:id hadm_id:id admittime:ts dischtime:ts deathtime:ts admission_type:s "
                "admit_provider_id:s admission_location:s discharge_location:s insurance:s "
                "language:s marital_status:s race:s edregtime:ts edouttime:ts hospital_expire_flag:i"
            ),
            ("subject_id", "admittime"),
            "admittime",
            keys=("subject_id", "hadm_id", "admittime"),
            # descriptive, NULL on many rows anyway; MIMIC-IV v1.0 names race ``ethnicity``;
            # without edregtime a stay's window starts at admittime (tools/reported.py)
            optional=("insurance", "language", "marital_status", "race", "edregtime"),
            scenarios=_ALL_SCENARIOS,
        ),
        TableSpec(
            "transfers",
            "hosp",
            _cols(
                "subject_id:id hadm_id:id transfer_id:id eventtype:s careunit:s intime:ts outtime:ts"
            ),
            ("subject_id", "intime"),
            "intime",
            keys=("subject_id", "transfer_id"),
        ),
        TableSpec(
            "diagnoses_icd",
            "hosp",
            _cols("subject_id:id hadm_id:id seq_num:i icd_code:s icd_version:i"),
            ("subject_id", "hadm_id", "seq_num"),
            keys=("subject_id", "hadm_id"),
            scenarios=("diagnostic_workup", "discharge_planning"),
        ),
        TableSpec(
            "d_icd_diagnoses",
            "hosp",
            _cols("icd_code:s icd_version:i long_title:s"),
            ("icd_code", "icd_version"),
            keys=("icd_code", "icd_version"),
            lookups=("long_title",),
            names=("diagnoses_icd",),
        ),
        TableSpec(
            "labevents",
            "hosp",
            _cols(
                "labevent_id:id subject_id:id hadm_id:id specimen_id:id itemid:i order_provider_id:s "
                "charttime:ts storetime:ts value:s valuenum:f valueuom:s ref_range_lower:f "
                "ref_range_upper:f flag:s priority:s comments:s"
            ),
            ("subject_id", "charttime"),
            "charttime",
            keys=("labevent_id", "subject_id", "itemid"),
            # without report times a value is known from its draw (tools/reported.py)
            optional=("storetime",),
            scenarios=_ALL_SCENARIOS,
        ),
        TableSpec(
            "d_labitems",
            "hosp",
            _cols("itemid:i label:s fluid:s category:s"),
            ("itemid",),
            keys=("itemid",),
            lookups=("label", "fluid"),
            names=("labevents",),
            scenarios=("diagnostic_workup", "med_safety", "treatment_response"),
        ),
        TableSpec(
            "prescriptions",
            "hosp",
            _cols(
                "subject_id:id hadm_id:id pharmacy_id:id poe_id:s poe_seq:i order_provider_id:s "
                "starttime:ts stoptime:ts drug_type:s drug:s formulary_drug_cd:s gsn:s ndc:s "
                "prod_strength:s form_rx:s dose_val_rx:s dose_unit_rx:s form_val_disp:s "
                "form_unit_disp:s doses_per_24_hrs:f route:s"
            ),
            ("subject_id", "starttime"),
            "starttime",
            keys=("subject_id", "hadm_id"),
            scenarios=("med_safety", "discharge_planning"),
        ),
        TableSpec(
            "pharmacy",
            "hosp",
            _cols(
                "subject_id:id hadm_id:id pharmacy_id:id poe_id:s starttime:ts stoptime:ts "
                "medication:s proc_type:s status:s entertime:ts verifiedtime:ts route:s frequency:s "
                "disp_sched:s infusion_type:s sliding_scale:s lockout_interval:s basal_rate:f "
                "one_hr_max:s doses_per_24_hrs:f duration:f duration_interval:s "
                "expiration_value:i expiration_unit:s expirationdate:ts dispensation:s "
                "fill_quantity:s"
            ),
            ("subject_id", "starttime"),
            "starttime",
            keys=("subject_id", "hadm_id", "pharmacy_id"),
        ),
        TableSpec(
            "emar",
            "hosp",
            _cols(
                "subject_id:id hadm_id:id emar_id:s emar_seq:i poe_id:s pharmacy_id:id "
                "enter_provider_id:s charttime:ts medication:s event_txt:s scheduletime:ts "
                "storetime:ts"
            ),
            ("subject_id", "charttime"),
            "charttime",
            keys=("subject_id", "emar_id", "emar_seq"),
            scenarios=("treatment_response",),
        ),
        TableSpec(
            "emar_detail",
            "hosp",
            _cols(
                "subject_id:id emar_id:s emar_seq:i parent_field_ordinal:s administration_type:s "
                "pharmacy_id:id barcode_type:s reason_for_no_barcode:s complete_dose_not_given:s "
                "dose_due:s dose_due_unit:s dose_given:s dose_given_unit:s "
                "will_remainder_of_dose_be_given:s product_amount_given:s product_unit:s "
                "product_code:s product_description:s product_description_other:s "
                "prior_infusion_rate:s infusion_rate:s infusion_rate_adjustment:s "
                "infusion_rate_adjustment_amount:s infusion_rate_unit:s route:s "
                "infusion_complete:s completion_interval:s new_iv_bag_hung:s "
                "continued_infusion_in_other_location:s restart_interval:s side:s site:s "
                "non_formulary_visual_verification:s"
            ),
            ("subject_id", "emar_id"),
            keys=("subject_id", "emar_id", "emar_seq"),
        ),
        TableSpec(
            "microbiologyevents",
            "hosp",
            _cols(
                "microevent_id:id subject_id:id hadm_id:id micro_specimen_id:id "
                "order_provider_id:s chartdate:ts charttime:ts spec_itemid:i spec_type_desc:s "
                "test_seq:i storedate:ts storetime:ts test_itemid:i test_name:s org_itemid:i "
                "org_name:s isolate_num:i quantity:s ab_itemid:i ab_name:s dilution_text:s "
                "dilution_comparison:s dilution_value:f interpretation:s comments:s"
            ),
            ("subject_id", "chartdate", "charttime"),
            "chartdate",
            keys=("microevent_id", "subject_id", "micro_specimen_id"),
            optional=("storedate", "storetime"),  # as labevents.storetime
        ),
        TableSpec(
            "omr",
            "hosp",
            _cols("subject_id:id chartdate:d seq_num:i result_name:s result_value:s"),
            ("subject_id", "chartdate", "seq_num"),
            "chartdate",
            keys=("subject_id", "chartdate", "seq_num", "result_name"),
        ),
        TableSpec(
            "icustays",
            "icu",
            _cols(
                "subject_id:id hadm_id:id stay_id:id first_careunit:s last_careunit:s "
                "intime:ts outtime:ts los:f"
            ),
            ("subject_id", "intime"),
            "intime",
            keys=("subject_id", "hadm_id", "stay_id"),
        ),
        TableSpec(
            "chartevents",
            "icu",
            _cols(
                "subject_id:id hadm_id:id stay_id:id caregiver_id:id charttime:ts storetime:ts "
                "itemid:i value:s valuenum:f valueuom:s warning:i"
            ),
            ("subject_id", "charttime"),
            "charttime",
            keys=("subject_id", "hadm_id", "stay_id", "itemid"),
        ),
        TableSpec(
            "inputevents",
            "icu",
            _cols(
                "subject_id:id hadm_id:id stay_id:id caregiver_id:id starttime:ts endtime:ts "
                "storetime:ts itemid:i amount:f amountuom:s rate:f rateuom:s orderid:id "
                "linkorderid:id ordercategoryname:s secondaryordercategoryname:s "
                "ordercomponenttypedescription:s ordercategorydescription:s patientweight:f "
                "totalamount:f totalamountuom:s isopenbag:i continueinnextdept:i "
                "statusdescription:s originalamount:f originalrate:f"
            ),
            ("subject_id", "starttime"),
            "starttime",
            keys=("subject_id", "hadm_id", "stay_id", "itemid", "starttime"),
        ),
        TableSpec(
            "d_items",
            "icu",
            _cols(
                "itemid:i label:s abbreviation:s linksto:s category:s unitname:s param_type:s "
                "lownormalvalue:f highnormalvalue:f"
            ),
            ("itemid",),
            keys=("itemid",),
            lookups=("label", "unitname"),
            names=("chartevents", "inputevents"),
        ),
        TableSpec(
            "discharge",
            "note",
            _NOTE,
            ("subject_id", "charttime"),
            "charttime",
            keys=("note_id", "subject_id"),
            scenarios=("discharge_planning",),
        ),
        TableSpec(
            "radiology",
            "note",
            _NOTE,
            ("subject_id", "charttime"),
            "charttime",
            keys=("note_id", "subject_id"),
        ),
    )
}

DICTIONARY_TABLES: tuple[str, ...] = tuple(n for n, t in TABLES.items() if t.is_dictionary)
SUBJECT_TABLES: tuple[str, ...] = tuple(n for n, t in TABLES.items() if t.per_subject)


def create_table_sql(spec: TableSpec) -> str:
    """``CREATE TABLE`` for the canonical (empty) table, with the ``_row`` column last."""
    cols = ", ".join(f'"{c}" {t}' for c, t in spec.columns.items())
    return f'CREATE TABLE "{spec.name}" ({cols}, "{ROW_COLUMN}" BIGINT)'
