"""Splitting a long text into parts, and recognising the user's standing
instructions and preferences (memory/parts.py, memory/standing.py)."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_adapters.memory import WriteGate
from poolsplit_adapters.memory.parts import split_text
from poolsplit_adapters.memory.standing import (
    FACT,
    INSTRUCTION,
    PREFERENCE,
    StandingRules,
    clauses,
    prose,
    recognise,
    sentences,
)
from poolsplit_adapters.memory.turns import Provenance, Said, exchange_proposals

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

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


@pytest.mark.parametrize(
    "said, found",
    [
        # an imperative with a standing scope
        ("Whenever I ask about caching, mention the eviction policy.", INSTRUCTION),
        ("When I ask about migrations, show the rollback command.", INSTRUCTION),
        ("Please add a changelog entry whenever I ask for a release note.", INSTRUCTION),
        ("Could you make sure to add docstrings in all examples?", INSTRUCTION),
        ("Add logging in every Go example you give me.", INSTRUCTION),
        ("Keep summaries short.", INSTRUCTION),
        ("I want the replies to be in plain English, with headings.", INSTRUCTION),
        ("Every answer about Kafka should name the broker version.", INSTRUCTION),
        ("Next time I ask about CSS, use Flexbox.", INSTRUCTION),
        ("Make it a habit to link the source.", INSTRUCTION),
        # preferences stated with an adverb, a habit or a contrast
        ("I tend to favour small modules over big ones.", PREFERENCE),
        ("I usually go with Redis rather than Memcached.", PREFERENCE),
        ("My preference is to run linters in CI.", PREFERENCE),
        ("I generally lean towards explicit configuration.", PREFERENCE),
        ("I typically opt for SQLite in prototypes.", PREFERENCE),
        ("I'm not keen on code generators.", PREFERENCE),
        ("We favor trunk-based development on this team.", PREFERENCE),
        # one-off requests, questions, statements, reactions: none
        ("Can you help me write the signup form?", ""),
        ("Please look at this stack trace.", ""),
        ("Make sure the migration runs before the deploy.", ""),
        ("Add a retry to this function.", ""),
        ("Should I always pin my dependencies?", ""),
        ("Never mind, it works now.", ""),
        ("Don't worry about the colours for now.", ""),
        ("Always the same timeout, whatever I change.", ""),
        ("I prefer not to say.", ""),
        ("I like how the page looks now.", ""),
        ("I would like to add a search page.", ""),
        ("Stop, that is the wrong file.", ""),
        ("Whenever you're ready, send the next part.", ""),
        ("Every time I run the linter, it crashes.", ""),
        # the other languages: a request word with a standing one anywhere in the clause
        ("Por favor, responde siempre con ejemplos.", INSTRUCTION),
        ("Bitte schreib die Tests immer zuerst.", INSTRUCTION),
        ("以后写代码时请加上注释。", INSTRUCTION),
        ("Ich war immer müde, bitte hilf mir.", ""),
        # the verb first, as each language says it; a statement with the same adverb is none
        ("Responde siempre en español.", INSTRUCTION),
        ("Dame siempre el comando exacto.", INSTRUCTION),
        ("Antworte immer auf Deutsch.", INSTRUCTION),
        ("Gib mir immer ein Beispiel.", INSTRUCTION),
        ("Réponds toujours en français.", INSTRUCTION),
        ("N'utilise jamais de variables globales.", INSTRUCTION),
        ("Falla siempre el test de login.", ""),
        ("Das Programm stürzt immer ab.", ""),
        ("Le test échoue toujours.", ""),
        ("N'est jamais arrivé.", ""),
    ],
)
def test_a_standing_scope_tells_an_instruction_from_a_one_off_request(said, found):
    assert [s.kind for s in recognise(said) if s.kind != FACT] == ([found] if found else [])


@pytest.mark.parametrize(
    "said, found",
    [
        # a decision that says what it was chosen over or for; in the present perfect, why
        ("I went with Vue over React because the documentation is better.", PREFERENCE),
        ("I opted for SQLite to keep the app lightweight.", PREFERENCE),
        ("For logging, I settled on structlog for simplicity.", PREFERENCE),
        ("I've decided to use Poetry because it locks versions.", PREFERENCE),
        ("I've chosen to keep human reviewers for the final round to preserve fairness.", PREFERENCE),
        # a priority, a value weighed against another, a choice that holds now
        ("I prioritize readable code over clever code.", PREFERENCE),
        ("I value stability more than new features.", PREFERENCE),
        ("I'm sticking with pytest for the API tests.", PREFERENCE),
        ("I'm focusing on integration tests rather than unit tests.", PREFERENCE),
        # a statement followed by a request: the request's "this" is not the statement's
        (
            "I prefer writing in the mornings, as I'm focused then, can you help me make the most of this time?",
            PREFERENCE,
        ),
        ("I prefer tabs for this file, can you fix the indentation?", ""),
        # one-off decisions, a past choice with only a reason, a question: none
        ("I decided to take a break before debugging the login page.", ""),
        ("I decided to refactor the module because it was too slow.", ""),
        ("I picked the red one because it was cheaper.", ""),
        ("I opted out of the beta program.", ""),
        ("I'm focusing on the checkout bug today.", ""),
        ("I prioritized the search ticket this sprint.", ""),
        ("I value your feedback on the upload code.", ""),
        ("Did I decide on Vue or React for the frontend?", ""),
    ],
)
def test_a_choice_stated_as_a_decision_or_a_priority_is_a_preference(said, found):
    assert [s.kind for s in recognise(said) if s.kind != FACT] == ([found] if found else [])


def test_an_instruction_inside_a_long_sentence_is_found_by_its_clause():
    said = "I set up the routes yesterday, and always add type hints when I ask for examples ->-> 3,4"
    assert clauses(said) == [
        "I set up the routes yesterday",
        "and always add type hints when I ask for examples ->-> 3,4",
    ]
    assert [(s.kind, s.text) for s in recognise(said)] == [(INSTRUCTION, said)]
    long = "So far " + "the models, the routes and the forms work " * 6 + "; never use print in examples."
    assert [(s.kind, s.text) for s in recognise(long)] == [(INSTRUCTION, "never use print in examples.")]


def test_code_is_never_read():
    said = "Here it is:\n```python\n# Always close the file.\nx = 1\n```\n// never mutate props\nWhat now?"
    assert prose(said) == "Here it is:\n\n\n\nWhat now?"
    assert recognise(said) == []
    assert recognise("```\nAlways use tabs.\n") == []  # a fence never closed runs to the end


def test_exceptions_of_ones_own_and_bad_ones_are_named():
    rules = StandingRules({"en": ((r"^always\b",), ())}, exceptions=(r"\bthis\b",))
    assert [s.kind for s in recognise("Always lint. Always lint this file.", rules)] == [INSTRUCTION]
    with pytest.raises(ValueError, match="StandingRules exceptions: bad pattern"):
        StandingRules({"en": ((), ())}, exceptions=("(",))


STANDING = st.sampled_from(
    [
        "Always include version numbers.",
        "Whenever I ask about tests, use pytest.",
        "I prefer tabs over spaces.",
        "From now on, answer in French.",
        "I usually go with Vue rather than React.",
    ]
)
PLAIN = st.text(alphabet=st.sampled_from(list("abc xyz.,\n")), max_size=60)


@given(PLAIN, st.lists(st.one_of(STANDING, PLAIN), max_size=4), PLAIN)
def test_nothing_inside_a_fenced_code_block_is_ever_recognised(before, code, after):
    body = "\n".join(code).replace("`", "")
    fenced = "%s\n```text\n%s\n```\n%s" % (before, body, after)
    assert recognise(fenced) == recognise("%s\n\n%s" % (before, after))


@given(st.lists(st.one_of(STANDING, PLAIN), min_size=1, max_size=4), st.sampled_from(["assistant", "tool"]))
def test_a_model_or_tool_message_is_never_recognised(said, role):
    where = Provenance("thread:t", "memories.u", "2026-07-01T00:00:00Z", exchange="x")
    proposals = exchange_proposals(WriteGate(), [Said(role, " ".join(said))], "episode", where)
    assert {p.entry["type"] for p in proposals} <= {"episode"}


def test_the_measured_recall_and_false_positive_rate_on_the_held_out_group():
    import standing as bench  # benchmarks/standing.py

    scores = bench.score("held-out")
    assert (scores.positives, scores.negatives) == (122, 50)
    assert scores.recall >= 0.95 and scores.message_recall >= 0.95
    assert scores.false_positive <= 0.05 and scores.message_false_positive <= 0.05


def test_the_measured_recall_and_false_positive_rate_on_the_decisions_held_out_group():
    import standing as bench  # benchmarks/standing.py

    scores = bench.score("held-out-2")
    assert (scores.positives, scores.negatives) == (76, 30)
    assert scores.recall >= 0.9 and scores.message_recall >= 0.9
    assert scores.false_positive <= 0.05 and scores.message_false_positive <= 0.05
