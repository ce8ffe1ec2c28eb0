"""Column groups for the revisions' ``create_table`` calls: one call per run of same-typed columns.

Each helper returns the ``sa.Column`` objects a revision would write out one by one, in the order
given, so the DDL a revision emits does not depend on which form it uses. A revision's tables are
frozen once released: revisions call these helpers, never the application's table classes.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

Column = sa.Column[Any]


def ints(*names: str, nullable: bool = False) -> list[Column]:
    """``Integer`` columns."""
    return [sa.Column(name, sa.Integer(), nullable=nullable) for name in names]


def strings(*, nullable: bool = False, **lengths: int) -> list[Column]:
    """``String(length)`` columns, ``name=length`` each."""
    return [sa.Column(name, sa.String(length=length), nullable=nullable) for name, length in lengths.items()]


def texts(*names: str, nullable: bool = True) -> list[Column]:
    """``Text`` columns (nullable unless said otherwise)."""
    return [sa.Column(name, sa.Text(), nullable=nullable) for name in names]


def stamps(*names: str, nullable: bool = False) -> list[Column]:
    """Timezone-aware ``DateTime`` columns."""
    return [sa.Column(name, sa.DateTime(timezone=True), nullable=nullable) for name in names]


def jsons(*names: str, nullable: bool = False) -> list[Column]:
    """``JSON`` columns."""
    return [sa.Column(name, sa.JSON(), nullable=nullable) for name in names]


def blobs(*names: str, nullable: bool = False) -> list[Column]:
    """``LargeBinary`` columns."""
    return [sa.Column(name, sa.LargeBinary(), nullable=nullable) for name in names]
