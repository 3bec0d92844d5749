"""The rules of the sidecar key index (``acidflow.format.keyindex``): the binary search over
sorted key hashes and the row-group choice find exactly what a full scan finds; the coverage
record round-trips and tells a stale sidecar."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from acidflow.format import keyindex as rules
from acidflow.format import keys
from acidflow.format.names import is_hidden

HASHES = st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 40), max_size=200)


@settings(max_examples=200, deadline=None)
@given(stored=HASHES, wanted=HASHES, group=st.integers(1, 17))
def test_search_finds_exactly_what_a_scan_finds(stored, wanted, group):
    hashes = np.sort(np.array(stored, dtype=np.uint64))
    query = rules.query_hashes(np.array(wanted, dtype=np.uint64))
    scan = [i for i, h in enumerate(hashes.tolist()) if h in set(wanted)]
    assert rules.match_positions(hashes, query).tolist() == scan
    # row groups of `group` rows, chosen by their hash range, then searched one by one
    found = []
    starts = list(range(0, len(hashes), group))
    bounds = [(int(hashes[s]), int(hashes[min(s + group, len(hashes)) - 1])) for s in starts]
    for g in rules.row_groups_for(bounds, query):
        part = hashes[starts[g] : starts[g] + group]
        found += (rules.match_positions(part, query) + starts[g]).tolist()
    assert found == scan


def test_coverage_round_trip_and_stale_reasons():
    cov = rules.Coverage({"bucket_00000": (100, 7)}, [("k", "string")])
    back = rules.Coverage.from_json(cov.to_json())
    assert back == cov
    assert rules.stale_reason(back, {"bucket_00000": 100}, [("K", "STRING")]) is None
    assert "has 101 bytes" in rules.stale_reason(back, {"bucket_00000": 101}, [("k", "string")])
    assert "not covered" in rules.stale_reason(back, {"bucket_00001": 100}, [("k", "string")])
    assert "key columns" in rules.stale_reason(back, {"bucket_00000": 100}, [("k", "bigint")])
    assert is_hidden(rules.INDEX_FILE)  # Hive's and Trino's listings skip it


TEXT = st.text(st.sampled_from(list('aZ~ "\\/<\x00\x1f\x7fé€\u2028\U0001f600')), max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), TEXT), min_size=1, max_size=20),
    const=TEXT,
)
def test_column_hashes_equal_the_key_rule_for_strings(rows, const):
    """The Arrow-built JSON of string keys (the sidecar's and the lookup's hashes) equals
    ``key_hash64`` of each key tuple, escapes (quote, backslash, control, non-ASCII) included."""
    ints = pa.array([i for i, _ in rows], pa.int64())
    texts = pa.array([s for _, s in rows], pa.string())
    n = len(rows)
    assert keys.key_hashes_of_columns([texts], n).tolist() == [
        keys.key_hash64((s,)) for _, s in rows
    ]
    assert keys.key_hashes_of_columns([ints, texts, const], n).tolist() == [
        keys.key_hash64((i, s, const)) for i, s in rows
    ]
