"""Judge agreement statistics against hand-computed cases."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from physassist.agreement import cohen_kappa, compare, kappa_text, krippendorff_alpha, panel

T, F = True, False
A = [T, T, T, T, T, T, F, F, F, F]
B = [T, T, T, T, F, F, F, F, F, T]


def test_cohen_kappa_hand_computed():
    # p_o = 7/10; P(A pass) = .6, P(B pass) = .5 -> p_e = .6*.5 + .4*.5 = .5; kappa = .2/.5
    assert cohen_kappa(A, B) == pytest.approx(0.4)
    assert cohen_kappa(A, A) == pytest.approx(1.0)
    assert cohen_kappa([*A, None], [*B, T]) == pytest.approx(0.4)  # a missing label is left out
    assert math.isnan(cohen_kappa([T, T, T], [T, T, T]))  # chance agreement 1: undefined
    assert cohen_kappa([T, T, T], [F, F, F]) == 0.0  # both constant but different: defined


def test_kappa_text_says_why_kappa_is_undefined():
    items = pd.DataFrame(
        {
            "session_id": "s",
            "epoch": 1,
            "turn": 0,
            "task_type": "IL",
            "item": range(3),
            "passed": [T, T, T],
        }
    )
    turns = pd.DataFrame(
        {
            "session_id": ["s"],
            "epoch": [1],
            "turn": [0],
            "task_type": ["IL"],
            "score": [1.0],
            "status": ["scored"],
        }
    )
    same = compare(items, items, turns, turns, prefix="x.")
    assert (
        math.isnan(same["x.kappa"])
        and kappa_text(same, "x.")
        == "undefined (no variance: all 3 items one verdict; items agree 100.0)"
    )
    assert kappa_text({"x.kappa": 0.4}, "x.") == "0.400"
    assert (
        kappa_text({"x.kappa": math.nan, "x.items_compared": 1.0}, "x.")
        == "undefined (1 item(s) decided by both judges)"
    )


def test_krippendorff_alpha_hand_computed():
    # coincidences: o_TT = 8, o_FF = 6, o_TF = o_FT = 3; n_T = 11, n_F = 9, n = 20
    # alpha = 1 - 19 * 6 / (2 * 11 * 9) = 14/33
    assert krippendorff_alpha(list(zip(A, B, strict=True))) == pytest.approx(14 / 33)
    # three judges, missing values: unit 1 (T,T,T) gives o_TT 3; unit 2 (T,F) o_TF = o_FT = 1;
    # unit 3 (F,F,F) o_FF 3; unit 4 has one label (skipped). n_T = n_F = 4, n = 8:
    # alpha = 1 - 7 * 2 / (2 * 4 * 4) = 0.5625
    units = [(T, T, T), (T, F, None), (F, F, F), (None, T, None)]
    assert krippendorff_alpha(units) == pytest.approx(0.5625)
    assert math.isnan(krippendorff_alpha([(T, T), (T, T)]))


def _tables(verdicts: list[list[bool | None]], task_type: str = "CR"):
    items = pd.DataFrame(
        [
            {
                "session_id": "s1",
                "epoch": 1,
                "turn": t,
                "item": i,
                "passed": v,
                "task_type": task_type,
                "subtype": "AE",
            }
            for t, turn in enumerate(verdicts)
            for i, v in enumerate(turn)
        ]
    )
    turns = pd.DataFrame(
        [
            {
                "session_id": "s1",
                "epoch": 1,
                "turn": t,
                "score": sum(bool(v) for v in turn) / len(turn) if None not in turn else math.nan,
                "status": "scored" if None not in turn else "undecided",
                "task_type": task_type,
                "subtype": "AE",
            }
            for t, turn in enumerate(verdicts)
        ]
    )
    return items, turns


def test_compare_two_judgings():
    a_items, a_turns = _tables([[T, T, F], [T, T, T, T], [F, F, F]])
    b_items, b_turns = _tables([[T, F, F], [T, T, T, None], [F, F, F]])
    m = compare(a_items, b_items, a_turns, b_turns, taus=(0.6,), prefix="x.")
    # 9 items decided by both, 8 agree; A passes 5/9, B 4/9 -> p_e = 20/81 + 20/81 = 40/81
    assert m["x.items_compared"] == 9 and m["x.items_undecided"] == 1
    assert m["x.items"] == pytest.approx(800 / 9)  # points
    assert m["x.kappa"] == pytest.approx((8 / 9 - 40 / 81) / (1 - 40 / 81))
    # turns scored by both: T0 (2/3 vs 1/3) and T2 (0 vs 0): same side of .6 only for T2
    assert m["x.turns_compared"] == 2 and m["x.pass_turn_0.60"] == pytest.approx(50)
    assert (
        m["x.items.task_type.CR"] == pytest.approx(800 / 9)
        and m["x.kappa.implicitness.AE"] == m["x.kappa"]
    )


def test_panel_needs_two_and_reports_alpha():
    a_items, _ = _tables([A])
    b_items, _ = _tables([B])
    m = panel({"a": a_items, "b": b_items})
    assert m["agreement.judges.alpha"] == pytest.approx(14 / 33)
    assert m["agreement.judges.kappa_mean"] == pytest.approx(0.4) and m["agreement.judges.n"] == 2
    with pytest.raises(ValueError, match="at least two"):
        panel({"a": a_items})


def test_panel_combine_majority_ties_and_faults():
    from scorers.judgement import ItemResult, TurnJudgement
    from scorers.panel_judge import combine

    def j(*votes):
        return TurnJudgement.from_items([ItemResult(v, "") for v in votes], "llm")

    out = combine(
        [j(T, T, F), j(T, F, F), TurnJudgement.failed(3, "llm", "bad json", "unparseable")], 3
    )
    assert [i.passed for i in out.items] == [True, None, False] and out.status == "undecided"
    out = combine([j(T, T, F), j(T, F, F), j(F, T, T)], 3)
    assert [i.passed for i in out.items] == [True, True, False] and out.score == pytest.approx(
        2 / 3
    )
    fault = TurnJudgement.fault(3, "llm", "grader call failed", "provider")
    out = combine([fault, j(T, T, T), j(T, T, T)], 3)
    assert out.status == "error" and out.score is None  # a grader outage is never outvoted
    out = combine([TurnJudgement.failed(3, "llm", "x", "unparseable")] * 2, 3)
    assert out.status == "failed" and out.error_kind == "unparseable"
