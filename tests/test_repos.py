"""domain/repos.py: the one repository normaliser (defaultRepo, REPO project links, the lookup)."""

from __future__ import annotations

import pytest

from domain.repos import normalise_repo


@pytest.mark.parametrize(
    "spelling",
    [
        "https://github.com/Owner/Name.git",
        "https://github.com/Owner/Name",
        "https://github.com/Owner/Name/",
        "http://www.github.com/owner/name",
        "git@github.com:Owner/Name.git",
        "git@github.com:Owner/Name",
        "ssh://git@github.com/Owner/Name.git",
        "Owner/Name",
        "owner/name.git",
        "  OWNER/NAME  ",
    ],
)
def test_every_github_spelling_is_lowercase_owner_slash_name(spelling):
    assert normalise_repo(spelling) == "owner/name"


def test_dots_and_dashes_in_names_survive():
    assert normalise_repo("https://github.com/my-org/repo.js.git") == "my-org/repo.js"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "name",
        "a/b/c",
        "https://gitlab.com/a/b",
        "git@gitlab.com:a/b.git",
        "https://github.com/a",
        "-a/b",
        "a b/c",
        "a/.git",
        "a/..",
    ],
)
def test_anything_else_names_no_repository(bad):
    assert normalise_repo(bad) is None
