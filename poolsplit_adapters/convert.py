"""Framework object <-> entry: the translation rules both adapters share.

A LangChain document and a LlamaIndex node with the same metadata become the
same entry and fail the same way. What an adapter writes back onto the
objects it returns (one metadata key, [`SELECTION_KEY`][]) is defined here
too, including the omission counts a formatter downstream may trust.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .index import MemoryIndex
from .memory.progressive import shown_summary
from .poolsplit import Chosen, EntryError, Scorer, TokenCounter, check_entry, given_token_count, near_miss_scope
from .render import expand_hint, marker, omission_line

_T = TypeVar("_T")
_S = TypeVar("_S")

#: Metadata key under which returned documents/nodes carry what the selector
#: decided: ``{"pool", "score", "always"}`` (LangChain documents add the
#: call's sealed omission counts). One namespaced key, so none of the
#: caller's own keys is overwritten.
SELECTION_KEY = "poolsplit"

# Omission counts travel in document metadata, which anyone can write. A
# formatter may only state counts this process produced, so each call's
# counts are sealed with a key that never leaves the process.
_SEAL_KEY = secrets.token_bytes(32)


def entry_of(content: str, metadata: Optional[Mapping[str, Any]], object_id: Optional[str]) -> Dict[str, Any]:
    """An entry from a framework object's parts, not yet checked: its
    metadata (copied: the object is never changed), plus ``content`` (the
    text) and ``id`` (the object's id, else ``metadata["id"]``)."""
    entry: Dict[str, Any] = dict(metadata) if metadata else {}
    entry.pop(SELECTION_KEY, None)  # what an earlier selection wrote is not input
    entry["content"] = content
    if object_id:
        entry["id"] = object_id
    return entry


def stored_parts(entry: Mapping[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """What a vector store keeps of an entry: ``(text, metadata)``, the
    entry's ``content`` and every other field but ``id``. The one rule of
    what is embedded, on every vector store: **the text only**.

    Why: the other fields change over an entry's life while its meaning
    does not (a repeat adds to ``seen``, a new version sets
    ``superseded_by`` and ``valid_to``); embedded with the text, each repeat
    moved the kept entry's vector and so its score. LangChain's vector
    stores embed a document's ``page_content`` only (the base
    ``add_documents``, ``InMemoryVectorStore``, ``PGVector``); a LlamaIndex
    node embeds its metadata unless excluded, so
    [`nodes_from`][poolsplit_adapters.llama_index.nodes_from] excludes every
    key of it (``excluded_embed_metadata_keys``).

    Example:
        >>> stored_parts({"id": "n1", "content": "Refunds round half-even.", "seen": []})
        ('Refunds round half-even.', {'seen': []})
    """
    return str(entry["content"]), {k: v for k, v in entry.items() if k not in ("content", "id")}


def check_converted(entry: Mapping[str, Any], *, kind: str, position: int) -> None:
    """The adapters' check of an entry made by `entry_of`: the
    core's [`check_entry`][], worded for
    the framework object (``document 'x': metadata field 'tags' ...``).

    Stricter than the core: metadata written by hand or by a loader is where
    a string ``tags``, a negative ``token_count`` or a ``scope`` of
    ``"Always"`` comes from, and each would be silently reinterpreted by the
    spec's lenient rules (the last: a correction that never loads first), so
    they are refused here with the object's id and the field.
    """
    try:
        check_entry(entry, position)
    except EntryError as err:
        where = "metadata field %r " % err.field if err.field and err.field != "content" else ""
        raise EntryError(
            "%s: %s%s" % (_label(entry, kind, position), where, err.problem),
            index=position,
            entry_id=err.entry_id,
            field=err.field,
        ) from None
    if entry.get("token_count") is not None and given_token_count(entry) is None:
        raise EntryError(
            "%s: metadata field 'token_count' must be a positive integer, got %r"
            % (_label(entry, kind, position), entry["token_count"]),
            index=position,
            entry_id=entry.get("id"),
            field="token_count",
        )
    if near_miss_scope(entry.get("scope")):
        raise EntryError(
            "%s: metadata field 'scope' is %r, not exactly 'always': scope is exact, so it would be "
            "contextual and never load first" % (_label(entry, kind, position), entry["scope"]),
            index=position,
            entry_id=entry.get("id"),
            field="scope",
        )


def _label(entry: Mapping[str, Any], kind: str, position: int) -> str:
    entry_id = entry.get("id")
    return (
        "%s %r" % (kind, entry_id) if isinstance(entry_id, str) and entry_id else "%s at position %d" % (kind, position)
    )


def entry_from(
    content: str,
    metadata: Optional[Mapping[str, Any]],
    object_id: Optional[str],
    *,
    kind: str,
    position: int,
) -> Dict[str, Any]:
    """The checked entry for a framework object (`entry_of`, then
    `check_converted`).

    Raises:
        EntryError: malformed metadata, naming the object and the field.
    """
    entry = entry_of(content, metadata, object_id)
    check_converted(entry, kind=kind, position=position)
    return entry


def index_from(
    objects: Iterable[_T],
    parts: Callable[[_T, int], Tuple[str, Optional[Mapping[str, Any]], Optional[str], _S]],
    *,
    kind: str,
    token_counter: TokenCounter,
    prepare_for: Sequence[Scorer] = (),
) -> Tuple[MemoryIndex, Dict[int, _S]]:
    """A [`MemoryIndex`][] over framework objects,
    and the way back from each entry (by ``id()``) to its object.

    ``parts(object, position)`` gives ``(content, metadata, id, original)``
    (raising ``TypeError`` for a foreign object). Each entry is checked
    once, by the index (an adapter that checked it first as well paid the
    check twice per object), yet fails exactly as `entry_from` would
    fail one by one: the first malformed object in input order, worded for
    the framework; a token counter's own error keeps the index's wording.
    ``prepare_for``: the scorers whose structures the index builds with the
    entries ([`MemoryIndex`][]'s keyword).
    """
    entries: List[Dict[str, Any]] = []
    source: Dict[int, _S] = {}
    for position, obj in enumerate(objects):
        try:
            content, metadata, object_id, original = parts(obj, position)
        except TypeError:
            _check_each(entries, kind)  # an earlier malformed object fails first
            raise
        entry = entry_of(content, metadata, object_id)
        entries.append(entry)
        source[id(entry)] = original
    for position, entry in enumerate(entries):
        if (entry.get("token_count") is not None and given_token_count(entry) is None) or near_miss_scope(
            entry.get("scope")
        ):
            _check_each(entries[: position + 1], kind)  # the adapters' stricter rules: raises
    try:
        index = MemoryIndex(entries, token_counter=token_counter, prepare_for=prepare_for)
    except EntryError as err:
        if err.index is not None and 0 <= err.index < len(entries):
            check_converted(entries[err.index], kind=kind, position=err.index)
        raise
    return index, source


def _check_each(entries: Sequence[Mapping[str, Any]], kind: str) -> None:
    for position, entry in enumerate(entries):
        check_converted(entry, kind=kind, position=position)


def selection_metadata(chosen: Chosen) -> Dict[str, Any]:
    """What a returned document/node carries under [`SELECTION_KEY`][]:
    ``{"pool", "score", "always"}``, plus ``"layer"`` when progressive
    loading loaded a lighter layer than the full text (absent otherwise, so
    a plain selection's metadata is exactly seed 001's)."""
    data: Dict[str, Any] = {"pool": chosen.pool, "score": chosen.score, "always": chosen.always}
    layer = str(chosen.layer)
    if layer != "full":
        data["layer"] = layer
    return data


def loaded_text(chosen: Chosen, content: str) -> str:
    """The text a returned document/node carries: its summary when a
    lighter layer loaded (the full text is one expand call away; returning
    it anyway would spend the tokens progressive loading saved), else
    ``content``."""
    summary = shown_summary(chosen.entry) if str(chosen.layer) != "full" else None
    return content if summary is None else summary


def new_call_id() -> str:
    """An id for one adapter call (what its sealed counts belong to)."""
    return uuid.uuid4().hex


def _seal(call: str, omitted: Mapping[str, int]) -> str:
    message = json.dumps([call, list(omitted.items())], separators=(",", ":")).encode()
    return hmac.new(_SEAL_KEY, message, hashlib.sha256).hexdigest()


def sealed_omissions(call: str, omitted: Mapping[str, int]) -> Dict[str, Any]:
    """``{"call", "omitted", "seal"}``: a call's per-pool omission counts,
    sealed so that `trusted_omissions` can tell them from counts
    written by anyone else."""
    counts = dict(omitted)
    return {"call": call, "omitted": counts, "seal": _seal(call, counts)}


def trusted_omissions(data: Mapping[str, Any]) -> Optional[Tuple[str, Dict[str, int]]]:
    """``(call, omitted)`` when ``data`` carries counts this process sealed
    (see `sealed_omissions`), else None: counts in a foreign
    document's metadata are data, not a statement this package made."""
    call, omitted, seal = data.get("call"), data.get("omitted"), data.get("seal")
    if not (isinstance(call, str) and isinstance(omitted, Mapping) and isinstance(seal, str)):
        return None
    if not all(isinstance(name, str) and type(count) is int and count >= 0 for name, count in omitted.items()):
        return None
    counts = dict(omitted)
    if not hmac.compare_digest(seal, _seal(call, counts)):
        return None
    return call, counts


def format_loaded(loaded: Iterable[Tuple[str, Mapping[str, Any], Optional[str], Callable[[], str]]]) -> str:
    """The prompt text of returned objects, each given as (text, metadata,
    id, its label for an error): LangChain's ``format_documents`` (see there
    for what it states and what it trusts).

    Raises:
        EntryError: an object whose ``metadata["poolsplit"]`` is not a
            mapping (naming it and the key).
    """
    blocks = []
    short = 0
    calls: Dict[str, Dict[str, int]] = {}
    for position, (content, metadata, object_id, label) in enumerate(loaded):
        data = metadata.get(SELECTION_KEY)
        if data is None:
            data = {}
        elif not isinstance(data, Mapping):
            problem = "must be the mapping this package writes, got %s" % type(data).__name__
            raise EntryError(
                "%s: metadata field %r %s" % (label(), SELECTION_KEY, problem),
                index=position,
                entry_id=object_id or None,
                field=SELECTION_KEY,
                problem=problem,
            )
        trusted = trusted_omissions(data)
        if trusted is not None:
            calls.setdefault(trusted[0], trusted[1])
        pool = data.get("pool")
        layer = data.get("layer")
        entry = dict(metadata)
        entry["content"] = content
        if object_id:
            entry["id"] = object_id
        if not (isinstance(layer, str) and layer != "full" and shown_summary(entry) is not None):
            layer = "full"  # a document's own claim of a lighter layer, without a summary to show
        blocks.append(marker(entry, pool if isinstance(pool, str) else None, layer))
        short += layer != "full"
    omitted: Dict[str, int] = {}
    for counts in calls.values():
        for name, count in counts.items():
            omitted[name] = omitted.get(name, 0) + count
    line = omission_line(omitted, "by budget or k")
    if line:
        blocks.append(line)
    if short:
        blocks.append(expand_hint(short))
    return "\n".join(blocks)


def entries_of(
    objects: Iterable[_T], to_entry: Callable[[_T, int], Dict[str, Any]], back: Callable[[_T], _S]
) -> Tuple[List[Dict[str, Any]], Dict[int, _S]]:
    """Entries for framework objects (``to_entry(object, position)``) and
    the way back to each (``back(object)``, by ``id`` of its entry)."""
    entries, source = [], {}
    for position, obj in enumerate(objects):
        entry = to_entry(obj, position)
        entries.append(entry)
        source[id(entry)] = back(obj)
    return entries, source
