"""The tool registry: one :class:`ToolSpec` per tool, the single source of every definition.

``tools/list``, docs/tools.md and the schema snapshot are all generated from here. A spec
holds the seed's scope class and flags (read-only / destructive / idempotent), whether the
tool takes an ``idempotencyKey`` (``keyed``), the pydantic input and output models, and the
handler. Schemas are emitted inline (no ``$ref``), with ``additionalProperties: false`` and a
plain ``type: object`` root (ARCHITECTURE §2).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from domain.auth import Role, Scope


class ToolInput(BaseModel):
    """Base of every tool's arguments: unknown fields are refused, types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ToolOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    scope: Scope
    read_only: bool
    destructive: bool
    idempotent: bool
    keyed: bool
    min_role: Role | None
    input_model: type[ToolInput]
    output_model: type[ToolOutput]
    handler: Callable[..., Any]

    def annotations(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    def definition(self) -> dict[str, Any]:
        """The MCP ``Tool`` object served by ``tools/list`` (built once per process; read-only).

        Generating the schemas costs a few milliseconds per tool, so every ``tools/list`` page
        would otherwise redo ~50 ms of identical work.
        """
        cached = _DEFINITIONS.get(self.name)
        if cached is None:
            cached = _DEFINITIONS[self.name] = {
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "inputSchema": json_schema(self.input_model, mode="validation"),
                "outputSchema": json_schema(self.output_model, mode="serialization"),
                "annotations": self.annotations(),
            }
        return cached


_DEFINITIONS: dict[str, dict[str, Any]] = {}


REGISTRY: dict[str, ToolSpec] = {}


def tool(
    name: str,
    *,
    title: str,
    description: str,
    scope: Scope,
    input_model: type[ToolInput],
    output_model: type[ToolOutput],
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    keyed: bool = False,
    min_role: Role | None = "MEMBER",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``handler(ctx, args) -> output_model | dict`` as the tool ``name``."""

    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY:
            raise ValueError(f"tool {name} registered twice")
        if keyed and "idempotencyKey" not in input_model.model_fields:
            raise ValueError(f"keyed tool {name} must accept idempotencyKey")
        REGISTRY[name] = ToolSpec(
            name, title, description.strip(), scope, read_only, destructive, idempotent, keyed, min_role,
            input_model, output_model, handler,
        )
        return handler

    return register


def ordered() -> list[ToolSpec]:
    """Every tool in the stable order ``tools/list`` pages through (by name)."""
    load_tools()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def get(name: str) -> ToolSpec | None:
    load_tools()
    return REGISTRY.get(name)


def load_tools() -> None:
    """Import every tool module once so its ``@tool`` registrations run."""
    import domain.tools  # noqa: F401


def json_schema(model: type[BaseModel], *, mode: str) -> dict[str, Any]:
    """The model's JSON Schema with every ``$ref`` inlined and pydantic's titles dropped."""
    raw = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    defs = raw.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = copy.deepcopy(defs[node["$ref"].split("/")[-1]])
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **extra})
            out = {}
            for k, v in node.items():
                if k == "title" and isinstance(v, str):
                    continue
                if k == "properties":
                    out[k] = {pk: walk(pv) for pk, pv in v.items()}
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node

    schema = walk(raw)
    schema["type"] = "object"
    if mode == "validation":
        schema["additionalProperties"] = False
    return schema
