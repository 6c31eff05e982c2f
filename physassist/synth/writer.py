"""Byte-stable `.csv.gz` writing in MIMIC-IV layout: exact column names and order, gzip with
mtime 0 and no embedded file name, minimal quoting, one header line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa

INT, S, F, T, D = pa.int64(), pa.string(), pa.float64(), pa.timestamp("s"), pa.date32()

# table -> (module, [(column, type)]); columns and order as MIMIC-IV v2.2 / MIMIC-IV-Note.
SCHEMAS: dict[str, tuple[str, list[tuple[str, pa.DataType]]]] = {
    "patients": ("hosp", [("subject_id", INT), ("gender", S), ("anchor_age", INT), ("anchor_year", INT),
                          ("anchor_year_group", S), ("dod", D)]),
    "admissions": ("hosp", [("subject_id", INT), ("hadm_id", INT), ("admittime", T), ("dischtime", T), ("deathtime", T),
                            ("admission_type", S), ("admit_provider_id", S), ("admission_location", S),
                            ("discharge_location", S), ("insurance", S), ("language", S), ("marital_status", S),
                            ("race", S), ("edregtime", T), ("edouttime", T), ("hospital_expire_flag", INT)]),
    "transfers": ("hosp", [("subject_id", INT), ("hadm_id", INT), ("transfer_id", INT), ("eventtype", S), ("careunit", S),
                           ("intime", T), ("outtime", T)]),
    "diagnoses_icd": ("hosp", [("subject_id", INT), ("hadm_id", INT), ("seq_num", INT), ("icd_code", S), ("icd_version", INT)]),
    "d_icd_diagnoses": ("hosp", [("icd_code", S), ("icd_version", INT), ("long_title", S)]),
    "labevents": ("hosp", [("labevent_id", INT), ("subject_id", INT), ("hadm_id", INT), ("specimen_id", INT), ("itemid", INT),
                           ("order_provider_id", S), ("charttime", T), ("storetime", T), ("value", S), ("valuenum", F),
                           ("valueuom", S), ("ref_range_lower", F), ("ref_range_upper", F), ("flag", S),
                           ("priority", S), ("comments", S)]),
    "d_labitems": ("hosp", [("itemid", INT), ("label", S), ("fluid", S), ("category", S)]),
    "prescriptions": ("hosp", [("subject_id", INT), ("hadm_id", INT), ("pharmacy_id", INT), ("poe_id", S), ("poe_seq", INT),
                               ("order_provider_id", S), ("starttime", T), ("stoptime", T), ("drug_type", S), ("drug", S),
                               ("formulary_drug_cd", S), ("gsn", S), ("ndc", S), ("prod_strength", S), ("form_rx", S),
                               ("dose_val_rx", S), ("dose_unit_rx", S), ("form_val_disp", S), ("form_unit_disp", S),
                               ("doses_per_24_hrs", F), ("route", S)]),
    "pharmacy": ("hosp", [("subject_id", INT), ("hadm_id", INT), ("pharmacy_id", INT), ("poe_id", S), ("starttime", T),
                          ("stoptime", T), ("medication", S), ("proc_type", S), ("status", S), ("entertime", T),
                          ("verifiedtime", T), ("route", S), ("frequency", S), ("disp_sched", S), ("infusion_type", S),
                          ("sliding_scale", S), ("lockout_interval", S), ("basal_rate", F), ("one_hr_max", S),
                          ("doses_per_24_hrs", F), ("duration", F), ("duration_interval", S), ("expiration_value", INT),
                          ("expiration_unit", S), ("expirationdate", T), ("dispensation", S), ("fill_quantity", S)]),
    "emar": ("hosp", [("subject_id", INT), ("hadm_id", INT), ("emar_id", S), ("emar_seq", INT), ("poe_id", S),
                      ("pharmacy_id", INT), ("enter_provider_id", S), ("charttime", T), ("medication", S), ("event_txt", S),
                      ("scheduletime", T), ("storetime", T)]),
    "emar_detail": ("hosp", [("subject_id", INT), ("emar_id", S), ("emar_seq", INT), ("parent_field_ordinal", S),
                             ("administration_type", S), ("pharmacy_id", INT), ("barcode_type", S),
                             ("reason_for_no_barcode", S), ("complete_dose_not_given", S), ("dose_due", S),
                             ("dose_due_unit", S), ("dose_given", S), ("dose_given_unit", S),
                             ("will_remainder_of_dose_be_given", S), ("product_amount_given", S), ("product_unit", S),
                             ("product_code", S), ("product_description", S), ("product_description_other", S),
                             ("prior_infusion_rate", S), ("infusion_rate", S), ("infusion_rate_adjustment", S),
                             ("infusion_rate_adjustment_amount", S), ("infusion_rate_unit", S), ("route", S),
                             ("infusion_complete", S), ("completion_interval", S), ("new_iv_bag_hung", S),
                             ("continued_infusion_in_other_location", S), ("restart_interval", S), ("side", S),
                             ("site", S), ("non_formulary_visual_verification", S)]),
    "microbiologyevents": ("hosp", [("microevent_id", INT), ("subject_id", INT), ("hadm_id", INT), ("micro_specimen_id", INT),
                                    ("order_provider_id", S), ("chartdate", T), ("charttime", T), ("spec_itemid", INT),
                                    ("spec_type_desc", S), ("test_seq", INT), ("storedate", T), ("storetime", T),
                                    ("test_itemid", INT), ("test_name", S), ("org_itemid", INT), ("org_name", S),
                                    ("isolate_num", INT), ("quantity", S), ("ab_itemid", INT), ("ab_name", S),
                                    ("dilution_text", S), ("dilution_comparison", S), ("dilution_value", F),
                                    ("interpretation", S), ("comments", S)]),
    "omr": ("hosp", [("subject_id", INT), ("chartdate", D), ("seq_num", INT), ("result_name", S), ("result_value", S)]),
    "icustays": ("icu", [("subject_id", INT), ("hadm_id", INT), ("stay_id", INT), ("first_careunit", S), ("last_careunit", S),
                         ("intime", T), ("outtime", T), ("los", F)]),
    "chartevents": ("icu", [("subject_id", INT), ("hadm_id", INT), ("stay_id", INT), ("caregiver_id", INT), ("charttime", T),
                            ("storetime", T), ("itemid", INT), ("value", S), ("valuenum", F), ("valueuom", S),
                            ("warning", INT)]),
    "d_items": ("icu", [("itemid", INT), ("label", S), ("abbreviation", S), ("linksto", S), ("category", S),
                        ("unitname", S), ("param_type", S), ("lownormalvalue", F), ("highnormalvalue", F)]),
    "discharge": ("note", [("note_id", S), ("subject_id", INT), ("hadm_id", INT), ("note_type", S), ("note_seq", INT),
                           ("charttime", T), ("storetime", T), ("text", S)]),
    "radiology": ("note", [("note_id", S), ("subject_id", INT), ("hadm_id", INT), ("note_type", S), ("note_seq", INT),
                           ("charttime", T), ("storetime", T), ("text", S)]),
}


def table_path(root: Path, table: str) -> Path:
    module, _ = SCHEMAS[table]
    return root / module / f"{table}.csv.gz"


def schema(table: str) -> pa.Schema:
    return pa.schema(SCHEMAS[table][1])


def empty_table(table: str) -> pa.Table:
    return schema(table).empty_table()


def conform(table: str, data: pa.Table | dict) -> pa.Table:
    """Cast to the table's schema in MIMIC column order; a missing or extra column is a bug."""
    sch = schema(table)
    if isinstance(data, dict):
        missing = [f.name for f in sch if f.name not in data]
        extra = [k for k in data if k not in sch.names]
        if missing or extra:
            raise ValueError(f"{table}: missing columns {missing}, unexpected columns {extra}")
        arrays = [pa.array(data[f.name], f.type) if not isinstance(data[f.name], pa.Array | pa.ChunkedArray)
                  else data[f.name].cast(f.type) for f in sch]
        return pa.Table.from_arrays(arrays, schema=sch)
    if data.column_names != sch.names:
        raise ValueError(f"{table}: columns {data.column_names} != {sch.names}")
    return data.cast(sch)


class CsvGzWriter:
    """One deterministic `.csv.gz` table file: the header line, then CSV bodies appended as the
    workers rendered them (gzip mtime 0 and no embedded name, so equal input gives equal bytes)."""

    def __init__(self, path: Path, table: str, compresslevel: int = 6) -> None:
        header = (",".join(schema(table).names) + "\n").encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._raw = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._gz = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=compresslevel)
        self._gz.write(header)

    def write(self, body: bytes) -> None:
        """Append header-less CSV text (as rendered by ``cohort._csv_bytes``)."""
        self._gz.write(body)

    def close(self) -> None:
        self._gz.close()
        self._raw.close()
