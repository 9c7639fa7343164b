"""A synthetic catalog of tools shaped like the real ones (benchmarks only, never served).

``build(n, defer=True)`` declares ``n`` tools whose input and output models have the field
mix of the product's tools (ids, bounded strings, enums, optional ints, nested views), so a
benchmark can show what the catalog's size costs at import — with pydantic's ``defer_build``
(the product's setting) and without it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, create_model

from domain.registry import Registry, ToolInput, ToolOutput, ToolSpec


class _EagerIn(ToolInput):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=False)


class _EagerOut(ToolOutput):
    model_config = ConfigDict(extra="forbid", defer_build=False)


def build(n: int, *, defer: bool = True) -> Registry:
    base_in, base_out = (ToolInput, ToolOutput) if defer else (_EagerIn, _EagerOut)
    specs = []
    for i in range(n):
        view = create_model(
            f"View{i}",
            __base__=base_out,
            id=(str, ...),
            name=(str, ...),
            count=(int, Field(description="How many.")),
            updatedAt=(str, ...),
            archivedAt=(str | None, None),
            tags=(list[str], Field(default_factory=list)),
        )
        inp = create_model(
            f"Input{i}",
            __base__=base_in,
            taskId=(Annotated[str, Field(min_length=1, max_length=80, description="Task id.")], ...),
            title=(str | None, Field(default=None, min_length=1, max_length=500, description="Title.")),
            priority=(Literal["NONE", "LOW", "HIGH"] | None, Field(default=None, description="Priority.")),
            limit=(int, Field(default=50, ge=1, le=200, description="Page size.")),
            cursor=(str | None, Field(default=None, max_length=2048, description="Cursor.")),
            expectedUpdatedAt=(
                str | None,
                Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$", description="Guard."),
            ),
        )
        out = create_model(
            f"Output{i}", __base__=base_out, items=(list[view], ...), total=(int, ...), notice=(str | None, None)
        )
        specs.append(
            ToolSpec(
                name=f"synthetic_{i:02d}",
                title=f"Synthetic {i}",
                description="A synthetic tool for the catalog-growth benchmark.",
                area="tasks",
                scope="read",
                read_only=True,
                input_model=inp,
                output_model=out,
                handler=lambda ctx, args: {"items": [], "total": 0, "notice": None},
            )
        )
    return Registry(specs)
