"""Framework object <-> entry: the translation rules both adapters share.

A LangChain document and a LlamaIndex node with the same metadata become the
same entry and fail the same way. What an adapter writes back onto the
objects it returns (one metadata key, :data:`SELECTION_KEY`) is defined here
too, including the omission counts a formatter downstream may trust.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import uuid
from typing import Any, Dict, Mapping, Optional, Tuple

from .poolsplit import Chosen, EntryError, check_entry, given_token_count

#: Metadata key under which returned documents/nodes carry what the selector
#: decided: ``{"pool", "score", "always"}`` (LangChain documents add the
#: call's sealed omission counts). One namespaced key, so none of the
#: caller's own keys is overwritten.
SELECTION_KEY = "poolsplit"

# Omission counts travel in document metadata, which anyone can write. A
# formatter may only state counts this process produced, so each call's
# counts are sealed with a key that never leaves the process.
_SEAL_KEY = secrets.token_bytes(32)


def entry_from(
    content: str,
    metadata: Optional[Mapping[str, Any]],
    object_id: Optional[str],
    *,
    kind: str,
    position: int,
) -> Dict[str, Any]:
    """An entry from a framework object: its metadata, plus ``content`` (the
    text) and ``id`` (the object's id, else ``metadata["id"]``).

    Stricter than the core: metadata written by hand or by a loader is where
    a string ``tags`` or a negative ``token_count`` comes from, and both would
    be silently reinterpreted by the spec's lenient rules, so they are
    refused here with the object's id and the field.
    """
    entry: Dict[str, Any] = dict(metadata or {})
    entry.pop(SELECTION_KEY, None)  # what an earlier selection wrote is not input
    entry["content"] = content
    if object_id:
        entry["id"] = object_id
    label = (
        "%s %r" % (kind, entry["id"])
        if isinstance(entry.get("id"), str) and entry["id"]
        else ("%s at position %d" % (kind, position))
    )
    try:
        check_entry(entry, position)
    except EntryError as err:
        where = "metadata field %r " % err.field if err.field and err.field != "content" else ""
        raise EntryError(
            "%s: %s%s" % (label, where, err.problem), index=position, entry_id=err.entry_id, field=err.field
        ) from None
    if "token_count" in entry and entry["token_count"] is not None and given_token_count(entry) is None:
        raise EntryError(
            "%s: metadata field 'token_count' must be a positive integer, got %r" % (label, entry["token_count"]),
            index=position,
            entry_id=entry.get("id"),
            field="token_count",
        )
    return entry


def selection_metadata(chosen: Chosen) -> Dict[str, Any]:
    """What a returned document/node carries under :data:`SELECTION_KEY`:
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
    if str(chosen.layer) != "full":
        summary = chosen.entry.get("summary")
        if isinstance(summary, str) and summary.strip():
            return summary
    return content


def new_call_id() -> str:
    """An id for one adapter call (what its sealed counts belong to)."""
    return uuid.uuid4().hex


def _seal(call: str, omitted: Mapping[str, int]) -> str:
    message = json.dumps([call, list(omitted.items())], separators=(",", ":")).encode()
    return hmac.new(_SEAL_KEY, message, hashlib.sha256).hexdigest()


def sealed_omissions(call: str, omitted: Mapping[str, int]) -> Dict[str, Any]:
    """``{"call", "omitted", "seal"}``: a call's per-pool omission counts,
    sealed so that :func:`trusted_omissions` can tell them from counts
    written by anyone else."""
    counts = dict(omitted)
    return {"call": call, "omitted": counts, "seal": _seal(call, counts)}


def trusted_omissions(data: Mapping[str, Any]) -> Optional[Tuple[str, Dict[str, int]]]:
    """``(call, omitted)`` when ``data`` carries counts this process sealed
    (see :func:`sealed_omissions`), else None: counts in a foreign
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
