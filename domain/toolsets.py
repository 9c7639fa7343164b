"""Toolsets and read-only mode: which tools one connection is served (docs/tools.md, "Toolsets").

Every tool belongs to exactly one toolset, its ``area`` (:data:`domain.registry.AREAS`). A
connection narrows what it is served with *layers*, each a :class:`Layer`:

* the server-wide layer, from the environment (``JENTRIX_MCP_TOOLSETS``, ``JENTRIX_MCP_TOOLS``,
  ``JENTRIX_MCP_READONLY``) — an upper bound nothing per-request can widen;
* over HTTP, the URL (``/api/mcp/readonly``, ``/api/mcp/x/<toolset>[,<toolset>…][/readonly]``)
  and the headers ``X-MCP-Toolsets``, ``X-MCP-Tools``, ``X-MCP-Readonly``;
* over stdio, the flags ``--toolsets``, ``--tools``, ``--read-only``.

A tool is served when every layer lets it through. Within one layer: a name list is comma
separated, ``-name`` excludes; the inclusions are the union of the named toolsets and tools (no
inclusion at all = everything); exclusions win over inclusions; read-only removes every tool that
is not ``readOnlyHint`` — even one named in the tool list. Each layer remembers the label of the
setting that set it, so a call of a hidden tool can say which setting hides it.

Opt-in toolsets (:data:`OPT_IN`: ``coordination``) are served only when a layer asks for them:
a layer that names the toolset or one of its tools, or a transport's default layer that turns it
on (:data:`OPT_IN_ON`; the stdio adapter, ``jentrix mcp``, adds it). The remote default listing
leaves them out, so the everyday token budget holds; ``/api/mcp/x/coordination`` or
``X-MCP-Toolsets: coordination`` serve them over HTTP.

Scope is not a layer: a read-scope token's ``tools/list`` leaves out the tools its scope cannot
call (:func:`listable`), but calling one still answers the FORBIDDEN envelope.

Filtering is cheap: the protocol layer caches the filtered, pre-built definitions per
(layers, scopes) key; with no layer at all it serves the unfiltered list as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from domain.registry import AREAS, Registry, ToolSpec

OPT_IN: frozenset[str] = frozenset({"coordination"})
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
URL_PREFIX = "/api/mcp"


class SelectionError(ValueError):
    """A toolset/tool selection names something unknown or is malformed (the message says what)."""


@dataclass(frozen=True)
class Layer:
    """One source's choice. ``None`` inclusions mean "no inclusion list" (everything)."""

    toolsets: frozenset[str] | None = None
    tools: frozenset[str] | None = None
    exclude_toolsets: frozenset[str] = frozenset()
    exclude_tools: frozenset[str] = frozenset()
    read_only: bool = False
    # opt-in toolsets this layer turns on without narrowing anything else (a transport's default)
    opt_in: frozenset[str] = frozenset()
    # labels naming the setting behind each part, for messages
    toolsets_label: str = ""
    tools_label: str = ""
    read_only_label: str = ""

    @property
    def empty(self) -> bool:
        return (
            self.toolsets is None
            and self.tools is None
            and not self.exclude_toolsets
            and not self.exclude_tools
            and not self.read_only
            and not self.opt_in
        )

    def asks_for(self, spec: ToolSpec) -> bool:
        """Whether this layer turns on ``spec``'s opt-in toolset (names it, names the tool, or opts in)."""
        return spec.area in self.opt_in or spec.area in (self.toolsets or ()) or spec.name in (self.tools or ())

    def hides(self, spec: ToolSpec) -> str | None:
        """The label of the setting in this layer that hides ``spec``, or ``None`` if it is served."""
        if self.read_only and not spec.read_only:
            return f"{self.read_only_label} (read-only mode)"
        if spec.name in self.exclude_tools:
            return f"{self.tools_label} (excludes it)"
        if spec.area in self.exclude_toolsets:
            return f"{self.toolsets_label} (excludes the {spec.area} toolset)"
        if self.toolsets is None and self.tools is None:
            return None
        if spec.area in (self.toolsets or ()) or spec.name in (self.tools or ()):
            return None
        labels = [
            label
            for label, given in ((self.toolsets_label, self.toolsets), (self.tools_label, self.tools))
            if given is not None
        ]
        return f"{' and '.join(labels)} (does not include it; it is in the {spec.area} toolset)"


Layers = tuple[Layer, ...]

#: the stdio adapter's default layer: every opt-in toolset on, nothing else narrowed
OPT_IN_ON = Layer(opt_in=OPT_IN)


def hidden_by(spec: ToolSpec, layers: Iterable[Layer]) -> str | None:
    """The first layer's reason for hiding ``spec`` (the server-wide layer comes first)."""
    for layer in layers:
        reason = layer.hides(spec)
        if reason is not None:
            return reason
    if spec.area in OPT_IN and not any(layer.asks_for(spec) for layer in layers):
        return (
            f"the default selection (the {spec.area} toolset is served only when asked for: "
            f"/api/mcp/x/{spec.area}, the X-MCP-Toolsets header, or jentrix mcp)"
        )
    return None


def listable(spec: ToolSpec, scopes: Iterable[str]) -> bool:
    """Whether a token with ``scopes`` sees ``spec`` in tools/list (it may still call it: FORBIDDEN)."""
    return spec.scope in tuple(scopes)


@cache
def effective(registry: Registry, layers: Layers) -> tuple[tuple[str, ...], bool]:
    """(toolsets with at least one served tool, in catalog order; whether read-only is in force)."""
    served = {s.area for s in registry if hidden_by(s, layers) is None}
    return tuple(a for a in AREAS if a in served), any(layer.read_only for layer in layers)


# -- parsing ---------------------------------------------------------------------------------------
def _names(
    value: str | None, *, known: Iterable[str], what: str, label: str
) -> tuple[frozenset[str] | None, frozenset[str]]:
    if value is None:
        return None, frozenset()
    include: set[str] = set()
    exclude: set[str] = set()
    known_set = set(known)
    for raw in value.split(","):
        name = raw.strip()
        if not name:
            continue
        target = exclude if name.startswith("-") else include
        name = name.removeprefix("-").strip()
        if name not in known_set:
            choices = (
                ", ".join(sorted(known_set)) if what == "toolset" else "the names tools/list shows without a selection"
            )
            raise SelectionError(f"{label} names an unknown {what} {name!r}; use {choices}.")
        target.add(name)
    return (frozenset(include) if include else None), frozenset(exclude)


def _flag(value: str | None, *, label: str) -> bool:
    if value is None:
        return False
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SelectionError(f"{label} must be true or false, not {value!r}.")


def layer(
    registry: Registry,
    *,
    toolsets: str | None = None,
    tools: str | None = None,
    read_only: str | bool | None = None,
    labels: tuple[str, str, str],
) -> Layer:
    """Parse one source's three settings; ``labels`` name them (toolsets, tools, read-only)."""
    ts_label, tool_label, ro_label = labels
    inc_ts, exc_ts = _names(toolsets, known=AREAS, what="toolset", label=ts_label)
    inc_tools, exc_tools = _names(tools, known=_known_tools(registry), what="tool", label=tool_label)
    ro = read_only if isinstance(read_only, bool) else _flag(read_only, label=ro_label)
    return Layer(
        toolsets=inc_ts,
        tools=inc_tools,
        exclude_toolsets=exc_ts,
        exclude_tools=exc_tools,
        read_only=ro,
        toolsets_label=ts_label,
        tools_label=tool_label,
        read_only_label=ro_label,
    )


def _known_tools(registry: Registry) -> set[str]:
    return set(registry.names())


def from_headers(registry: Registry, headers: Mapping[str, str] | None) -> Layer | None:
    """The request headers' layer (header names lower-cased, as the transports pass them)."""
    if not headers:
        return None
    ts, tools, ro = headers.get("x-mcp-toolsets"), headers.get("x-mcp-tools"), headers.get("x-mcp-readonly")
    opt_in = headers.get("x-mcp-opt-in")  # opt-in toolsets turned on without narrowing (the stdio bridge sends it)
    if ts is None and tools is None and ro is None and opt_in is None:
        return None
    found = layer(
        registry,
        toolsets=ts,
        tools=tools,
        read_only=ro,
        labels=("the X-MCP-Toolsets header", "the X-MCP-Tools header", "the X-MCP-Readonly header"),
    )
    if opt_in is not None:
        wanted, _ = _names(opt_in, known=OPT_IN, what="toolset", label="the X-MCP-Opt-In header")
        found = replace(found, opt_in=wanted or frozenset())
    return None if found.empty else found


def from_path(registry: Registry, path: str) -> Layer | None:
    """The URL's layer: ``/api/mcp`` (none), ``/api/mcp/readonly``, ``/api/mcp/x/<toolsets>[/readonly]``."""
    rest = path.rstrip("/").removeprefix(URL_PREFIX).strip("/")
    if not rest:
        return None
    parts = rest.split("/")
    read_only = parts[-1] == "readonly"
    if read_only:
        parts = parts[:-1]
    toolsets = None
    if parts:
        if len(parts) != 2 or parts[0] != "x":
            raise SelectionError(
                f"{path} is not an MCP endpoint; use /api/mcp, /api/mcp/readonly or /api/mcp/x/<toolset>[/readonly]."
            )
        toolsets = parts[1]
    label = f"the URL {path}"
    return layer(registry, toolsets=toolsets, read_only=read_only, labels=(label, label, label))


def from_flags(registry: Registry, *, toolsets: str | None, tools: str | None, read_only: bool) -> Layer | None:
    """The stdio adapter's layer (``--toolsets``, ``--tools``, ``--read-only``)."""
    found = layer(
        registry, toolsets=toolsets, tools=tools, read_only=read_only, labels=("--toolsets", "--tools", "--read-only")
    )
    return None if found.empty else found


def server_layer(registry: Registry, env: Mapping[str, str] | None = None) -> Layer | None:
    """The server-wide upper bound from the environment (read once per protocol instance)."""
    env = os.environ if env is None else env
    found = layer(
        registry,
        toolsets=env.get("JENTRIX_MCP_TOOLSETS") or None,
        tools=env.get("JENTRIX_MCP_TOOLS") or None,
        read_only=env.get("JENTRIX_MCP_READONLY"),
        labels=(
            "the server setting JENTRIX_MCP_TOOLSETS",
            "the server setting JENTRIX_MCP_TOOLS",
            "the server setting JENTRIX_MCP_READONLY",
        ),
    )
    return None if found.empty else found


def as_headers(found: Layer | None) -> dict[str, str]:
    """A layer as the X-MCP-* headers (the stdio bridge forwards its flags to a remote server)."""
    if found is None:
        return {}
    out: dict[str, str] = {}
    ts = sorted(found.toolsets or ()) + [f"-{n}" for n in sorted(found.exclude_toolsets)]
    tools = sorted(found.tools or ()) + [f"-{n}" for n in sorted(found.exclude_tools)]
    if ts:
        out["X-MCP-Toolsets"] = ",".join(ts)
    if tools:
        out["X-MCP-Tools"] = ",".join(tools)
    if found.read_only:
        out["X-MCP-Readonly"] = "true"
    if found.opt_in:
        out["X-MCP-Opt-In"] = ",".join(sorted(found.opt_in))
    return out


@cache
def _served(registry: Registry, layers: Layers, scopes: tuple[str, ...]) -> tuple[ToolSpec, ...]:
    return tuple(s for s in registry.ordered() if hidden_by(s, layers) is None and listable(s, scopes))


def served(registry: Registry, layers: Layers, scopes: tuple[str, ...]) -> tuple[ToolSpec, ...]:
    """The tools one connection lists, in tools/list order (cached per key; the key is small)."""
    return _served(registry, layers, scopes)


def describe(layers: Layers) -> dict[str, Any]:
    """For logs and tests: the layers in force, by label."""
    return {"layers": [layer.__dict__ for layer in layers]}
