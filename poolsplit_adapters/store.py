"""Loading stores (JSON Lines) and pool plans (TOML).

Kept importable here; the code lives in `poolsplit_adapters.stores.files`
beside the other stores.
"""

from __future__ import annotations

from .stores.files import (
    POOL_KEYS,
    InputFileError,
    PathLike,
    bundled_pools,
    bundled_store,
    dump_store,
    load_pools,
    load_store,
)

__all__ = [
    "POOL_KEYS",
    "InputFileError",
    "PathLike",
    "bundled_pools",
    "bundled_store",
    "dump_store",
    "load_pools",
    "load_store",
]
