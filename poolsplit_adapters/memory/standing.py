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

The rules are deterministic, one table per language, matched per clause
(`clauses` of each of the `sentences`: a long sentence's parts after a
semicolon, a colon, a dash or ", and" / ", but" / ", so"),
case-insensitively, after the one text normalisation (`normalise_text`).
Code is never read: fenced blocks and lines that start like code or a
comment are dropped first (`prose`), and so are the lines quoted from
another speaker (a ``>`` quote, a pasted transcript's "Assistant:" line). In English:

* an **instruction** is an imperative with a **standing scope**, one that
  reaches beyond the current request: a clause that opens with a standing
  imperative ("always", "never", "don't", "make sure to", "be sure to",
  "remember to", "avoid", "stop ...ing", "make it a habit to"); or holds a
  standing marker anywhere ("from now on", "going forward", "every time
  you", "could you always"); or is an imperative (a bare verb, after "please",
  "can you", "make sure to", "I want you to", and after a leading phrase and
  a comma: "When I ask about X, include Y") with a scope somewhere in the
  clause: "whenever / every time / each time / any time I ...", "when / if
  I ask (about) ...", "in all / every / each ... answers, examples,
  snippets ...", "every example you give", "in your answers", "keep
  explanations brief", "by default", "as a rule", "next time I ...";
  or says what the answers should be ("I want the answers to be concise",
  "Every answer about X should ...");
* a **preference** says which the user chooses: "I prefer", "I'd rather",
  "I like / love / dislike / hate", with an adverb between ("I tend to
  favor", "I usually go with", "I generally lean towards", "I typically opt
  for"), a habit of choice ("I usually use X"), a choice against another
  ("I use X rather than Y"), "my preference / favourite / go-to / first
  choice", "I have a strong preference for", "my team prefers", "I'm a fan
  of / partial to / not keen on", "I'm more comfortable with", "I find X
  easier than Y"; a priority ("I prioritize X", "I value X more than Y"), a
  choice that holds now ("I'm sticking with X", "I'm focusing on X rather
  than Y"), and a decision that says what it was chosen over or for ("I went
  with X over Y", "I opted for X to keep the app lightweight"; in the present
  perfect a reason is enough: "I've chosen X because ..."), not a decision
  that says neither ("I decided to take a break") or only why, in the past
  ("I picked the red one because it was cheaper");
* **exceptions** make a clause neither, whatever it matches: idioms and
  statements ("never mind", "don't worry", "never had this problem", "make
  sure you saved it"), "always" that opens no imperative ("Always the same
  error"), a clause about what is in front of the user now ("this", "these",
  "below", "for now", "right now"; "this project" and "this team" last)
  unless it has a standing scope word, a question that asks rather than
  requests ("Should I always ...?"), a refusal ("I prefer not to say"), a
  reaction ("I like how this turned out");
* **someone else's words**: the clauses after one that reports them ("My
  colleague said: always use tabs", "The docs say: ..."; "I said: ..."
  stays the user's own) are neither (`StandingRules.reported`), nor is a
  sentence of bare markers with nothing they apply to ("Never.", "No,
  always!", "I prefer": `StandingRules.contentless`), the answer to a
  question it does not hold.

A one-off request is no instruction: "Please review this code.", "Can you
help me implement login?", "Make sure the test passes before we merge
this." An instruction marker wins over a preference marker in one sentence;
a sentence longer than `STANDING_MAX_WORDS` words is stored as its clause
that says it. Spanish, German, French and Chinese have tables of their own
(`RULES`). To change them, pass your own `StandingRules` to the write gate
(``WriteGate(standing=...)``), or ``standing=None`` to turn the recognition
off.

Measured by ``python benchmarks/standing.py`` (labelled user sentences
generated there, in five groups of templates written in turn; each sentence
alone and inside a long message with a fenced code block of instruction-like
comments and a trailing marker). On the group written after the last rule
change and never adjusted on (122 instructions and preferences, 50
negatives): recall 1.000 (0.336 with the rules before), false positives
0.020 (0.180 before); inside long messages recall 1.000 (0.287 before),
messages with anything else recognised 0.006 (0.663 before, mostly comments
in code blocks). The two groups each measured once before a round of
changes: recall 0.438 and 0.796 (before: 0.216 and 0.388), false
positives 0.019 and 0.060 (before: 0.204 and 0.240). Choices stated as
decisions and priorities, the way users state preferences in long
conversations, were recognised on 0.149 of a group written for them (its
instructions only); after the rules learned them, a group written
afterwards and never adjusted on: recall 0.934, false positives 0.000,
every earlier group unchanged.

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

from ..poolsplit import visible
from .changes import states
from .duplicates import normalise_text, value_tokens

__all__ = [
    "FACT",
    "INSTRUCTION",
    "PREFERENCE",
    "RULES",
    "STANDING_MAX_WORDS",
    "Standing",
    "StandingRules",
    "clauses",
    "prose",
    "recognise",
    "sentences",
]

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
    ``.``, ``!``, ``?`` or a full-width ``．`` followed by a space, after
    ``。！？``, and at every line break."""
    out: List[str] = []
    for line in text.splitlines():
        start = 0
        for match in re.finditer(r"[.!?．]+(?=\s)|[。！？]+", line):
            piece = line[start : match.end()].strip()
            if piece:
                out.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            out.append(rest)
    return out


# A fenced code block (``` or ~~~, to its closing fence or the end of the text), and a line of
# code or a comment pasted without one ("// never mutate props", "# always close it", ">>> x").
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n?.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_CODE_LINE = re.compile(r"^[ \t]*(?://|/\*|#|>>>|\$ ).*$", re.M)
# A line quoted from another speaker: a "> " quote, or a transcript's line labelled with a
# speaker who is not the user ("Assistant: ...", "**AI:** ...", "[Bot]: ...", "System: ..."),
# after any indent (a no-break space too) and list marker ("- ", "2) ").
_QUOTED_LINE = re.compile(
    r"^[^\S\n]*(?:(?:[-*+\u2022]|\d{1,3}[.)])[^\S\n]+)?"
    r"(?:>|[*_\[]{0,2}(?:assistant|ai|bot|chatbot|system)[^\S\n]*[\]*_]{0,2}[^\S\n]*:).*$",
    re.M | re.I,
)


def prose(text: str) -> str:
    """``text`` without its code and without the lines it quotes: fenced
    blocks, lines that start like code or a comment, and lines quoted from
    another speaker (a ``>`` quote, a pasted transcript's "Assistant:",
    "AI:", "Bot:" or "System:" line) become blank lines. A comment that
    reads like an instruction ("# always close the connection") is never
    taken for one, nor is what a bot said ("Here is what it told me:
    Assistant: Always answer in French."): that is not the user's word."""
    return _QUOTED_LINE.sub("", _CODE_LINE.sub("", _FENCE.sub("\n", text)))


# Where a sentence's clauses part: a semicolon, a dash between spaces, a colon, or a comma before
# a conjunction (", and", ", but", ", so").
_CLAUSE_BREAK = re.compile(
    r"\s*[;；]\s*|\s+[-–—]{1,2}\s+|:\s+|,\s+(?=(?:and|but|so|plus|also|then|or|y|pero|und|aber|et|mais)\b)",
    re.I,
)


def clauses(sentence: str) -> List[str]:
    """The clauses of one sentence, verbatim (stripped), in order: a user
    who writes one long sentence ("I set up the routes, and always include
    version numbers when I ask about dependencies") states an instruction
    in one of its clauses, which must open with it to be matched."""
    return [c for c in (part.strip() for part in _CLAUSE_BREAK.split(sentence)) if c]


# A trailing mark of symbols and numbers ("... every time ->-> 6,2"), not read as words.
_TRAILING_MARK = re.compile(r"\s+[^\w\s]+[\s\d,.;:]*$")

#: A sentence longer than this many words stores only its clause that
#: states the instruction or preference (it loads in a small pool).
STANDING_MAX_WORDS = 40


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
    clause an instruction and those that make it a preference (matched
    with ``re.search`` on the normalised clause: `clauses`); the
    ``exceptions``, patterns that make a clause neither, whatever else it
    matches (an idiom, a question, a clause about what is in front of the
    user now); and, for facts, the openers that make the user a sentence's
    subject (``facts``) and those that make it a request instead
    (``requests``).

    Example:
        ```python
        rules = StandingRules({"en": ((r"^always\\b",), (r"^i prefer\\b",))})
        [s.kind for s in recognise("Always lint first.", rules)]   # ['instruction']
        ```
    """

    tables: Mapping[str, Tuple[Sequence[str], Sequence[str]]]
    facts: Sequence[str] = ()
    requests: Sequence[str] = ()
    exceptions: Sequence[str] = ()
    #: Patterns of a whole sentence that states nothing ("Always.", "No,
    #: never!"): neither, whatever its clauses match.
    contentless: Sequence[str] = ()
    #: Patterns of a clause that reports someone else's words ("My colleague
    #: said", "The docs say"): the clauses after it in its sentence are that
    #: person's, never the user's instruction or preference.
    reported: Sequence[str] = ()
    _compiled: Tuple[Tuple[Pattern[str], ...], Tuple[Pattern[str], ...]] = field(init=False, repr=False, compare=False)
    _facts: Tuple[Optional[Pattern[str]], ...] = field(init=False, repr=False, compare=False)
    _exceptions: Tuple[Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _reported: Tuple[Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _contentless: Tuple[Pattern[str], ...] = field(init=False, repr=False, compare=False)

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
        exceptions: List[Pattern[str]] = []
        for pattern in self.exceptions:
            try:
                exceptions.append(re.compile(pattern))
            except re.error as err:
                raise ValueError("StandingRules exceptions: bad pattern %r: %s" % (pattern, err)) from err
        object.__setattr__(self, "_exceptions", tuple(exceptions))
        for name in ("reported", "contentless"):
            compiled_list: List[Pattern[str]] = []
            for pattern in getattr(self, name):
                try:
                    compiled_list.append(re.compile(pattern))
                except re.error as err:
                    raise ValueError("StandingRules %s: bad pattern %r: %s" % (name, pattern, err)) from err
            object.__setattr__(self, "_" + name, tuple(compiled_list))

    def kind(self, sentence: str) -> str:
        """``"instruction"``, ``"preference"``, ``"fact"`` or ``""`` for one sentence."""
        found = self.standing(sentence)
        if found is not None:
            return found[0]
        return FACT if self._fact(sentence, normalise_text(sentence)) else ""

    def standing(self, sentence: str) -> Optional[Tuple[str, str]]:
        """(kind, the clause that says it, verbatim) when one clause of
        ``sentence`` is an instruction, else when one is a preference (an
        instruction wins), else None."""
        instructions, preferences = self._compiled
        preferred: Optional[Tuple[str, str]] = None
        whole = _TRAILING_MARK.sub("", normalise_text(sentence).replace("\u2019", "'"))
        if any(p.search(whole) for p in self._contentless):
            return None
        for clause in clauses(sentence):
            text = _TRAILING_MARK.sub("", normalise_text(clause).replace("\u2019", "'"))
            if any(p.search(text) for p in self._reported):
                break  # what follows is someone else's words
            if any(p.search(text) for p in self._exceptions):
                continue
            if any(p.search(text) for p in instructions):
                return INSTRUCTION, clause
            if preferred is None and any(p.search(text) for p in preferences):
                preferred = PREFERENCE, clause
        return preferred

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


# --- The English tables, from their parts (each part a regex over one normalised clause). ---
# What may come before a clause's first word: fillers, bullets, "please". Taken whole, never
# given back (a lookahead holds it, a backreference takes it: an atomic group before Python
# 3.11): given back one filler at a time, every rule retried the rest of the clause after each,
# 15 s for a clause of 4,000 "pls,".
_LEAD = (
    r"^(?=(?P<lead>(?:(?:and|also|oh|ok|okay|so|but|plus|then|please|pls|kindly|just|btw|by the way"
    r"|one more thing|[-*•]|\d+[.)])[,:]?\s+)*))(?P=lead)"
)
# A clause's start: its beginning, or after any comma in it ("When I ask about X, include Y").
_START = _LEAD + r"(?:[^,]*,\s+)*?"
# Words that cannot open an imperative: pronouns, determiners, question words, auxiliaries,
# conjunctions, prepositions, greetings, adverbs of time.
_NOT_VERBS = (
    "i|i'm|i've|i'd|i'll|me|my|mine|we|we're|we've|we'd|we'll|our|us|you|you're|you've|your|he|she|it|it's|its"
    "|they|their|them|this|that|that's|these|those|there|there's|here|here's|the|a|an|some|any|all|every|each"
    "|no|none|not|what|what's|how|why|when|whenever|where|which|who|whose|whom|is|are|was|were|am|be|been|do"
    "|does|did|done|can|could|would|will|should|shall|may|might|must|have|has|had|if|and|but|so|or|nor"
    "|because|since|although|though|while|as|after|before|then|than|also|just|maybe|perhaps|now|yesterday"
    "|today|tomorrow|in|on|at|for|with|by|from|to|of|about|into|over|under|thanks|thank|hi|hello|hey|yes"
    "|yeah|no|nope|ok|okay|sure|great|cool|nice|awesome|well|oh|hmm|sorry|one|two|three|another|other|both"
    "|either|neither|more|most|less|much|many|few|very|too|only|even|still|again|already|always|never|ever"
    "|anyway|first|next|last|finally|otherwise|instead|however|let|lets|let's|please|kindly|to"
)
# A verb in its bare form opening an imperative: a word that is none of those, and does not end
# like a past tense, a third person, a gerund or an adverb ("reduced", "uses", "getting", "usually").
_VERB = (
    r"(?!(?:" + _NOT_VERBS + r")\b)"
    r"(?!(?:[\w-]*[^e]ed|[\w-]*[^su']s|(?!(?:bring|ping|ring|sing|string|swing)\b)[\w-]+ing|[\w-]*[^p]ly)\b)"
    r"[a-z][\w'-]*\b"
)
# What may stand between the start and the verb: a request's form ("can you", "make sure to").
_ASK = (
    r"(?:(?:please|kindly|also|just|always|(?:can|could|would|will) you(?: please)?(?: always)?"
    r"|i(?: want| need|'d like| would like) you to|make sure (?:to|you)|be sure to|remember to|try to"
    r"|let's|let us)\s+)*"
)
_IMPERATIVE = _START + _ASK + _VERB
# What the assistant gives: its answers, examples, snippets ...
_OUT = (
    r"(?:answer|response|reply|replie|explanation|example|snippet|sample|solution|suggestion|output|summar(?:y|ie)"
    r"|recommendation|implementation|code block|walkthrough|tutorial)"
)
# ... with up to two modifiers that are not determiners ("Python", "code"), not "the examples below".
_MOD = r"(?:(?!(?:the|this|these|those|that|my|our|his|her|their|a|an|any|all|every|each|your)\b)[\w+#.-]+ ){0,2}"
_NOT_HERE = r"(?! (?:below|above|here|i (?:sent|pasted|shared|gave|posted)|you (?:just|gave me earlier)))"
_OUTPUTS = _MOD + _OUT + r"s\b" + _NOT_HERE
# A standing scope: beyond the current request.
_SCOPE = r"\b(?:%s)" % "|".join(
    (
        # whenever / every time / each time I ... (or you ...)
        r"(?:whenever|every time|each time|any ?time|every single time) (?:i|we|you)\b",
        r"(?:when|if|once) (?:i|we) (?:ask|request|mention|bring up|talk about|discuss|need|want|'m asking"
        r"|am asking|'m working|am working|share|paste|send|give you|query|work)\b",
        r"(?:when|whenever|any ?time|every time|each time|next time) you (?:write|answer|show|give|explain"
        r"|suggest|provide|reply|respond|generate|share|recommend|help)\b",
        r"(?:if|when|whenever) you (?:give|show|send) me (?:any )?" + _OUTPUTS,
        r"next time (?:i|we)\b|(?:every|each) time[.!]?$|in general\b|whenever\b",
        # from now on, going forward, by default ...
        r"from now on|going forward|moving forward|from here on|from this point|henceforth|in (?:the )?future"
        r"|for (?:all )?future|for every future|by default|as a (?:general )?rule|at all times",
        # in all / every / each of the answers; every example you give
        r"(?:in|for|to|across|with|throughout|within) (?:all|every|each|any) (?:of )?(?:your |my |the )?"
        + _MOD
        + _OUT
        + r"s?\b"
        + _NOT_HERE,
        r"(?:all|every|each|any) " + _MOD + _OUT + r"s? (?:that )?you (?:give|write|show|send|provide|suggest"
        r"|generate|produce|share|create|make)",
        # answers in general: "in your answers", "keep explanations brief"
        r"(?:in|across|throughout|within|to) (?:all )?(?:of )?(?:your )?" + _OUTPUTS,
        r"(?:keep|make) (?:your |all (?:of )?(?:your )?)?" + _OUTPUTS,
        r", (?:always|ever)\b|ever again\b",
    )
)
_EN_INSTRUCTIONS = (
    # a standing imperative opens the clause
    _START + r"(?:please\s+|let's\s+|let us\s+)?(?:always|never|don't|don’t|do not|dont|make sure (?:to|that|you)"
    r"|make it a (?:habit|rule|point) to|be sure to"
    r"|remember to|avoid|stop \w+ing|refrain from|from now on|going forward|moving forward"
    r"|in (?:the )?future|for (?:all )?future|whenever you|every time you|each time you)\b",
    # a standing marker anywhere
    r"\b(?:from now on|going forward|moving forward|from here on|for all future|for every future|henceforth)\b",
    r"\b(?:every time|each time|whenever) you\b",
    r"\b(?:you should|you must|you need to|i want you to|i'd like you to|i would like you to"
    r"|please|can you|could you|will you|would you)\s+(?:always|never|not ever|no longer)\b",
    r"\bdon't ever\b|\bdo not ever\b|\bnever ever\b|\bif you (?:could )?(?:always|never)\b",
    # an imperative with a standing scope ("Please X whenever I ask about Y", "Keep answers short")
    r"^(?=.*" + _SCOPE + r")" + _IMPERATIVE,
    # what the answers should be ("I want the answers to be concise", "Examples should include tests")
    _START
    + r"i(?: want| need|'d like| would like| expect) (?:all (?:of )?)?(?:the |your )?"
    + _OUTPUTS
    + r" (?:to|should)\b",
    _START + r"(?:all (?:of )?)?(?:the |your )?" + _OUTPUTS + r" (?:should|must|need to|have to|ought to)\b",
    _START + r"(?:every|each|any) (?:single )?" + _MOD + _OUT + r" (?:(?:about|on|for|in|with|that mentions) [^,]+? )?"
    r"(?:should|must|needs to|has to|ought to)\b",
)
# An adverb between "I" and a verb of preference ("I tend to favor", "I usually go with").
_ADVERBS = (
    r"(?:(?:really|much|generally|usually|typically|normally|mostly|always|also|definitely|strongly|personally"
    r"|still|honestly|kind of|sort of|slightly|actually|do|often|tend to|rather)\s+)*"
)
# A choice stated as a decision is a preference when it says what it was chosen over or for
# ("I went with X over Y", "I opted for X to keep the app lightweight", "for simplicity"); in
# the present perfect ("I've chosen X", a choice that still holds) a reason is enough ("because
# ..."). Without either it is as likely a one-off: "I decided to take a break", "I picked the
# red one because it was cheaper".
_CHOSEN_FOR = (
    r"\b(?:over|rather than|instead of|more than|to (?:keep|preserve|ensure|avoid|reduce|improve|maintain|save"
    r"|stay|minimi[sz]e|maximi[sz]e|simplify|protect)|for (?:better|more|less|the sake|(?:\w+ )?(?:flexibility"
    r"|simplicity|speed|performance|reliability|clarity|control|consistency|security|privacy|portability"
    r"|convenience|readability|maintainability)))\b"
)
#: How far after the verb of a decision its "over Y" or "because ..." is looked for, in
#: characters: bounded, so that a clause of thousands of commas is read in linear time.
_WHY_WITHIN = 200
_DECIDED = (
    # still holds: a reason is enough
    r"(?:i|we)(?:'ve| have) " + _ADVERBS + r"(?:chosen|decided (?:on|to)|opted (?:for|to)|settled on|gone with)\b"
    r".{0,%d}?(?:" % _WHY_WITHIN + _CHOSEN_FOR + r"|\b(?:because|since|as it|as they|due to|so (?:that|it|i|we))\b)",
    # a past decision: what it was chosen over or for
    r"(?:i|we) "
    + _ADVERBS
    + r"(?:chose|decided (?:on|to)|opted (?:for|to)|settled on|went with)\b.{0,%d}?" % _WHY_WITHIN
    + _CHOSEN_FOR,
)
_EN_PREFERENCES = (
    _START + r"(?:i|we) " + _ADVERBS + r"(?:prefer|favou?r|lean (?:towards?|to)|gravitate towards?|opt for|like"
    r"|love|dislike|hate|enjoy|can't stand|cannot stand|(?:don't|do not) (?:really |much |particularly )?(?:like|love|enjoy)"
    r"|go with|go for|stick (?:with|to)|reach for|default to|swear by)\b",
    # a habit of choice ("I usually use X", "I typically pick X")
    _START + r"(?:i|we) (?:usually|generally|typically|normally|mostly|always|often|tend to)\s+(?:\w+\s+)?"
    r"(?:choose|pick|use|work with|select|build with|rely on|opt for)\b",
    # a choice against another ("I use X rather than Y")
    _START + r"(?:i|we) " + _ADVERBS + r"(?:use|write|pick|choose|build with|work with|run)\b[^,]*"
    r"\b(?:over|rather than|instead of|more than)\b",
    _START + r"(?:i|we)(?:'d| would) (?:much |really |definitely |probably |personally |always )?"
    r"(?:rather|prefer|go with|go for|stick with|choose|pick|opt for|lean)\b",
    r"\bi(?:'d| would) (?:much )?rather\b",
    r"\b(?:i|we)(?:'ve| have) (?:always |long |generally |usually )?(?:preferred|favou?red|liked|leaned"
    r"|gravitated|gone with|stuck with)\b",
    r"\bmy (?:general |personal |strong |usual |own )?(?:preference|favou?rite|preferred|go-to|default choice"
    r"|first choice|top choice|usual choice)\b",
    r"\b(?:i|we) (?:have|'ve got|have got) an? (?:\w+ )?(?:preference|soft spot|bias) (?:for|towards?)\b",
    r"\b(?:my|our) (?:team|company|org|group|shop) " + _ADVERBS + r"(?:prefers|favou?rs|leans towards?|likes"
    r"|goes with|sticks (?:with|to)|uses \S+ (?:rather than|instead of|over))\b",
    r"\bi(?:'m| am) (?:much |far |a lot |way )?(?:more comfortable|happier|more at home|more productive) "
    r"(?:with|using|in)\b",
    # (from its first "i find" only: a search from each of thousands took 3 s)
    r"^(?:(?!\bi find\b).)*\bi find\b.+\b(?:nicer|easier|better|simpler|cleaner|clearer|more \w+) (?:to [\w ]+ )?than\b",
    _LEAD + r"(?:for me|to me|personally|in my book),.*\b(?:beats|(?:is|are) (?:better|nicer|easier) than|wins over)\b",
    r"\bi(?:'m| am) (?:not |really |definitely |more )?(?:a (?:big |huge |real )?fan of|into|partial to|keen on"
    r"|biased towards?|more of an? [\w-]+ (?:person|guy|fan|user))\b",
    r"\b(?:i|we) " + _ADVERBS + r"(?:prefer|favou?r)\b",
    # a decision with what it is chosen over or why ("I've chosen X to keep the app lightweight")
    *(_START + decided for decided in _DECIDED),
    # a priority ("I prioritize X"), a value weighed against another ("I value X more than Y")
    _START + r"(?:i|we) " + _ADVERBS + r"(?:prioriti[sz]e[sd]?|put \S+(?: \S+)? first)\b",
    _START + r"(?:i|we) " + _ADVERBS + r"value\b[^,]*\b(?:over|more than|above)\b",
    # a standing choice in the present ("I'm sticking with X", "I'm focusing on X rather than Y")
    _START + r"(?:i|we)(?:'m| am|'re| are) " + _ADVERBS + r"(?:sticking (?:with|to)|going with|leaning (?:towards?|to)"
    r"|gravitating towards?)\b",
    _START + r"(?:i|we)(?:'m| am|'re| are) " + _ADVERBS + r"(?:focusing on|using|working with|building with"
    r"|relying on|going for)\b[^,]*\b(?:over|rather than|instead of|more than)\b",
)
# Words that show the clause is about what is in front of the user now ("this function", "for
# now"), which only a standing scope word overrides ("Always use this format."); read only up to
# a request the statement ends with, whose "this" is the request's.
_DEIXIS = (
    r"^(?!.*\b(?:always|never|ever|whenever|every time|each time|any ?time|from now on|going forward"
    r"|moving forward|from here on|from this point|future|by default|as a (?:general )?rule|in (?:all|every|each|any))\b)"
    # before any request that follows the statement ("I prefer X, can you help me with this?")
    r"(?:(?!,\s+(?:(?:can|could|would|will) you|do you|how (?:can|do|should|would) i)\b).)*?"
    r"\b(?:this(?! (?:project|team|repo|repository|codebase|app|company|conversation|chat|thread)\b)|these|those"
    r"|here|below|above|for now|right now|at the moment|for the moment|yet|today|tonight|the following)\b"
)
_EN_EXCEPTIONS = (
    # idioms and statements: "Never mind", "Don't know why", "Never had this problem"
    _START + r"(?:never mind|nevermind|don't (?:worry|know|understand|think|see|get|remember|care|mind|have"
    r"|need|bother)|do not (?:worry|know|understand|think|bother)|dont (?:worry|know)|never (?:[\w-]+[^e]ed|been"
    r"|seen|had|got|gotten|done|written|heard|thought|knew|known|made|taken|understood|gone|run|found|saw|did"
    r"|went|was|were|really)|make sure (?:that )?(?:you|it|they|we|i) (?:[\w-]+[^e]ed|have|'ve|had|did|were|was)"
    r"|when(?:ever)? you(?:'re| are) (?:ready|done|finished|free)|when(?:ever)? you (?:get|have) (?:a|the) (?:chance"
    r"|moment|minute|sec))\b",
    # "always" or "never" that opens no imperative: "Always the same error."
    _START + r"(?:always|never) (?:the|a|an|same|so|such|been|was|were|is|are|had|has|have|[\w-]+ing"
    r"|[\w-]+[^e]ed)\b",
    _DEIXIS,
    # a question about something, not a request ("Should I always ...?", "Do you prefer ...?")
    _LEAD + r"(?:what|how|why|where|which|who|whom|whose|is|are|was|were|do|does|did|have|has|should|am"
    r"|shall)\b.*\?$",
    # a refusal, a reaction: "I prefer not to say", "I like how this turned out"
    _START + r"i(?:'d| would)? (?:prefer|rather) not (?:to )?(?:say|share|discuss|answer|talk|go into|get into"
    r"|comment|disclose|tell|reveal|mention)\b",
    _START + r"(?:i|we) (?:really |absolutely |just |do )?(?:like|love|hate|dislike|enjoy) (?:it|this|that"
    r"|these|those|how|what|the way|your (?:answer|response|reply|explanation|suggestion|idea|approach)"
    r"|the (?:answer|idea|result|suggestion|approach|changes|update))\b",
)
# A sentence of markers with nothing they apply to ("Always.", "No, never!", "I prefer"): an
# answer to a question the stored sentence no longer holds, which would load in every later
# conversation. Only a whole sentence: "Always, and I mean always, include a test." says it.
_EN_CONTENTLESS = (
    r"^(?:(?:yes|yeah|yep|no|nope|sure|ok|okay|and|but|so|always|never|ever|again|not|do|don't|do not|dont"
    r"|please|pls|really|definitely|absolutely|of course|i(?:'d| would)? (?:\w+ )?(?:prefer|rather|like|love"
    r"|hate))\b[\s,.!?;:-]*)+$",
)
# Someone else's words reported ("My colleague said: always use tabs"): a clause that ends with a
# verb of saying whose subject is not the user ("I said: ..." stays the user's own).
_EN_REPORTED = (
    r"^(?!.*\b(?:i|we|i've|we've|i'd|we'd)\b).*\b(?:said|says|say|told (?:me|us)|tells? (?:me|us)|wrote|writes"
    r"|asked|asks|suggested|suggests|recommended|recommends|insisted|insists|claimed|claims|warned|warns|quoted"
    r"|put it|puts it|goes|went)$",
)

#: The default tables. English, Spanish, German, French, Chinese.
RULES = StandingRules(
    {
        "en": (_EN_INSTRUCTIONS, _EN_PREFERENCES),
        "es": (
            (
                _OPENERS + r"(?:siempre|nunca|jamás|no (?:uses|me|sugieras|pongas|incluyas|escribas|hagas))\b",
                r"\b(?:a partir de ahora|de ahora en adelante|en el futuro|cada vez que)\b",
                r"\basegúrate de\b",
                # "por favor" with "siempre" / "nunca" later in its clause
                r"\bpor favor\b,? [^,]*\b(?:siempre|nunca)\b",
                # the verb first, as Spanish says it ("Responde siempre en español.")
                r"^(?:por favor,?\s+)?(?:responde|contesta|escribe|usa|utiliza|incluye|añade|agrega|pon|dame|da"
                r"|muestra|explica|cita|menciona|indica|empieza|comienza|termina|evita|sigue|mantén|formatea"
                r"|comenta|documenta|habla|redacta|revisa)(?:me|nos)? (?:siempre|nunca|jamás)\b",
            ),
            (r"\b(?:prefiero|me gusta|me gustan|me encanta|me encantan|no me gusta|no me gustan|odio|detesto)\b",),
        ),
        "de": (
            (
                r"^(?:bitte\s+)?(?:immer|nie|niemals|verwende nie|benutze nie)\b",
                r"\b(?:ab jetzt|von nun an|ab sofort|in zukunft|jedes mal wenn du)\b",
                r"\bbitte (?:immer|nie|niemals|keine?)\b",
                r"\bachte darauf\b",
                # "bitte" with "immer" / "nie" later in its clause, "bei jedem / jeder ..."
                r"\bbitte\b,? [^,]*\b(?:immer|nie|niemals)\b",
                r"\bbei (?:jedem|jeder)\b[^,]*\b(?:immer|nie)\b",
                # the verb first, as German says it ("Antworte immer auf Deutsch.")
                r"^(?:bitte\s+)?(?:antworte|schreib|schreibe|nutze|benutze|verwende|gib|zeig|zeige|füge|füg|erkläre"
                r"|nenne|beginne|fang|halte|formatiere|kommentiere|sprich|vermeide|liste|nimm|setze)(?: mir| uns)?"
                r" (?:immer|nie|niemals)\b",
            ),
            (r"\bich (?:bevorzuge|mag|liebe|hasse|mag keine?|mag kein)\b|\bich hätte lieber\b|\blieber\b",),
        ),
        "fr": (
            (
                r"^(?:s'il te plaît,?\s+|s'il vous plaît,?\s+)?(?:toujours|jamais|ne (?:\w+ )?jamais)\b",
                r"\b(?:à partir de maintenant|dorénavant|désormais|à l'avenir|chaque fois que tu)\b",
                r"\bassure-toi de\b|\bn'oublie pas de\b",
                # the verb first, as French says it ("Réponds toujours en français.", "N'utilise jamais ...")
                r"^(?:s'il te plaît,?\s+|s'il vous plaît,?\s+)?(?:réponds|répondez|écris|écrivez|utilise|utilisez"
                r"|donne|donnez|montre|montrez|ajoute|ajoutez|inclus|incluez|explique|expliquez|cite|citez|mentionne"
                r"|mentionnez|commence|commencez|termine|terminez|évite|évitez|garde|gardez|formate|formatez|commente"
                r"|commentez|parle|parlez|mets|mettez)(?:-moi|-nous)? (?:toujours|jamais)\b",
                r"^n'(?!est\b|était\b|a\b|ai\b|avait\b|y\b)\w+ (?:\w+ )?jamais\b",
            ),
            (r"\bje (?:préfère|déteste|n'aime pas|aime)\b|\bj'(?:aime|adore|ai horreur)\b",),
        ),
        "zh": (
            (
                r"^(?:请)?(?:总是|始终|永远|一定要|务必|不要|别|千万不要|记得)",
                r"(?:以后|今后)(?:请|都|要|不要|别|你|一律)|从现在开始|从今以后|从现在起|每次你",
                r"请(?:总是|始终|永远|一定|务必|不要|别)",
                # "from now on" a few characters before a request: 以后回答时请 ...
                r"(?:以后|今后)[^。！？，,]{0,8}(?:请|都要|一律|不要|别)",
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
    exceptions=_EN_EXCEPTIONS,
    reported=_EN_REPORTED,
    contentless=_EN_CONTENTLESS,
)


@dataclass(frozen=True)
class Standing:
    """One recognised sentence: its kind and its text, verbatim."""

    kind: str
    text: str


def recognise(text: str, rules: StandingRules = RULES) -> List[Standing]:
    """The instructions, preferences and facts stated in ``text`` (a
    user's message), each sentence at most once, in order (see the module),
    as a reader sees it: without invisible format characters (`visible`).
    Code is never read (`prose`); a sentence longer than
    `STANDING_MAX_WORDS` words gives only the clause that states an
    instruction or preference."""
    found: List[Standing] = []
    seen: set[str] = set()
    # Read as a reader sees it (`visible`): a zero-width space after a "?" or
    # between ". " made a question a statement or two sentences one.
    for sentence in sentences(prose(visible(text))):
        key = normalise_text(sentence)
        if key in seen:
            continue
        standing = rules.standing(sentence)
        if standing is not None:
            kind, said = standing[0], (sentence if len(sentence.split()) <= STANDING_MAX_WORDS else standing[1])
        else:
            kind, said = (FACT if rules._fact(sentence, key) else ""), sentence
        if kind:
            seen.add(key)
            found.append(Standing(kind, said))
    return found
