"""Read-only JSON data: a sweep candidate's tags and a Triton source's constexprs, deep-copied and frozen
when they are made (both are hashed into ids).

`freeze(value)` copies JSON-serialisable data, every dict a FrozenDict and
every list a FrozenList (tuples stay tuples, their items frozen); `thaw`
copies it back into plain dicts and lists. Both subclass their built-in, so
they compare equal to the data they were made from, print as it does,
`isinstance(tags, dict)` holds and `json.dumps` writes them byte for byte as
it wrote the original (a candidate's id hashes that text: ids are unchanged);
every method that would change one raises TypeError instead. They pickle and
copy as themselves.
"""
from __future__ import annotations

from typing import Any, NoReturn

from ._values import show

__all__ = ["FrozenDict", "FrozenList", "freeze", "thaw"]


def _read_only(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{show(self)}: a candidate's tags are read-only (its id hashes them); expected a new "
                    "Candidate for other tags: dataclasses.replace(candidate, tags={...})")


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict that cannot change (see the module docstring)."""
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:
        return type(self), (dict(self),)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


class FrozenList(list):  # type: ignore[type-arg]
    """A list that cannot change (see the module docstring)."""
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = clear = extend = insert = pop = remove = reverse = sort = _read_only

    def __reduce__(self) -> tuple[type, tuple[list[Any]]]:
        return type(self), (list(self),)

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self


def freeze(value: Any) -> Any:
    """A frozen deep copy of JSON-serialisable `value`."""
    if isinstance(value, dict):
        return FrozenDict((key, freeze(item)) for key, item in value.items())
    if isinstance(value, list):
        return FrozenList(freeze(item) for item in value)
    if isinstance(value, tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A plain deep copy of `value` (dicts and lists the caller may change)."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value
