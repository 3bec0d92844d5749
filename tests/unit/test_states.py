"""The state and type vocabularies are ``StrEnum`` classes whose members are exactly the words
the catalogs always stored: the constants derived from them, the SQL CHECK constraints and
JSON keep those words (no migration)."""

from __future__ import annotations

import json

import pytest

from acidflow import states
from acidflow.catalog import records
from acidflow.catalog.records import (
    CompactionState,
    CompactionType,
    LockState,
    LockType,
    TxnState,
)


@pytest.mark.parametrize(
    ("enum_cls", "words"),
    [
        (TxnState, ("open", "committed", "aborted")),
        (LockType, ("shared_read", "shared_write", "exclusive")),
        (LockState, ("acquired", "waiting")),
        (
            CompactionState,
            (
                "initiated",
                "working",
                "ready for cleaning",
                "succeeded",
                "failed",
                "did not initiate",
                "refused",
            ),
        ),
        (CompactionType, ("major", "minor")),
    ],
)
def test_members_are_the_stored_words(enum_cls, words):
    assert tuple(m.value for m in enum_cls) == words
    for member, word in zip(enum_cls, words):
        assert member == word and str(member) == word and f"{member}" == word
        assert hash(member) == hash(word) and enum_cls(word) is member
        assert json.dumps({member: member}) == json.dumps({word: word})


def test_the_constants_keep_their_words_and_order():
    assert records.TXN_STATES == ("open", "committed", "aborted")
    assert records.LOCK_TYPES == ("shared_read", "shared_write", "exclusive")
    assert records.LOCK_STATES == ("acquired", "waiting")
    assert records.COMPACTION_STATES == (
        "initiated",
        "working",
        "ready for cleaning",
        "succeeded",
        "failed",
        "did not initiate",
        "refused",
    )
    assert records.COMPACTION_TYPES == ("major", "minor")
    assert records.ACTIVE_STATES == ("initiated", "working", "ready for cleaning")
    assert records.FINISHED_STATES == ("succeeded", "failed", "did not initiate", "refused")
    assert records.DEFAULT_RETENTION == {"succeeded": 3, "failed": 3, "did not initiate": 2}
    for constant in (
        records.TXN_STATES,
        records.LOCK_TYPES,
        records.LOCK_STATES,
        records.COMPACTION_STATES,
        records.COMPACTION_TYPES,
        records.ACTIVE_STATES,
        records.FINISHED_STATES,
    ):
        assert all(type(word) is str for word in constant)  # they build SQL CHECK text


def test_one_home_each():
    assert records.TxnState is states.TxnState
    assert records.LockType is states.LockType
    assert records.CompactionType is states.CompactionType
    from acidflow import catalog

    for name in ("TxnState", "LockType", "LockState", "CompactionState", "CompactionType"):
        assert getattr(catalog, name) is getattr(records, name)


def test_active_and_finished_split_the_compaction_states():
    assert [s for s in CompactionState if s.active] == [
        CompactionState.INITIATED,
        CompactionState.WORKING,
        CompactionState.READY_FOR_CLEANING,
    ]
    assert all(s.finished != s.active for s in CompactionState)


def test_check_constraints_name_the_words():
    schema = pytest.importorskip("acidflow.catalog.sql.schema")
    checks = {
        str(c.sqltext)
        for t in schema.Base.metadata.tables.values()
        for c in t.constraints
        if hasattr(c, "sqltext")
    }
    assert "txn_state IN ('open', 'committed', 'aborted')" in checks
    assert "lock_type IN ('shared_read', 'shared_write', 'exclusive')" in checks
    assert "lock_state IN ('acquired', 'waiting')" in checks
    assert (
        "cq_state IN ('initiated', 'working', 'ready for cleaning', 'succeeded', 'failed', "
        "'did not initiate', 'refused')"
    ) in checks
    assert "cq_type IN ('major', 'minor')" in checks


def test_the_transaction_state_starts_new_and_compares_as_words():
    from acidflow.engine.transaction import Transaction

    class _Catalog:
        txn_timeout_s = 300

        def open_transaction(self, **_kw):
            return 42

        def abort_transaction(self, txn_id, reason=""):
            self.aborted = (txn_id, reason)

    cat = _Catalog()
    txn = Transaction(cat, heartbeat_s=0, user="u")
    assert txn.state == "new"
    txn.begin()
    assert txn.state == "open" and txn.state is TxnState.OPEN
    txn.abort("test")
    assert txn.state == "aborted" and cat.aborted == (42, "test")
