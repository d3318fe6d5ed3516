"""The retriever's fusion of its lexical and vector legs: RRF, with each leg's best spans at the head."""

from __future__ import annotations

from orc.search.fusion import HEAD_SLOTS, LEG_HEADS, reciprocal_rank_fusion, with_leg_heads
from orc.search.retriever import RankedSpan
from orc.search.targets import fused_spans
from tests.search.ranking import ranked, target, text_of

SHARED = [f"both{n}" for n in range(1, 11)]
LEXICAL = ["lexical-first", *SHARED]
VECTOR = ["vector-first", *reversed(SHARED)]


def test_plain_rrf_ranks_what_both_legs_hold_above_what_one_leg_ranks_first() -> None:
    fused = [item for item, _ in reciprocal_rank_fusion([LEXICAL, VECTOR], limit=20)]

    assert fused.index("lexical-first") >= HEAD_SLOTS and fused.index("vector-first") >= HEAD_SLOTS


def test_each_legs_first_items_lead_the_fusion_in_fused_order() -> None:
    fused = [item for item, _ in reciprocal_rank_fusion([LEXICAL, VECTOR], limit=20)]

    led = with_leg_heads(fused, [LEXICAL, VECTOR], heads=1, slots=3)

    assert set(led[:3]) == {"lexical-first", "vector-first", fused[0]}
    assert led[:3] == [item for item in fused if item in led[:3]]
    assert led[3:] == [item for item in fused if item not in led[:3]]


def test_the_default_head_holds_each_legs_first_three_items() -> None:
    fused = [item for item, _ in reciprocal_rank_fusion([LEXICAL, VECTOR], limit=20)]

    led = with_leg_heads(fused, [LEXICAL, VECTOR])

    assert set(led[:HEAD_SLOTS]) == {*LEXICAL[:LEG_HEADS], *VECTOR[:LEG_HEADS]}
    assert sorted(led) == sorted(fused)


def test_a_head_too_small_for_every_legs_best_items_holds_each_legs_first() -> None:
    fused = [item for item, _ in reciprocal_rank_fusion([LEXICAL, VECTOR], limit=20)]

    led = with_leg_heads(fused, [LEXICAL, VECTOR], heads=3, slots=2)

    assert led[:2] == ["lexical-first", "vector-first"]


def test_a_head_with_room_to_spare_is_filled_with_the_best_fused_items() -> None:
    fused = ["a", "b", "c", "d", "e"]

    assert with_leg_heads(fused, [["e"], ["d"]], heads=1, slots=4) == ["a", "b", "d", "e", "c"]


async def test_a_span_one_leg_ranks_first_leads_the_fused_spans_and_scores_still_fall_with_rank() -> None:
    detail = "The landlord keeps the register, answers letters within a week and files each change. " * 8
    passages = [f"Clause {n} sets the notice period for tenants in building {n}. {detail}" for n in range(1, 13)]
    lease = target(text_of(*passages), "lease.txt")
    memo = target(text_of("Anyone renting a flat may move out after telling the office two months ahead."), "memo.txt")
    lexical = await ranked("notice period tenants", [lease], limit=12)
    meaning: RankedSpan = (await ranked("renting flat move out", [memo], limit=1))[0]
    vector = [meaning, *lexical]  # found by its meaning only: the lexical leg does not rank it

    plain = fused_spans([lexical, vector], 8)
    led = fused_spans([lexical, vector], 8, heads=True)

    assert meaning.ref not in [span.ref for span in plain]
    assert meaning.ref in [span.ref for span in led[:HEAD_SLOTS]] and len(led) == 8
    assert [span.ref for span in led[:3]] == [span.ref for span in lexical[:3]]
    scores = [span.score for span in led]
    assert scores == sorted(scores, reverse=True)
    assert meaning.ref in [span.ref for span in fused_spans([lexical, vector], 2, heads=True)]
