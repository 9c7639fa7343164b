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
    found = [v for v in vars(models).values() if isinstance(v, type) and issubclass(v, Row) and v is not Row and not v.__name__.startswith("_")]
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
        if name in ("PK", "SK") or attr is discriminator or (fill == "required only" and attr.null) or (fill == "required only" and attr.default is not None):
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
