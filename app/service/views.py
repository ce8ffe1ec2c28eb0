"""Stored records -> the JSON the API answers with and the dashboard shows: built here only."""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import to_json

from app.service import schemas
from app.store.rows import EncodedResult, StoredTriage


def triage_view(stored: StoredTriage) -> dict[str, Any]:
    """``GET /v1/triage/{id}``: the result's data with the request's id, status, test and time."""
    result = stored.result
    view: dict[str, Any] = (
        result.data() if isinstance(result, EncodedResult) else dict(result) if result is not None else {}
    )
    view.update(_request_fields(stored))
    if stored.result is None:
        view.update({"options": stored.options, "error": stored.error})
    return view


def triage_summary(stored: StoredTriage) -> dict[str, Any]:
    """One row of ``GET /v1/triage`` and of the dashboard's list: no result data."""
    return {**_request_fields(stored), **stored.summary_index, "error": stored.error}


def _request_fields(stored: StoredTriage) -> dict[str, Any]:
    """The stored request's fields every view of a triage starts with."""
    return {
        "id": stored.id,
        "status": stored.status,
        "test_id": stored.test_id,
        "created_at": stored.created_at.isoformat() if stored.created_at else None,
    }


def _accepted(annotation: Any) -> tuple[tuple[type, ...], tuple[Any, ...]]:
    """The exact types a field's value may have to be served as it is, and a Literal's values."""
    found: list[type] = []
    values: tuple[Any, ...] = ()
    for arg in get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,):
        if arg is None or arg is NoneType:
            found.append(NoneType)
        elif get_origin(arg) is Literal:
            found.append(str)
            values = get_args(arg)
        else:
            found.append(get_origin(arg) or arg)
    return tuple(found), values


# a model's fields: name -> (default, the exact types served as they are, a Literal's values)
_Fields = dict[str, tuple[Any, tuple[type, ...], tuple[Any, ...]]]


def _fields(model: type[BaseModel]) -> _Fields:
    return {
        name: (None if f.is_required() else f.default, *_accepted(f.annotation))
        for name, f in model.model_fields.items()
    }


_TRIAGE_FIELDS = _fields(schemas.StoredTriage)
_ELEMENT_FIELDS = _fields(schemas.RankedElement)


def _as_served(
    item: dict[str, Any], fields: dict[str, tuple[Any, tuple[type, ...], tuple[Any, ...]]]
) -> bool:
    """Fill in ``item``'s missing fields with their defaults, as validation would; False when a
    value is not exactly of its field's type (validation would convert it)."""
    for name, (default, types, values) in fields.items():
        value = item.get(name, default)
        if name not in item:
            item[name] = default
        if type(value) not in types or (values and value not in values):
            return False
    return True


def served_view(view: dict[str, Any]) -> dict[str, Any]:
    """``view`` as ``StoredTriage`` serves it (``response_model``): its declared fields present,
    defaults filled in. Validating a whole result against the model to serve it took more of the
    server process than the rest of the route: a value validation would convert (an int score,
    an element that is not an object) is the only one that goes that way."""
    served = dict(view)
    ranking = served.get("ranking")
    plain = _as_served(served, _TRIAGE_FIELDS)
    if plain and ranking is not None:
        served["ranking"] = elements = [dict(e) if type(e) is dict else e for e in ranking]
        plain = all(type(e) is dict and _as_served(e, _ELEMENT_FIELDS) for e in elements)
    if not plain:
        return schemas.StoredTriage.model_validate(view).model_dump(mode="json")
    return served


# what ``triage_view`` adds to a result's data: the stored request's
_HEAD = {"id": 1, "status": "done", "test_id": None, "created_at": None}


def served_data(data: dict[str, Any]) -> bytes:
    """A finished result's data as ``GET /v1/triage/{id}`` serves it, without the stored
    request's fields (``served_triage`` puts them in): encoded where it was computed."""
    served = served_view({**data, **_HEAD})
    for key in _HEAD:
        del served[key]
    return _json(served)


def served_triage(stored: StoredTriage) -> bytes:
    """``triage_view(stored)`` encoded as the API serves it; a result a worker encoded is not
    decoded again: the stored request's fields go in front of it."""
    result = stored.result
    if not isinstance(result, EncodedResult):
        return _json(served_view(triage_view(stored)))
    head = _json(_request_fields(stored))
    return head if result.served == b"{}" else head[:-1] + b"," + result.served[1:]


def _json(value: Any) -> bytes:
    return to_json(value, inf_nan_mode="null")  # as the response model serves infinities and NaN
