"""Standing instructions and preferences, recognised in the user's own words.

A user says once "Always include version numbers when I list dependencies"
or "I prefer tabs over spaces", in the middle of an ordinary message, and
expects it to hold for the rest of the conversation and the next one. Stored
only inside the turn that said it, such a sentence competes with every other
turn for one budget and loads only when the next message happens to resemble
it. So the write path picks these sentences out of the **user's** messages
(never the model's, never a tool's output: a model must not be able to write
itself standing orders) and stores each as an entry of its own type,
``instruction`` or ``preference``, which every default pool plan reserves
room for (`STANDING_TYPES`).

The rules are deterministic and few, one table per language, matched per
sentence (`sentences`), case-insensitively, after the one text
normalisation (`normalise_text`):

* an **instruction** is a sentence that *starts* with a standing imperative
  ("always", "never", "don't", "do not", "make sure to", "be sure to",
  "remember to", "please always/never", "avoid", "stop") or that holds a
  standing marker anywhere ("from now on", "going forward", "in the
  future", "every time you", "whenever you", "you should always/never",
  "I want you to always/never", "I'd like you to always/never");
* a **preference** is a sentence that states one ("I prefer", "I'd rather",
  "I like", "I love", "I dislike", "I don't like", "I hate", "my favourite",
  "I'm (not) a fan of", ...).

An instruction marker wins over a preference marker in one sentence. The
same tables exist for Spanish, German, French and Chinese
(`RULES`). To change them, pass your own `StandingRules` to the
write gate (``WriteGate(standing=...)``), or ``standing=None`` to turn the
recognition off.

Example:
    >>> [(s.kind, s.text) for s in recognise("Thanks! Always include version numbers. I prefer tabs.")]
    [('instruction', 'Always include version numbers.'), ('preference', 'I prefer tabs.')]
    >>> recognise("What did I say yesterday?")
    []
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Pattern, Sequence, Tuple

from .changes import states
from .duplicates import normalise_text, value_tokens

__all__ = ["FACT", "INSTRUCTION", "PREFERENCE", "RULES", "Standing", "StandingRules", "recognise", "sentences"]

INSTRUCTION = "instruction"
PREFERENCE = "preference"
#: A statement of the user's about themselves or their work that holds a value
#: or opens with the user as its subject ("The launch is on March 3.", "My
#: team has 5 people."): stored on its own so that a later statement of the
#: same subject supersedes it (`changes`).
FACT = "fact"

_OPENERS = r"^(?:(?:and|also|oh|ok|okay|so|but|please|pls|btw|by the way|one more thing|also,)[,:]?\s+)*"


def sentences(text: str) -> List[str]:
    """The sentences of ``text``, verbatim (stripped), in order: cut after
    ``.``, ``!`` or ``?`` followed by a space, after ``。！？``, and at
    every line break."""
    out: List[str] = []
    for line in text.splitlines():
        start = 0
        for match in re.finditer(r"[.!?]+(?=\s)|[。！？]+", line):
            piece = line[start : match.end()].strip()
            if piece:
                out.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            out.append(rest)
    return out


# A value in words: a number word, or a name (a capitalised word that does not open the sentence).
_NUMBER_WORD = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|thousand)\b"
)
_NAME = re.compile(r"(?<=\w[ ,])[A-Z][A-Za-z]+")
#: A fact is a sentence of at least this many words (CJK: characters / 2) ...
FACT_MIN_WORDS = 3
#: ... and at most this many: a longer one is an explanation, not a statement.
FACT_MAX_WORDS = 40


@dataclass(frozen=True)
class StandingRules:
    """The recognition tables: for each language, the patterns that make a
    sentence an instruction and those that make it a preference (matched
    with ``re.search`` on the normalised sentence); and, for facts, the
    openers that make the user a sentence's subject (``facts``) and those
    that make it a request instead (``requests``).

    Example:
        ```python
        rules = StandingRules({"en": ((r"^always\\b",), (r"^i prefer\\b",))})
        [s.kind for s in recognise("Always lint first.", rules)]   # ['instruction']
        ```
    """

    tables: Mapping[str, Tuple[Sequence[str], Sequence[str]]]
    facts: Sequence[str] = ()
    requests: Sequence[str] = ()
    _compiled: Tuple[Tuple[Pattern[str], ...], Tuple[Pattern[str], ...]] = field(init=False, repr=False, compare=False)
    _facts: Tuple[Optional[Pattern[str]], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        instructions: List[Pattern[str]] = []
        preferences: List[Pattern[str]] = []
        for language, pair in self.tables.items():
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError("StandingRules[%r] must be (instruction patterns, preference patterns)" % language)
            for patterns, into in zip(pair, (instructions, preferences)):
                for pattern in patterns:
                    try:
                        into.append(re.compile(pattern))
                    except re.error as err:
                        raise ValueError("StandingRules[%r]: bad pattern %r: %s" % (language, pattern, err)) from err
        object.__setattr__(self, "_compiled", (tuple(instructions), tuple(preferences)))
        joined = ["|".join("(?:%s)" % p for p in patterns) for patterns in (self.facts, self.requests)]
        try:
            compiled = tuple(re.compile(j) if j else None for j in joined)
        except re.error as err:
            raise ValueError("StandingRules facts/requests: bad pattern: %s" % err) from err
        object.__setattr__(self, "_facts", compiled)

    def kind(self, sentence: str) -> str:
        """``"instruction"``, ``"preference"``, ``"fact"`` or ``""`` for one sentence."""
        text = normalise_text(sentence)
        instructions, preferences = self._compiled
        if any(p.search(text) for p in instructions):
            return INSTRUCTION
        if any(p.search(text) for p in preferences):
            return PREFERENCE
        return FACT if self._fact(sentence, text) else ""

    def _fact(self, sentence: str, text: str) -> bool:
        """A statement (a subject and a relation word: `states`),
        not a question or a request, of a statement's length, that holds a
        value (a number, in digits or words, or a name) or opens with the
        user as its subject."""
        opener, request = self._facts
        if opener is None or sentence.rstrip().endswith(("?", "？")) or (request is not None and request.search(text)):
            return False
        size = len(text.split()) if " " in text else len(text) // 2
        if not FACT_MIN_WORDS <= size <= FACT_MAX_WORDS:
            return False
        holds_value = bool(value_tokens(text) or _NUMBER_WORD.search(text) or _NAME.search(sentence.strip()))
        return states(text) and (holds_value or bool(opener.search(text)))


_EN_ALWAYS = r"(?:always|never|not ever|no longer)"
#: The default tables. English, Spanish, German, French, Chinese.
RULES = StandingRules(
    {
        "en": (
            (
                _OPENERS + r"(?:always|never|don't|don’t|do not|dont|make sure (?:to|that|you)|be sure to"
                r"|remember to|avoid|stop|refrain from|from now on|going forward|in (?:the )?future"
                r"|for (?:all )?future|whenever you|every time you|each time you)\b",
                r"\b(?:from now on|going forward|from here on|for all future|for every future)\b",
                r"\b(?:every time|each time|whenever) you\b",
                r"\b(?:you should|you must|you need to|i want you to|i'd like you to|i would like you to"
                r"|please|can you|could you|will you)\s+" + _EN_ALWAYS + r"\b",
                r"\bdon't ever\b|\bdo not ever\b|\bnever ever\b",
            ),
            (
                _OPENERS + r"i(?:'d| would)? (?:really |much |generally |usually |strongly )?"
                r"(?:prefer|rather|like|love|dislike|hate|enjoy|can't stand|cannot stand|don't like|do not like"
                r"|don't love|do not love|don't enjoy|tend to prefer)\b",
                r"\bi(?:'d| would) (?:much )?rather\b",
                r"\bmy (?:favou?rite|preferred|go-to)\b",
                r"\bi(?:'m| am) (?:not )?(?:a (?:big |huge )?fan of|into)\b",
                r"\bi (?:really |much |generally )?prefer\b",
            ),
        ),
        "es": (
            (
                _OPENERS + r"(?:siempre|nunca|jamás|no (?:uses|me|sugieras|pongas|incluyas|escribas|hagas))\b",
                r"\b(?:a partir de ahora|de ahora en adelante|en el futuro|cada vez que)\b",
                r"\basegúrate de\b",
            ),
            (r"\b(?:prefiero|me gusta|me gustan|me encanta|me encantan|no me gusta|no me gustan|odio|detesto)\b",),
        ),
        "de": (
            (
                r"^(?:bitte\s+)?(?:immer|nie|niemals|verwende nie|benutze nie)\b",
                r"\b(?:ab jetzt|von nun an|ab sofort|in zukunft|jedes mal wenn du)\b",
                r"\bbitte (?:immer|nie|niemals|keine?)\b",
                r"\bachte darauf\b",
            ),
            (r"\bich (?:bevorzuge|mag|liebe|hasse|mag keine?|mag kein)\b|\bich hätte lieber\b|\blieber\b",),
        ),
        "fr": (
            (
                r"^(?:s'il te plaît,?\s+|s'il vous plaît,?\s+)?(?:toujours|jamais|ne (?:\w+ )?jamais)\b",
                r"\b(?:à partir de maintenant|dorénavant|désormais|à l'avenir|chaque fois que tu)\b",
                r"\bassure-toi de\b|\bn'oublie pas de\b",
            ),
            (r"\bje (?:préfère|déteste|n'aime pas|aime)\b|\bj'(?:aime|adore|ai horreur)\b",),
        ),
        "zh": (
            (
                r"^(?:请)?(?:总是|始终|永远|一定要|务必|不要|别|千万不要|记得)",
                r"(?:以后|今后)(?:请|都|要|不要|别|你|一律)|从现在开始|从今以后|从现在起|每次你",
                r"请(?:总是|始终|永远|一定|务必|不要|别)",
            ),
            (r"我(?:更|比较|很|非常|真的)?(?:喜欢|偏好|倾向于|讨厌|不喜欢|宁愿|宁可|爱用)",),
        ),
    },
    facts=(
        _OPENERS + r"(?:my|our|i|we|i'm|we're|i've|we've|i am|we are)\b",
        r"^(?:mi|mis|nuestro|nuestra|nuestros|yo|tengo|vivo|trabajo)\b",
        r"^(?:mein|meine|unser|unsere|ich|wir)\b",
        r"^(?:mon|ma|mes|notre|nos|je|j'|nous)\b",
        r"^(?:我|我们|我的)",
    ),
    requests=(
        _OPENERS + r"(?:i need|i want|i'd like|i would like|i was wondering|i wonder|i think|i guess|i hope"
        r"|i'm not sure|i am not sure|i'm trying|i am trying|i'm looking|i am looking|can|could|would|let's"
        r"|thanks|thank you|hi|hello|hey|here is|here's)\b",
    ),
)


@dataclass(frozen=True)
class Standing:
    """One recognised sentence: its kind and its text, verbatim."""

    kind: str
    text: str


def recognise(text: str, rules: StandingRules = RULES) -> List[Standing]:
    """The instructions and preferences stated in ``text`` (a user's
    message), each sentence at most once, in order (see the module)."""
    found: List[Standing] = []
    seen: set[str] = set()
    for sentence in sentences(text):
        kind = rules.kind(sentence)
        key = normalise_text(sentence)
        if kind and key not in seen:
            seen.add(key)
            found.append(Standing(kind, sentence))
    return found
