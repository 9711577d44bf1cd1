"""Splitting a long text into parts, and recognising the user's standing
instructions and preferences (memory/parts.py, memory/standing.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters.memory.parts import split_text
from poolsplit_adapters.memory.standing import FACT, INSTRUCTION, PREFERENCE, StandingRules, recognise, sentences

texts = st.text(alphabet=st.sampled_from(list("ab cd.!?\n;。xyz")), max_size=400)


@given(texts, st.integers(1, 80))
def test_parts_fit_keep_every_character_in_order_and_are_verbatim_slices(text, limit):
    parts = split_text(text, limit)
    assert all(0 < len(p) <= limit for p in parts)
    assert "".join(parts).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
    at = 0
    for part in parts:  # each part is found in the text after the previous one
        at = text.index(part, at) + len(part)


def test_parts_cut_at_the_strongest_boundary_that_fits():
    text = "First paragraph here. Still first.\n\nSecond paragraph, one sentence."
    assert split_text(text, 40) == ["First paragraph here. Still first.", "Second paragraph, one sentence."]
    assert split_text(text, 25) == ["First paragraph here.", "Still first.", "Second paragraph, one", "sentence."]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_text("   ", 10) == []


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_a_bad_limit_is_refused(bad):
    with pytest.raises(ValueError, match="limit"):
        split_text("text", bad)


@pytest.mark.parametrize(
    "said, found",
    [
        ("Always include version numbers when I list dependencies.", INSTRUCTION),
        ("never use semicolons in JavaScript examples", INSTRUCTION),
        ("Don\u2019t suggest paid tools.", INSTRUCTION),
        ("Please, make sure to cite the file path.", INSTRUCTION),
        ("From now on, answer in British English.", INSTRUCTION),
        ("Could you always add a summary at the end?", INSTRUCTION),
        ("I prefer tabs over spaces.", PREFERENCE),
        ("I'd rather use Postgres than MySQL.", PREFERENCE),
        ("I dislike dark themes.", PREFERENCE),
        ("My favourite editor is Helix.", PREFERENCE),
        ("Siempre responde en español.", INSTRUCTION),
        ("Prefiero respuestas cortas.", PREFERENCE),
        ("Ab jetzt bitte immer mit Quellen.", INSTRUCTION),
        ("Ich mag keine langen Antworten.", PREFERENCE),
        ("Désormais, réponds en français.", INSTRUCTION),
        ("Je préfère le thé.", PREFERENCE),
        ("以后请用中文回答。", INSTRUCTION),
        ("我更喜欢简短的回答。", PREFERENCE),
        ("What did I say yesterday?", ""),
        ("I always forget my keys.", ""),
        ("Do you think I should always test?", ""),
        ("The launch moved to March 17.", FACT),
        ("My team has 5 people.", FACT),
        ("I need help with my app.", ""),
        ("[u1] step 0 calls=1", ""),
        ("吃饭以后我们去公园。", ""),
    ],
)
def test_the_default_rules(said, found):
    assert [s.kind for s in recognise(said)] == ([found] if found else [])


def test_sentences_are_verbatim_and_each_recognised_once():
    said = "Hi! Always lint first.\nAlways lint first. I like tea. 我喜欢茶。"
    assert sentences(said) == ["Hi!", "Always lint first.", "Always lint first.", "I like tea.", "我喜欢茶。"]
    assert [(s.kind, s.text) for s in recognise(said)] == [
        (INSTRUCTION, "Always lint first."),
        (PREFERENCE, "I like tea."),
        (PREFERENCE, "我喜欢茶。"),
    ]


def test_rules_of_ones_own_and_bad_tables_are_named():
    rules = StandingRules({"en": ((r"^ship\b",), ())})
    assert [s.kind for s in recognise("Ship it on Mondays. Always lint.", rules)] == [INSTRUCTION]
    with pytest.raises(ValueError, match=r"StandingRules\['en'\]: bad pattern"):
        StandingRules({"en": (("(",), ())})
    with pytest.raises(TypeError, match="instruction patterns, preference patterns"):
        StandingRules({"en": ("x",)})  # type: ignore[dict-item]
