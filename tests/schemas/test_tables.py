"""A table's Arrow schema, whole or of some of its columns."""

from __future__ import annotations

import pytest

from schemas.tables import METRIC_SAMPLES


def test_the_arrow_schema_of_some_columns_is_the_tables_in_their_order() -> None:
    whole = METRIC_SAMPLES.to_arrow()
    some = METRIC_SAMPLES.to_arrow(["ts", "cluster"])
    assert some.names == ["ts", "cluster"]
    assert [some.field(n) for n in some.names] == [whole.field("ts"), whole.field("cluster")]
    with pytest.raises(KeyError):
        METRIC_SAMPLES.to_arrow(["no_such_column"])
