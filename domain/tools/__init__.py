"""Tool modules by product area; importing this package registers every tool."""

from domain.tools import activity, boards, tasks, workspaces  # noqa: F401
