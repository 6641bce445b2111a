"""A source's content from its JSON: exactly one of a file ("path"), "text" or "base64" bytes."""
from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from .._codeobject.image import read_image
from .._values import show
from ..errors import BenchError

__all__ = ["content"]


def content(data: dict[str, Any], base: Path, forms: tuple[str, ...]) -> tuple[bytes, str | None]:
    """(bytes, path) from exactly one of the fields in `forms`: "path" (relative to `base`), "text" or
    "base64"."""
    given = [f for f in forms if f in data]
    if len(given) != 1:
        raise BenchError(f"source {show(data)}: expected exactly one of {', '.join(forms)}")
    field, value = given[0], data[given[0]]
    if not isinstance(value, str):
        raise BenchError(f"source {field}={show(value)}: expected a string")
    if field == "path":
        path = (base / value) if not os.path.isabs(value) else Path(value)
        return read_image(path), str(path)
    if field == "text":
        return value.encode(), None
    try:
        return base64.b64decode(value, validate=True), None
    except ValueError:
        raise BenchError(f"source base64={show(value)}: not valid base64") from None
