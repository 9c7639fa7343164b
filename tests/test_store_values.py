"""``domain.store.models.values`` (the descriptor-free read the views use) answers exactly what
reading each attribute answers, for every item type, whether the row was built in code or read
back from its stored form, with attributes set, defaulted and absent."""

from __future__ import annotations

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)

from domain.store import models
from domain.store.models import Row, values


def _item_types() -> list[type[Row]]:
    """The concrete item types (a discriminator value of their own; not the shared bases)."""
    found = [
        v
        for v in vars(models).values()
        if isinstance(v, type) and issubclass(v, Row) and v is not Row and not v.__name__.startswith("_")
    ]
    return sorted(found, key=lambda t: t.__name__)


def _sample(attr: object, i: int) -> object:
    if isinstance(attr, BooleanAttribute):
        return i % 2 == 0
    if isinstance(attr, NumberAttribute):
        return i + 1
    if isinstance(attr, UnicodeSetAttribute):
        return {f"s{i}", f"t{i}"}
    if isinstance(attr, ListAttribute):
        return [f"v{i}"] if getattr(attr, "element_type", None) is UnicodeAttribute else []
    if isinstance(attr, JSONAttribute):
        return {"k": i}
    if isinstance(attr, MapAttribute):
        return None
    return f"value {i}"


ITEM_TYPES = _item_types()


def test_every_item_type_is_covered():
    assert len(ITEM_TYPES) >= 40, [t.__name__ for t in ITEM_TYPES]


@pytest.mark.parametrize("cls", ITEM_TYPES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("fill", ["all", "required only"])
def test_values_answer_what_the_attributes_answer(cls, fill):
    attrs = cls.get_attributes()
    discriminator = cls._get_discriminator_attribute()
    kwargs = {}
    for i, (name, attr) in enumerate(sorted(attrs.items())):
        if (
            name in ("PK", "SK")
            or attr is discriminator
            or (fill == "required only" and attr.null)
            or (fill == "required only" and attr.default is not None)
        ):
            continue
        value = _sample(attr, i)
        if value is not None:
            kwargs[name] = value
    kwargs.setdefault("PK", "P#1")
    kwargs.setdefault("SK", "S#1")
    built = cls(**kwargs)
    stored = cls.from_raw_data(built.serialize())
    for row in (built, stored):
        v = values(row)
        for name in attrs:
            assert v.get(name) == getattr(row, name), (cls.__name__, name)


def _pynamodb_row(cls: type[Row], raw: dict) -> Row:
    """The row PynamoDB's own ``Model.from_raw_data`` builds (what Row's override must equal)."""
    from pynamodb.models import Model

    return Model.from_raw_data.__func__(cls, raw)  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", ITEM_TYPES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("fill", ["all", "required only", "nulls"])
def test_reads_build_the_row_pynamodb_builds(cls, fill):
    """``Row.from_raw_data`` (every get, query and batch_get) equals PynamoDB's instance for
    every item type: the same class, the same attribute dict (defaults included, in the same
    order), whether attributes are set, defaulted, absent or stored as NULL — read through the
    base class (a board Query) and through the item type itself (a GetItem)."""
    attrs = cls.get_attributes()
    discriminator = cls._get_discriminator_attribute()
    kwargs = {}
    for i, (name, attr) in enumerate(sorted(attrs.items())):
        if (
            name in ("PK", "SK")
            or attr is discriminator
            or (fill == "required only" and (attr.null or attr.default is not None))
        ):
            continue
        value = _sample(attr, i)
        if value is not None:
            kwargs[name] = value
    raw = cls(PK="P#1", SK="S#1", **kwargs).serialize()
    if fill == "nulls":  # what an item written by another client may hold: explicit NULLs
        for name, attr in attrs.items():
            if attr.null and name not in ("PK", "SK") and attr is not discriminator:
                raw[attr.attr_name] = {"NULL": True}
    for reader in (Row, cls):
        mine, theirs = reader.from_raw_data(raw), _pynamodb_row(reader, raw)
        assert type(mine) is type(theirs) is cls
        assert mine.__dict__.keys() == theirs.__dict__.keys() == {"attribute_values"}
        assert list(mine.attribute_values.items()) == list(theirs.attribute_values.items()), cls.__name__
        assert mine.serialize() == theirs.serialize()
    first, second = Row.from_raw_data(raw), Row.from_raw_data(raw)
    for name, value in first.attribute_values.items():  # callable defaults (list, dict) are per row
        if isinstance(value, (list, dict)):
            assert value is not second.attribute_values[name], (cls.__name__, name)


def test_reads_outside_the_fast_path_behave_as_pynamodb_does():
    """No kind, an unknown kind, or a kind outside the class read through: PynamoDB's own
    answer (and error) every time."""
    from domain.store.models import TaskRow, UserRow

    user = UserRow(
        PK="U#1", SK="PROFILE", userId="u1", email="a@b", displayName="A", createdAt="2026-01-01T00:00:00Z"
    ).serialize()
    with pytest.raises(ValueError, match="Cannot instantiate"):
        TaskRow.from_raw_data(user)
    with pytest.raises(ValueError, match="Unknown discriminator value: NoSuchKind"):
        Row.from_raw_data({**user, "kind": {"S": "NoSuchKind"}})
    with pytest.raises(ValueError, match="no data"):
        Row.from_raw_data(None)  # type: ignore[arg-type]
    bare = {k: v for k, v in user.items() if k != "kind"}
    assert type(Row.from_raw_data(bare)) is type(_pynamodb_row(Row, bare)) is Row
