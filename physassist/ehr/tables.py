"""Canonical MIMIC-IV tables of the EHR store: names, columns, DuckDB types, sort keys.

Every table the tools read is declared here once. The store loader reads CSVs with
exactly these types (no type sniffing: ICD codes and NDCs keep their leading zeros,
and a 160M-row file is never scanned just to guess types), creates absent tables empty
with these columns, and sorts per-subject tables by ``sort_key`` so that DuckDB's
row-group zone maps skip everything but one subject's rows.

Column names follow MIMIC-IV v2.2 / v3.x. A source column missing from an older release
is loaded as NULL; a source column unknown here is dropped. ``icd_code`` values are
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

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "patients",
            "hosp",
            _cols("subject_id:id gender:s anchor_age:i anchor_year:i anchor_year_group:s dod:d"),
            ("subject_id",),
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
        ),
        TableSpec(
            "transfers",
            "hosp",
            _cols(
                "subject_id:id hadm_id:id transfer_id:id eventtype:s careunit:s intime:ts outtime:ts"
            ),
            ("subject_id", "intime"),
            "intime",
        ),
        TableSpec(
            "diagnoses_icd",
            "hosp",
            _cols("subject_id:id hadm_id:id seq_num:i icd_code:s icd_version:i"),
            ("subject_id", "hadm_id", "seq_num"),
        ),
        TableSpec(
            "d_icd_diagnoses",
            "hosp",
            _cols("icd_code:s icd_version:i long_title:s"),
            ("icd_code", "icd_version"),
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
        ),
        TableSpec("d_labitems", "hosp", _cols("itemid:i label:s fluid:s category:s"), ("itemid",)),
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
        ),
        TableSpec(
            "omr",
            "hosp",
            _cols("subject_id:id chartdate:d seq_num:i result_name:s result_value:s"),
            ("subject_id", "chartdate", "seq_num"),
            "chartdate",
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
        ),
        TableSpec(
            "d_items",
            "icu",
            _cols(
                "itemid:i label:s abbreviation:s linksto:s category:s unitname:s param_type:s "
                "lownormalvalue:f highnormalvalue:f"
            ),
            ("itemid",),
        ),
        TableSpec("discharge", "note", _NOTE, ("subject_id", "charttime"), "charttime"),
        TableSpec("radiology", "note", _NOTE, ("subject_id", "charttime"), "charttime"),
    )
}

DICTIONARY_TABLES: tuple[str, ...] = tuple(n for n, t in TABLES.items() if t.is_dictionary)
SUBJECT_TABLES: tuple[str, ...] = tuple(n for n, t in TABLES.items() if t.per_subject)


def create_table_sql(spec: TableSpec) -> str:
    """``CREATE TABLE`` for the canonical (empty) table, with the ``_row`` column last."""
    cols = ", ".join(f'"{c}" {t}' for c, t in spec.columns.items())
    return f'CREATE TABLE "{spec.name}" ({cols}, "{ROW_COLUMN}" BIGINT)'
