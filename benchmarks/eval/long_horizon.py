"""A long-horizon labelled set: 14 months of an assistant's memories of the
people in a user's life, and evidence-labelled questions about them.

    python benchmarks/eval/long_horizon.py          # print its size and shape

Why it exists: the short set (``entries.jsonl``) is recent, so a scorer
whose recency factor buries anything older than 90 days looks fine on it.
Here the conversation runs from 2025-09-01 to ``NOW`` (2026-11-20), facts
are stated once at any point of it, and the daily chatter is as fresh as
the question: the case where relevance must come first.

How it is made (deterministic: a seeded generator, no file to keep in step):

* **36 people**, 24 talked about in English, 4 each in Spanish, German and
  Chinese (a third of the people, so well over 15% of the questions and
  memories are in another language). Each has a pet (species and name), a
  job, an allergy, a hobby taken up on some day, two moves (an early and a
  later one) and a sibling among the people of the same language.
* **Memory types**: ``fact`` (pet, job, sibling), ``preference`` (allergy),
  ``event`` (moves, the hobby; dated the day they happened), and the bulk:
  ``turn`` (five a day of conversation chatter that names the same people,
  their pets and cities: the lexical and recency distractors) and ``task``.
* **Questions**, each with the ids of its evidence:
  ``single`` (the pet's name), ``paraphrase`` (the job and the allergy,
  asked in other words than the memory uses), ``temporal`` (where someone
  moved in a given month; when a hobby started), ``multi-hop`` (where a
  person's sibling lives now: the sibling fact plus the sibling's *later*
  move; the name of a sibling's pet). A question is in the language its
  person is talked about in.

Ages: a fact's day is uniform over the 14 months, so most evidence is more
than 90 days old (the script prints the share).
"""

from __future__ import annotations

import collections
import datetime
import random
from typing import Any, Dict, List, Tuple

NOW = datetime.datetime(2026, 11, 20, 9, 0, 0)
START = datetime.date(2025, 9, 1)
DAYS = (NOW.date() - START).days
SEED = 19
TURNS_PER_DAY = 5

#: Word lists aligned across languages: index k is the same thing.
LANGUAGES = ("en", "es", "de", "zh")
PEOPLE = {
    "en": "Maya Tom Priya Owen Grace Liam Nora Ethan Chloe Sam Ava Leo Ruby Jack Isla Noah Zoe Ben Lily Max Ella Dan Amy Ravi".split(),
    "es": "Lucía Javier Carmen Diego".split(),
    "de": "Jürgen Anke Lukas Greta".split(),
    "zh": "王芳 李伟 张敏 刘洋".split(),
}
SPECIES = {
    "en": ["dog", "cat", "parrot", "rabbit", "turtle"],
    "es": ["perro", "gato", "loro", "conejo", "tortuga"],
    "de": ["Hund", "Katze", "Papagei", "Kaninchen", "Schildkröte"],
    "zh": ["狗", "猫", "鹦鹉", "兔子", "乌龟"],
}
PET_NAMES = (
    "Biscuit Luna Pepper Mango Olive Nacho Pixel Waffle Juniper Clover Ziggy Poppy Tofu Bruno Kiwi Maple".split()
)
JOBS = {
    "en": ["nurse", "teacher", "architect", "chef", "pilot", "accountant", "electrician", "dentist"],
    "es": ["enfermera", "profesora", "arquitecta", "cocinera", "piloto", "contable", "electricista", "dentista"],
    "de": ["Krankenpfleger", "Lehrer", "Architekt", "Koch", "Pilot", "Buchhalter", "Elektriker", "Zahnarzt"],
    "zh": ["护士", "老师", "建筑师", "厨师", "飞行员", "会计", "电工", "牙医"],
}
ORGS = ["Northwind", "Globex", "Initech", "Vandelay", "Acme", "Hooli", "Stark Clinic", "Riverside"]
CITIES = {
    "en": [
        "Lisbon",
        "Berlin",
        "Tokyo",
        "Toronto",
        "Sydney",
        "Cairo",
        "Seoul",
        "Rome",
        "Oslo",
        "Denver",
        "Dublin",
        "Porto",
    ],
    "es": [
        "Lisboa",
        "Berlín",
        "Tokio",
        "Toronto",
        "Sídney",
        "El Cairo",
        "Seúl",
        "Roma",
        "Oslo",
        "Denver",
        "Dublín",
        "Oporto",
    ],
    "de": [
        "Lissabon",
        "Berlin",
        "Tokio",
        "Toronto",
        "Sydney",
        "Kairo",
        "Seoul",
        "Rom",
        "Oslo",
        "Denver",
        "Dublin",
        "Porto",
    ],
    "zh": ["里斯本", "柏林", "东京", "多伦多", "悉尼", "开罗", "首尔", "罗马", "奥斯陆", "丹佛", "都柏林", "波尔图"],
}
HOBBIES = {
    "en": ["piano", "pottery", "salsa", "climbing", "chess", "painting", "swimming", "guitar"],
    "es": ["piano", "cerámica", "salsa", "escalada", "ajedrez", "pintura", "natación", "guitarra"],
    "de": ["Klavier", "Töpfern", "Salsa", "Klettern", "Schach", "Malen", "Schwimmen", "Gitarre"],
    "zh": ["钢琴", "陶艺", "萨尔萨舞", "攀岩", "象棋", "绘画", "游泳", "吉他"],
}
ALLERGENS = {
    "en": ["peanuts", "shellfish", "gluten", "dairy", "eggs", "sesame"],
    "es": ["cacahuetes", "marisco", "gluten", "lácteos", "huevos", "sésamo"],
    "de": ["Erdnüsse", "Meeresfrüchte", "Gluten", "Milchprodukte", "Eier", "Sesam"],
    "zh": ["花生", "贝类", "麸质", "乳制品", "鸡蛋", "芝麻"],
}
DISHES = {
    "en": ["lasagna", "ramen", "curry", "paella", "tacos", "risotto"],
    "es": ["lasaña", "ramen", "curry", "paella", "tacos", "risotto"],
    "de": ["Lasagne", "Ramen", "Curry", "Paella", "Tacos", "Risotto"],
    "zh": ["千层面", "拉面", "咖喱", "海鲜饭", "玉米饼", "烩饭"],
}
WEATHER = {
    "en": ["rainy", "sunny", "windy", "freezing", "humid"],
    "es": ["lluvioso", "soleado", "ventoso", "helado", "húmedo"],
    "de": ["regnerisch", "sonnig", "windig", "eiskalt", "schwül"],
    "zh": ["下雨", "晴朗", "刮风", "很冷", "潮湿"],
}
MONTHS = {
    "en": "January February March April May June July August September October November December".split(),
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split(),
    "zh": ["%d月" % m for m in range(1, 13)],
}
SIBLING = {
    "en": ("sister", "brother"),
    "es": ("hermana", "hermano"),
    "de": ("Schwester", "Bruder"),
    "zh": ("姐姐", "哥哥"),
}

#: Memory templates per language. Fields: p (person), q (other person), s
#: (species), n (pet name), j (job), o (org), c (city), h (hobby), a
#: (allergen), d (dish), w (weather), m (month name), y (year), r (relation).
MEMORY = {
    "en": {
        "pet": "{p} told me their {s} is named {n}.",
        "job": "{p} works as a {j} at {o}.",
        "sibling": "{q} is {p}'s {r}.",
        "allergy": "{p} is allergic to {a}.",
        "move": "{p} moved to {c} in {m} {y}.",
        "hobby": "{p} started taking {h} lessons this week.",
    },
    "es": {
        "pet": "{p} me contó que su {s} se llama {n}.",
        "job": "{p} trabaja de {j} en {o}.",
        "sibling": "{q} es la {r} de {p}.",
        "allergy": "{p} es alérgica a los {a}.",
        "move": "{p} se mudó a {c} en {m} de {y}.",
        "hobby": "{p} empezó clases de {h} esta semana.",
    },
    "de": {
        "pet": "{p} hat mir erzählt, dass der {s} {n} heißt.",
        "job": "{p} arbeitet als {j} bei {o}.",
        "sibling": "{q} ist die {r} von {p}.",
        "allergy": "{p} ist allergisch gegen {a}.",
        "move": "{p} ist im {m} {y} nach {c} gezogen.",
        "hobby": "{p} hat diese Woche mit {h}-Unterricht angefangen.",
    },
    "zh": {
        "pet": "{p}告诉我他的{s}叫{n}。",
        "job": "{p}在{o}当{j}。",
        "sibling": "{q}是{p}的{r}。",
        "allergy": "{p}对{a}过敏。",
        "move": "{p}在{y}年{m}搬到了{c}。",
        "hobby": "{p}这周开始上{h}课。",
    },
}
CHATTER = {
    "en": [
        "{p} asked me for a {d} recipe for the weekend.",
        "{p} said the weather in {c} was {w} today.",
        "{p} mentioned their {s} needs a vet visit soon.",
        "Chatted with {p} about a new series to watch.",
        "{p} wants to plan a trip and asked about flights to {c}.",
        "Reminded {p} about the dentist appointment on Friday.",
        "{p} and I talked about work being busy this month.",
        "{p} shared photos of a {d} they cooked.",
    ],
    "es": [
        "{p} me pidió una receta de {d} para el fin de semana.",
        "{p} dijo que hoy en {c} el tiempo estaba {w}.",
        "{p} comentó que su {s} tiene que ir al veterinario.",
        "Hablé con {p} sobre una serie nueva.",
        "{p} quiere planear un viaje y preguntó por vuelos a {c}.",
        "{p} compartió fotos de una {d} que cocinó.",
    ],
    "de": [
        "{p} hat nach einem Rezept für {d} am Wochenende gefragt.",
        "{p} sagte, das Wetter in {c} war heute {w}.",
        "{p} meinte, der {s} muss bald zum Tierarzt.",
        "Mit {p} über eine neue Serie geplaudert.",
        "{p} plant eine Reise und fragte nach Flügen nach {c}.",
        "{p} hat Fotos von {d} geschickt, das selbst gekocht war.",
    ],
    "zh": [
        "{p}问我周末做{d}的菜谱。",
        "{p}说今天{c}的天气{w}。",
        "{p}说他的{s}最近要去看兽医。",
        "和{p}聊了一部新剧。",
        "{p}想计划旅行，问了去{c}的机票。",
        "{p}发了自己做的{d}的照片。",
    ],
}
TASKS = {
    "en": "Book a table for {p}'s birthday dinner.",
    "es": "Reservar mesa para la cena de cumpleaños de {p}.",
    "de": "Einen Tisch für das Geburtstagsessen von {p} reservieren.",
    "zh": "给{p}的生日晚餐订位。",
}
QUESTION = {
    "en": {
        "single": "What is the name of {p}'s {s}?",
        "paraphrase_job": "What does {p} do for a living?",
        "paraphrase_allergy": "Which food should I avoid when cooking for {p}?",
        "temporal_move": "Where did {p} relocate in {m} {y}?",
        "temporal_hobby": "When did {p} begin learning {h}?",
        "multihop_home": "Which city does {p}'s {r} live in now?",
        "multihop_pet": "What is the name of the pet of {p}'s {r}?",
    },
    "es": {
        "single": "¿Cómo se llama el {s} de {p}?",
        "paraphrase_job": "¿A qué se dedica {p}?",
        "paraphrase_allergy": "¿Qué comida debo evitar si cocino para {p}?",
        "temporal_move": "¿Adónde se fue a vivir {p} en {m} de {y}?",
        "temporal_hobby": "¿Cuándo empezó {p} con {h}?",
        "multihop_home": "¿En qué ciudad vive ahora la {r} de {p}?",
        "multihop_pet": "¿Cómo se llama la mascota de la {r} de {p}?",
    },
    "de": {
        "single": "Wie heißt der {s} von {p}?",
        "paraphrase_job": "Was macht {p} beruflich?",
        "paraphrase_allergy": "Welches Essen sollte ich meiden, wenn ich für {p} koche?",
        "temporal_move": "Wohin ist {p} im {m} {y} umgezogen?",
        "temporal_hobby": "Wann hat {p} mit {h} begonnen?",
        "multihop_home": "In welcher Stadt wohnt die {r} von {p} jetzt?",
        "multihop_pet": "Wie heißt das Haustier der {r} von {p}?",
    },
    "zh": {
        "single": "{p}的{s}叫什么名字？",
        "paraphrase_job": "{p}是做什么工作的？",
        "paraphrase_allergy": "给{p}做饭时应该避开什么食物？",
        "temporal_move": "{p}在{y}年{m}搬去了哪里？",
        "temporal_hobby": "{p}什么时候开始学{h}的？",
        "multihop_home": "{p}的{r}现在住在哪个城市？",
        "multihop_pet": "{p}的{r}的宠物叫什么？",
    },
}
KIND = {
    "single": "single",
    "paraphrase_job": "paraphrase",
    "paraphrase_allergy": "paraphrase",
    "temporal_move": "temporal",
    "temporal_hobby": "temporal",
    "multihop_home": "multi-hop",
    "multihop_pet": "multi-hop",
}


def _stamp(day: int, rng: random.Random) -> str:
    moment = datetime.datetime.combine(START, datetime.time(8)) + datetime.timedelta(
        days=day, minutes=rng.randrange(12 * 60)
    )
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def build(turns_per_day: int = TURNS_PER_DAY) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(entries, questions), the same on every run; ``turns_per_day`` sets
    the chatter's density (fewer: a smaller, faster store for CI)."""
    rng = random.Random(SEED)
    entries: List[Dict[str, Any]] = []
    questions: List[Dict[str, Any]] = []
    people: List[Dict[str, Any]] = []
    for language in LANGUAGES:
        names = PEOPLE[language]
        for k, name in enumerate(names):
            people.append(
                {
                    "name": name,
                    "language": language,
                    "species": rng.randrange(len(SPECIES["en"])),
                    "pet": rng.choice(PET_NAMES),
                    "job": rng.randrange(len(JOBS["en"])),
                    "org": rng.choice(ORGS),
                    "allergen": rng.randrange(len(ALLERGENS["en"])),
                    "hobby": rng.randrange(len(HOBBIES["en"])),
                    "cities": rng.sample(range(len(CITIES["en"])), 2),
                    "sibling": names[(k + 1) % len(names)],
                    "relation": rng.randrange(2),
                }
            )
    by_name = {p["name"]: p for p in people}

    def add(kind: str, text: str, day: int, language: str, person: str) -> str:
        entry_id = "m%05d" % len(entries)
        entries.append(
            {
                "id": entry_id,
                "type": kind,
                "content": text,
                "created": _stamp(day, rng),
                "base_priority": {"fact": 6, "preference": 6, "event": 5, "task": 7, "turn": 5}[kind],
                "language": language,
                "about": person,
            }
        )
        return entry_id

    evidence: Dict[Tuple[str, str], str] = {}
    facts: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for person in people:
        lang, name = person["language"], person["name"]
        templates = MEMORY[lang]
        early = rng.randrange(0, DAYS // 2)
        late = rng.randrange(DAYS // 2 + 30, DAYS - 5)
        hobby_day = rng.randrange(0, DAYS - 10)
        for key, kind, day, fields in (
            ("pet", "fact", rng.randrange(DAYS), {"s": SPECIES[lang][person["species"]], "n": person["pet"]}),
            ("job", "fact", rng.randrange(DAYS), {"j": JOBS[lang][person["job"]], "o": person["org"]}),
            ("allergy", "preference", rng.randrange(DAYS), {"a": ALLERGENS[lang][person["allergen"]]}),
            ("hobby", "event", hobby_day, {"h": HOBBIES[lang][person["hobby"]]}),
            ("move_early", "event", early, {"c": CITIES[lang][person["cities"][0]]}),
            ("move_late", "event", late, {"c": CITIES[lang][person["cities"][1]]}),
        ):
            if key.startswith("move"):
                date = START + datetime.timedelta(days=day)
                fields = {**fields, "m": MONTHS[lang][date.month - 1], "y": date.year}
            template = templates["move" if key.startswith("move") else key]
            evidence[(name, key)] = add(kind, template.format(p=name, **fields), day, lang, name)
            facts[(name, key)] = {**fields, "day": day}
        sibling = person["sibling"]
        relation = SIBLING[lang][person["relation"]]
        evidence[(name, "sibling")] = add(
            "fact", templates["sibling"].format(p=name, q=sibling, r=relation), rng.randrange(DAYS), lang, name
        )
    # The daily chatter and a few tasks: the same people, pets and cities.
    for day in range(DAYS + 1):
        for _ in range(turns_per_day):
            person = rng.choice(people)
            lang = person["language"]
            text = rng.choice(CHATTER[lang]).format(
                p=person["name"],
                d=rng.choice(DISHES[lang]),
                c=rng.choice(CITIES[lang]),
                w=rng.choice(WEATHER[lang]),
                s=SPECIES[lang][person["species"]],
            )
            add("turn", text, day, lang, person["name"])
        if day % 9 == 0:
            person = rng.choice(people)
            add("task", TASKS[person["language"]].format(p=person["name"]), day, person["language"], person["name"])
    entries.sort(key=lambda e: (e["created"], e["id"]))

    for person in people:
        lang, name = person["language"], person["name"]
        sibling = by_name[person["sibling"]]
        relation = SIBLING[lang][person["relation"]]
        asked = QUESTION[lang]
        early = facts[(name, "move_early")]
        hobby = facts[(name, "hobby")]
        for key, fields, ids in (
            ("single", {"s": SPECIES[lang][person["species"]]}, [evidence[(name, "pet")]]),
            ("paraphrase_job", {}, [evidence[(name, "job")]]),
            ("paraphrase_allergy", {}, [evidence[(name, "allergy")]]),
            ("temporal_move", {"m": early["m"], "y": early["y"]}, [evidence[(name, "move_early")]]),
            ("temporal_hobby", {"h": hobby["h"]}, [evidence[(name, "hobby")]]),
            ("multihop_home", {"r": relation}, [evidence[(name, "sibling")], evidence[(sibling["name"], "move_late")]]),
            ("multihop_pet", {"r": relation}, [evidence[(name, "sibling")], evidence[(sibling["name"], "pet")]]),
        ):
            questions.append(
                {
                    "id": "q%03d" % len(questions),
                    "kind": KIND[key],
                    "language": lang,
                    "message": asked[key].format(p=name, **fields),
                    "evidence": ids,
                }
            )
    return entries, questions


def describe(entries: List[Dict[str, Any]], questions: List[Dict[str, Any]]) -> str:
    """A few lines on the set's shape (sizes, languages, evidence ages)."""
    created = {e["id"]: datetime.datetime.strptime(e["created"], "%Y-%m-%dT%H:%M:%SZ") for e in entries}
    ages = [(NOW - created[i]).days for q in questions for i in q["evidence"]]
    old = sum(1 for age in ages if age >= 90) / len(ages)
    other = sum(1 for q in questions if q["language"] != "en") / len(questions)
    other_entries = sum(1 for e in entries if e["language"] != "en") / len(entries)
    types = collections.Counter(e["type"] for e in entries)
    kinds = collections.Counter(q["kind"] for q in questions)
    first = min(e["created"] for e in entries)[:10]
    return (
        "%d memories from %s to %s (%s); %d questions (%s); other languages: %.0f%% of questions, %.0f%% of "
        "memories; evidence 90+ days old: %.0f%%"
        % (
            len(entries),
            first,
            NOW.date(),
            ", ".join("%s %d" % kv for kv in sorted(types.items())),
            len(questions),
            ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
            100 * other,
            100 * other_entries,
            100 * old,
        )
    )


if __name__ == "__main__":
    print(describe(*build()))
