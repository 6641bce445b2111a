"""A candidate's tags as a person reads them: in a result's label, a sweep's summary and its best line."""
from __future__ import annotations

import json

__all__ = ["tags_text"]


def tags_text(tags: object) -> str:
    """A candidate's tags as a person reads them, after a space: ` BLOCK_M=64 num_warps=4` for a mapping,
    its JSON for anything else; "" for none. Frozen tags (a candidate's) read as the data they were made of:
    their types subclass dict and list."""
    if not tags:
        return ""
    if isinstance(tags, dict):
        return "".join(f" {key}={json.dumps(value) if not isinstance(value, str) else value}"
                       for key, value in tags.items())
    return f" {json.dumps(tags)}"
