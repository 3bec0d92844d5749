"""acidflow on Spark Connect: the CDC apply job, ``read_table`` and ``format("acid")`` against
a real Connect server (the session-scoped ``spark_connect`` fixture, one per test run), where
``spark.sparkContext`` raises. The CDC tests are those of ``test_cdc_apply`` run with a
Connect session in place of the classic one."""

import pytest

from tests.integration import test_cdc_apply as cdc
from tests.integration.test_cdc_apply import catalog, merge_path  # noqa: F401 - fixtures

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.parametrize("merge_path", ["spark"], indirect=True)
def test_cdc_wal2json_batches_on_connect(connect_spark, catalog, tmp_path, merge_path):  # noqa: F811
    cdc.test_wal2json_batches_late_events_drift_and_idempotence(
        connect_spark, catalog, tmp_path, merge_path
    )
