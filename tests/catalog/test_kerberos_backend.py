"""A representative part of the catalog suite on the Kerberos-secured Hive 3.1.3 metastore
(``hms-kerberos``: SASL/GSSAPI on the thrift port, the client logged in from a keytab):
tables, transactions, write ids, locks, commits and snapshots, through the same tests the
``sqlite`` / ``postgresql`` / ``hms`` backends run (imported from their modules, run here with
this module's ``backend``)."""

from __future__ import annotations

import pytest

from tests.catalog.test_locks import (  # noqa: F401 - collected here, on hms-kerberos
    test_released_at_abort_and_by_release_locks,
    test_shared_locks_are_compatible,
    test_waiter_gets_lock_when_holder_commits,
)
from tests.catalog.test_snapshots import (  # noqa: F401
    test_empty_table,
    test_snapshot_taken_at_transaction_open,
)
from tests.catalog.test_tables import (  # noqa: F401
    test_create_and_get,
    test_drop_removes_everything_and_recreate_restarts_write_ids,
    test_list_tables_sorted,
)
from tests.catalog.test_transactions import (  # noqa: F401
    test_abort,
    test_commit,
    test_multi_table_commit_writes_one_record_per_table,
    test_write_ids_per_table_increasing_and_idempotent,
)

pytestmark = pytest.mark.slow


@pytest.fixture(params=[pytest.param("hms-kerberos", id="hms-kerberos")])
def backend(request) -> str:
    """Only the Kerberos-secured metastore."""
    return request.param
