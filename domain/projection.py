"""Sparse results: the ``fields`` argument of read tools that return entities (issue 14).

A read tool declares ``fields_of="<result field>"`` on its ``@tool``; the framework then

* adds the ``fields`` argument to its input model (:func:`with_fields_argument`);
* derives the names ``fields`` accepts from the output model — the top-level fields of the
  row model(s) held by that result field (:func:`row_models`); an unknown name is INVALID_INPUT;
* projects every row (or the one entity) after the handler ran (:func:`project`): the named
  fields plus the ids (``id``, or the ``…Id`` fields of a row without ``id``), always;
* with ``concise=True``, also drops empty values (null, ``[]``, ``""``) from rows the caller did
  not name — unless ``response_format`` is 'detailed';
* relaxes the published outputSchema of those rows (:func:`relax_rows`): only the ids stay
  required, so a client validating ``structuredContent`` accepts a sparse row.

Nothing per tool: a tool built later gets all of it by declaring ``fields_of``.
"""

from __future__ import annotations

import types
import typing
from typing import Any, TypeVar, Union

from pydantic import BaseModel, Field, create_model

from domain import errors

FIELDS_DESCRIPTION = "Row fields to return (ids always)."
MAX_FIELDS = 40


M = TypeVar("M", bound=BaseModel)


def with_fields_argument(model: type[M]) -> type[M]:
    """``model`` plus ``fields: list[str] | None`` (a subclass, so handlers keep their types)."""
    if "fields" in model.model_fields:
        return model
    return create_model(
        model.__name__,
        __base__=model,
        __module__=model.__module__,
        fields=(list[str] | None, Field(default=None, description=FIELDS_DESCRIPTION)),
    )


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    if origin in (list, tuple):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def row_models(output_model: type[BaseModel], field: str) -> list[type[BaseModel]]:
    """The model(s) of the rows (or the entity) in ``output_model.<field>``."""
    return _models_in(output_model.model_fields[field].annotation)


def id_fields(names: Any) -> frozenset[str]:
    names = set(names)
    if "id" in names:
        return frozenset({"id"})
    return frozenset(n for n in names if n.endswith("Id"))


def check(spec: Any, requested: list[str] | None) -> None:
    """INVALID_INPUT for a name the tool's rows do not have."""
    if requested is None:
        return
    if len(requested) > MAX_FIELDS:
        raise errors.invalid("fields", f"names more than {MAX_FIELDS} fields", "Name each field once.")
    unknown = [n for n in requested if n not in spec.allowed_fields]
    if unknown:
        raise errors.invalid(
            "fields",
            f"names unknown field(s) {', '.join(repr(n) for n in unknown[:5])}",
            f"Use top-level fields of the rows: {', '.join(sorted(spec.allowed_fields))}.",
        )


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == ""


def _row(row: Any, keep: frozenset[str] | None, named: frozenset[str], drop_empty: bool) -> Any:
    if not isinstance(row, dict):
        return row
    ids = id_fields(row)
    out = {}
    for k, v in row.items():
        if keep is not None and k not in keep and k not in ids:
            continue
        if drop_empty and k not in named and k not in ids and _empty(v):
            continue
        out[k] = v
    return out


def project(spec: Any, args: Any, result: dict[str, Any]) -> dict[str, Any]:
    """The result with the ``fields_of`` rows projected (in place; returned for convenience)."""
    requested = getattr(args, "fields", None)
    drop_empty = spec.concise and getattr(args, "response_format", "concise") != "detailed"
    if requested is None and not drop_empty:
        return result
    keep = frozenset(requested) if requested is not None else None
    named = keep or frozenset()
    value = result.get(spec.fields_of)
    if isinstance(value, list):
        result[spec.fields_of] = [_row(r, keep, named, drop_empty) for r in value]
    elif isinstance(value, dict):
        result[spec.fields_of] = _row(value, keep, named, drop_empty)
    return result


def relax_rows(schema: dict[str, Any], field: str) -> None:
    """In an outputSchema: the rows of ``field`` require only their ids (a sparse row validates)."""

    def relax(node: Any) -> None:
        if not isinstance(node, dict):
            return
        for branch in node.get("anyOf", []) + node.get("oneOf", []):
            relax(branch)
        kind = node.get("type")
        if kind == "array" or (isinstance(kind, list) and "array" in kind):
            relax(node.get("items"))
        if isinstance(node.get("properties"), dict) and "required" in node:
            ids = sorted(id_fields(node["properties"]))
            node["required"] = [r for r in node["required"] if r in ids]
            if not node["required"]:
                del node["required"]

    relax(schema.get("properties", {}).get(field))
