"""The ORM classes are mapped onto ``tuna.db.tables``: their annotations are for the type
checker only (the mapper ignores one that names no column), so this test keeps them naming
exactly their table's columns, Optional where the column is nullable."""

from __future__ import annotations

import typing

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table
from sqlalchemy.orm import Mapped

from tuna.db import models, tables
from tuna.db.models import Base

MAPPED = sorted(Base.registry.mappers, key=lambda m: m.class_.__name__)


def mismatches(cls: type, table: Table) -> list[str]:
    hints = typing.get_type_hints(cls, vars(models))
    annotated = {k: h for k, h in hints.items() if typing.get_origin(h) is Mapped}
    out = []
    if list(annotated) != [c.name for c in table.c]:
        out.append(
            f"{cls.__name__} annotates {list(annotated)}, {table.name} has {list(table.c.keys())}"
        )
    for column in table.c:
        if column.name in annotated:
            (inner,) = typing.get_args(annotated[column.name])
            if (type(None) in typing.get_args(inner)) != column.nullable:
                out.append(
                    f"{cls.__name__}.{column.name}: Optional is not nullable={column.nullable}"
                )
    return out


def test_every_table_has_one_class() -> None:
    assert sorted(m.local_table.name for m in MAPPED) == sorted(tables.metadata.tables)
    assert all(m.local_table is tables.metadata.tables[m.local_table.name] for m in MAPPED)


@pytest.mark.parametrize("mapper", MAPPED, ids=lambda m: m.class_.__name__)
def test_annotations_are_the_tables_columns(mapper: typing.Any) -> None:
    assert mismatches(mapper.class_, mapper.local_table) == []


def test_the_check_catches_a_stray_a_missing_and_a_wrongly_optional_annotation() -> None:
    table = Table("t", MetaData(), Column("id", Integer, primary_key=True), Column("a", String(8)))

    class Right:
        id: Mapped[int]
        a: Mapped[str | None]

    class Wrong:
        id: Mapped[int]
        a: Mapped[str]
        bogus: Mapped[int]

    class Missing:
        id: Mapped[int]

    assert mismatches(Right, table) == []
    assert len(mismatches(Wrong, table)) == 2
    assert len(mismatches(Missing, table)) == 1
