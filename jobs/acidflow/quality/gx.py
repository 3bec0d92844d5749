"""Great Expectations suites on acidflow data: the gate on a staged batch before commit, and the
suite part of ``validate`` after commit.

**Suites** live in ``<suite dir>/<db>.<table>.json`` (default ``include/expectations``, or
``ACIDFLOW_SUITE_DIR``), one per table, in GX 1.x's own ``ExpectationSuite`` JSON shape::

    {"name": "pgbench.pgbench_accounts",
     "expectations": [
       {"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "aid"}},
       {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1},
        "meta": {"acidflow_scope": "snapshot"}}]}

Any GX 1.x expectation type works (``type`` + ``kwargs`` exactly as GX names them). The only
acidflow addition is ``meta.acidflow_scope``: ``both`` (default) runs the expectation on staged
batches and on snapshots, ``staged`` only on staged batches, ``snapshot`` only on the table's
snapshot (row counts of the whole table, for example).

**Engines.** A Spark DataFrame is validated with GX's Spark data source (the work runs in Spark);
a ``pandas.DataFrame`` or ``pyarrow.Table`` with GX's pandas data source (fast for batches that
are on the driver anyway, such as a CDC merge plan's insert rows). Each run uses a fresh
ephemeral GX context (no ``gx/`` project directory, nothing persisted by GX), a whole-dataframe
batch definition and ``ValidationDefinition.run(batch_parameters={"dataframe": df})``.

**Reports.** Every run writes ``<warehouse>/_quality/<table>/<run id>/report.json`` (what
:meth:`GateResult.to_dict` returns plus GX's full validation result) and, for failed runs and
snapshot validations, ``report.html``: GX's Data Docs page of the validation result (offline it
renders unstyled: its CSS/JS come from CDNs). The run id is
``<UTC yyyymmddThhmmssffffffZ>-<scope>-<6 hex>``, so runs sort by time.

Importing GX takes seconds: it is imported only when a table has a suite.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.util
import json
import os
import secrets
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from acidflow._extras import require
from acidflow.errors import AcidflowError
from acidflow.storage.fs import TableFS

REPO = Path(__file__).resolve().parents[3]
DEFAULT_SUITE_DIR = REPO / "include" / "expectations"
SUITE_DIR_ENV = "ACIDFLOW_SUITE_DIR"
QUALITY_DIR = "_quality"
SCOPE_KEY = "acidflow_scope"
SCOPES = ("both", "staged", "snapshot")
PARTIAL_UNEXPECTED = 5


class SuiteError(AcidflowError, ValueError):
    """A suite file that is not a GX 1.x suite (the message names the file and the problem)."""


class QualityGateError(AcidflowError, RuntimeError):
    """A staged batch failed its table's expectation suite; the write was not committed.

    Attributes:
        table: the table; report_path: the JSON report listing every expectation's outcome;
        failed: one summary line per failed expectation.
    """

    def __init__(self, table: str, report_path: str, failed: list[str]) -> None:
        self.table, self.report_path, self.failed = table, report_path, list(failed)
        super().__init__(
            f"quality gate failed for {table}: {len(self.failed)} expectation(s) failed: "
            + "; ".join(self.failed)
            + f"; nothing was committed; report: {report_path}"
        )


@dataclass
class ExpectationOutcome:
    """One expectation's outcome.

    Attributes:
        type: GX expectation type; column: its column (``a,b`` for column lists, ``""`` for
            table-level expectations); success: passed.
        unexpected_count: rows that broke it (None for aggregate expectations);
        unexpected_values: up to 5 of those values (GX ``partial_unexpected_list``);
        observed_value: GX's observed value for aggregate expectations (row count, mean...);
        kwargs: the expectation's arguments; exception: GX's message when it could not run
            (an unknown column, for example), which counts as a failure.
    """

    type: str
    column: str
    success: bool
    unexpected_count: int | None = None
    unexpected_values: list = field(default_factory=list)
    observed_value: Any = None
    kwargs: dict = field(default_factory=dict)
    exception: str | None = None

    def summary(self) -> str:
        """One line: ``expect_x(column): 3 unexpected, e.g. [..]`` / observed value / error."""
        head = f"{self.type}({self.column})" if self.column else self.type
        if self.exception:
            return f"{head}: could not run: {self.exception.splitlines()[0][:200]}"
        if self.unexpected_count is not None:
            return f"{head}: {self.unexpected_count} unexpected, e.g. {self.unexpected_values}"
        return f"{head}: observed {self.observed_value!r}"


@dataclass
class GateResult:
    """Outcome of one suite run on one table's data.

    Attributes:
        table: table name; scope: ``staged`` or ``snapshot``; suite: the suite file;
        success: every expectation passed; run_id: see module doc; report_path: the JSON
        report; html_path: the Data Docs page or None; expectations: one
        :class:`ExpectationOutcome` each; engine: ``spark`` or ``pandas``; seconds: wall time.
    """

    table: str
    scope: str
    suite: str
    success: bool
    run_id: str
    report_path: str = ""
    html_path: str | None = None
    expectations: list[ExpectationOutcome] = field(default_factory=list)
    engine: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> list[ExpectationOutcome]:
        """The failed expectations."""
        return [e for e in self.expectations if not e.success]

    def to_dict(self) -> dict:
        """JSON-able dict (expectations as dicts, plus ``failed`` summary lines)."""
        d = asdict(self)
        d["failed"] = [e.summary() for e in self.failed]
        return d


# ----------------------------------------------------------------------------- suites (pure)


def suite_dir_default() -> str:
    """``ACIDFLOW_SUITE_DIR`` when set, else the repository's ``include/expectations``."""
    return os.environ.get(SUITE_DIR_ENV) or str(DEFAULT_SUITE_DIR)


def prewarm(suite_dir: str | os.PathLike | None = None) -> threading.Thread | None:
    """Import Great Expectations on a background thread when ``suite_dir`` holds any suite
    (GX's import takes 3-6 s on a cold process: bench/NOTES.md, "Kafka phase"), so a job
    whose first batch waits on I/O anyway (a Kafka range read in the JVM) does not pay it
    afterwards at its first gate. The import runs once per process; a job that reaches its
    gate first waits for it on Python's module lock, as for any import. pandas is imported on
    the calling thread first (see the code). Nothing is started when there is no suite or GX
    is not installed.

    Returns:
        the started daemon thread, or None.
    """
    d = Path(suite_dir if suite_dir is not None else suite_dir_default())
    if (
        "great_expectations" in sys.modules
        or importlib.util.find_spec("great_expectations") is None
    ):
        return None
    if not d.is_dir() or not any(d.glob("*.json")):
        return None
    # the packages this thread and the job's own thread both import (pandas, and numpy under
    # it) are imported here first: two threads entering one package's circular imports from
    # different modules can find each other's half-initialised modules
    importlib.import_module("pandas")
    thread = threading.Thread(
        target=importlib.import_module,
        args=("great_expectations",),
        name="acidflow-gx-import",
        daemon=True,
    )
    thread.start()
    return thread


def suite_path(suite_dir: str | os.PathLike | None, table_name: str) -> Path | None:
    """``<suite_dir>/<table_name>.json`` when it exists (name matched case-insensitively),
    else None. ``suite_dir`` None = :func:`suite_dir_default`."""
    d = Path(suite_dir if suite_dir is not None else suite_dir_default())
    exact = d / f"{table_name}.json"
    if exact.is_file():
        return exact
    if d.is_dir():
        wanted = f"{table_name}.json".lower()
        for p in sorted(d.iterdir()):
            if p.name.lower() == wanted and p.is_file():
                return p
    return None


def parse_suite(doc: Any, where: str = "suite") -> dict:
    """Check a suite document's shape (pure) and return it normalised:
    ``{"name": str, "expectations": [{"type", "kwargs", "meta"}], "meta": dict}``.

    Raises:
        SuiteError: not an object, no ``name``, ``expectations`` not a list, an expectation
            without a ``type`` starting with ``expect_``, ``kwargs`` not an object, or an
            unknown ``meta.acidflow_scope``.
    """
    if not isinstance(doc, dict):
        raise SuiteError(f"{where}: a suite is a JSON object with name and expectations")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"{where}: missing 'name'")
    exps = doc.get("expectations")
    if not isinstance(exps, list):
        raise SuiteError(f"{where}: 'expectations' must be a list")
    out = []
    for i, e in enumerate(exps):
        if not isinstance(e, dict):
            raise SuiteError(f"{where}: expectation {i} is not an object")
        typ = e.get("type") or e.get("expectation_type")  # GX 0.x spelled it expectation_type
        if not isinstance(typ, str) or not typ.startswith("expect_"):
            raise SuiteError(f"{where}: expectation {i} has no GX 'type' (expect_...): {e!r}")
        kwargs = e.get("kwargs", {})
        meta = e.get("meta") or {}
        if not isinstance(kwargs, dict) or not isinstance(meta, dict):
            raise SuiteError(f"{where}: expectation {i} ({typ}): kwargs and meta must be objects")
        scope = meta.get(SCOPE_KEY, "both")
        if scope not in SCOPES:
            raise SuiteError(
                f"{where}: expectation {i} ({typ}): meta.{SCOPE_KEY} must be one "
                f"of {SCOPES}, got {scope!r}"
            )
        out.append({"type": typ, "kwargs": dict(kwargs), "meta": dict(meta)})
    return {"name": name, "expectations": out, "meta": dict(doc.get("meta") or {})}


def load_suite(path: str | os.PathLike) -> dict:
    """Read and check a suite file (see :func:`parse_suite`).

    Raises:
        SuiteError: not JSON or not a suite.
    """
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SuiteError(f"{path}: not JSON: {exc}") from exc
    return parse_suite(doc, str(path))


def select_expectations(suite: dict, scope: str) -> list[dict]:
    """The expectations of a parsed suite that apply to ``scope`` (``staged``/``snapshot``)."""
    return [e for e in suite["expectations"] if e["meta"].get(SCOPE_KEY, "both") in ("both", scope)]


def _column_of(kwargs: dict) -> str:
    if "column" in kwargs:
        return str(kwargs["column"])
    if isinstance(kwargs.get("column_list"), (list, tuple)):
        return ",".join(map(str, kwargs["column_list"]))
    if "column_A" in kwargs:
        return f"{kwargs['column_A']},{kwargs.get('column_B')}"
    return ""


def outcomes_from_result(result: dict) -> list[ExpectationOutcome]:
    """Per-expectation outcomes from GX's validation result as JSON
    (``ExpectationSuiteValidationResult.to_json_dict()``; pure)."""
    out = []
    for r in result.get("results", []):
        cfg = r.get("expectation_config") or {}
        kwargs = {k: v for k, v in (cfg.get("kwargs") or {}).items() if k != "batch_id"}
        res = r.get("result") or {}
        exc = r.get("exception_info") or {}
        message = exc.get("exception_message") if exc.get("raised_exception") else None
        out.append(
            ExpectationOutcome(
                type=cfg.get("type", "?"),
                column=_column_of(kwargs),
                success=bool(r.get("success")),
                unexpected_count=res.get("unexpected_count"),
                unexpected_values=list(res.get("partial_unexpected_list") or [])[
                    :PARTIAL_UNEXPECTED
                ],
                observed_value=res.get("observed_value"),
                kwargs=kwargs,
                exception=message,
            )
        )
    return out


def new_run_id(scope: str, now: _dt.datetime | None = None) -> str:
    """``<UTC yyyymmddThhmmssffffffZ>-<scope>-<6 hex>`` (sorts by time)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return f"{now.strftime('%Y%m%dT%H%M%S%fZ')}-{scope}-{secrets.token_hex(3)}"


def report_dir(warehouse: str, table_name: str, run_id: str) -> str:
    """``<warehouse>/_quality/<table>/<run id>`` (local path or URL, '/'-joined)."""
    return "/".join([warehouse.rstrip("/"), QUALITY_DIR, table_name, run_id])


# ----------------------------------------------------------------------------- GX (I/O)


def _is_spark_df(df: Any) -> bool:
    return type(df).__module__.startswith("pyspark.sql") and hasattr(df, "sparkSession")


def _as_pandas(df: Any) -> Any:
    import pandas as pd  # deferred: pandas is heavy and only the pandas engine needs it

    if isinstance(df, pd.DataFrame):
        return df
    if hasattr(df, "to_pandas"):  # pyarrow.Table / RecordBatch
        return df.to_pandas()
    raise TypeError(
        f"cannot validate a {type(df).__name__}: expected a Spark DataFrame, a "
        "pandas DataFrame or a pyarrow Table"
    )


def run_expectations(df: Any, expectations: list[dict[str, Any]], *, name: str) -> tuple[Any, str]:
    """Run expectations on one DataFrame with GX 1.x (imported here, lazily).

    Args:
        df: Spark DataFrame (GX Spark data source, nothing persisted), pandas DataFrame or
            pyarrow Table (GX pandas data source).
        expectations: ``[{"type", "kwargs", "meta"}]`` as :func:`parse_suite` returns them.
        name: suite name (GX's ``suite_name`` in the result).
    Returns:
        ``(GX ExpectationSuiteValidationResult, engine)``, ``result_format`` SUMMARY with 5
        partial unexpected values per expectation.
    Raises:
        SuiteError: GX refused an expectation (unknown type, bad kwargs).
        acidflow._extras.MissingExtraError: the ``quality`` extra is not installed.
    """
    require("great_expectations", "quality", "data quality suites (Great Expectations)")
    # deferred: importing GX takes seconds; only tables with a suite pay for it
    import great_expectations as gx
    from great_expectations.core.expectation_suite import (
        ExpectationSuite,  # deferred: as above
    )
    from great_expectations.data_context.types.base import (
        ProgressBarsConfig,  # deferred: as above
    )
    from great_expectations.expectations.expectation_configuration import (  # deferred: as above
        ExpectationConfiguration,
    )

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    source: Any  # a GX Spark or pandas data source
    if _is_spark_df(df):
        engine = "spark"
        source = ctx.data_sources.add_spark("acidflow_spark", persist=False)
        data = df
    else:
        engine = "pandas"
        source = ctx.data_sources.add_pandas("acidflow_pandas")
        data = _as_pandas(df)
    batch_def = source.add_dataframe_asset("batch").add_batch_definition_whole_dataframe("all")
    suite = ExpectationSuite(name=name)
    for e in expectations:
        try:
            suite.add_expectation_configuration(
                ExpectationConfiguration(type=e["type"], kwargs=e["kwargs"], meta=e["meta"])
            )
        except Exception as exc:  # noqa: BLE001 - GX raises many kinds; name the expectation
            raise SuiteError(f"{name}: GX refused {e['type']} {e['kwargs']}: {exc}") from exc
    suite = ctx.suites.add(suite)
    vd = gx.ValidationDefinition(data=batch_def, suite=suite, name=f"{name}-validation")
    res = vd.run(
        batch_parameters={"dataframe": data},
        result_format={"result_format": "SUMMARY", "partial_unexpected_count": PARTIAL_UNEXPECTED},
    )
    return res, engine


def data_docs_html(gx_result: Any) -> str:
    """GX's Data Docs page (HTML) of one ``ExpectationSuiteValidationResult``."""
    from great_expectations.render.renderer import (
        ValidationResultsPageRenderer,  # deferred: GX
    )
    from great_expectations.render.view import (
        DefaultJinjaPageView,  # deferred: GX is slow to load
    )

    return DefaultJinjaPageView().render(ValidationResultsPageRenderer().render(gx_result))


def _write(warehouse: str, path: str, data: bytes) -> None:
    TableFS(warehouse).write_bytes(path, data)


def check(
    catalog: Any,
    table_name: str,
    df: Any,
    *,
    scope: str,
    suite_dir: str | os.PathLike[str] | None = None,
    html: str = "on_failure",
    run_id: str | None = None,
) -> GateResult | None:
    """Run the table's suite (the expectations of ``scope``) on ``df`` and write the report.

    Args:
        catalog: ``acidflow.catalog.Catalog`` (its ``warehouse`` holds the reports).
        table_name: table whose suite applies (``<suite_dir>/<table>.json``).
        df: Spark DataFrame, pandas DataFrame or pyarrow Table.
        scope: ``staged`` or ``snapshot``.
        suite_dir: directory of suites (None = :func:`suite_dir_default`).
        html: ``always``, ``on_failure`` or ``never``: when to write the Data Docs page.
        run_id: report directory name (default :func:`new_run_id`).
    Returns:
        :class:`GateResult`, or None when the table has no suite (GX is then not imported).
    Raises:
        SuiteError: a broken suite file.
    """
    path = suite_path(suite_dir, table_name)
    if path is None:
        return None
    t0 = time.monotonic()
    suite = load_suite(path)
    run_id = run_id or new_run_id(scope)
    wanted = select_expectations(suite, scope)
    res, engine = run_expectations(df, wanted, name=suite["name"])
    ok, gx_result = bool(res.success), res.to_json_dict()
    result = GateResult(
        table=table_name,
        scope=scope,
        suite=str(path),
        success=ok,
        run_id=run_id,
        expectations=outcomes_from_result(gx_result),
        engine=engine,
    )
    out_dir = report_dir(catalog.warehouse, table_name, run_id)
    result.report_path = out_dir + "/report.json"
    if html == "always" or (html == "on_failure" and not ok):
        result.html_path = out_dir + "/report.html"
        try:
            _write(catalog.warehouse, result.html_path, data_docs_html(res).encode())
        except Exception as exc:  # noqa: BLE001 - the page is a convenience, the JSON is the report
            result.html_path = None
            gx_result.setdefault("meta", {})["acidflow_html_error"] = str(exc)
    result.seconds = round(time.monotonic() - t0, 3)
    doc = {**result.to_dict(), "gx_result": gx_result}
    _write(catalog.warehouse, result.report_path, json.dumps(doc, indent=1, default=str).encode())
    return result


def gate_staged(
    spark: Any,
    catalog: Any,
    table_name: str,
    df: Any,
    *,
    suite_dir: str | os.PathLike[str] | None = None,
) -> GateResult | None:
    """The quality gate on a staged batch, called by the write jobs inside their transaction
    right before they write: a failure raises, so the transaction aborts and nothing of the
    batch becomes visible; the staged rows stay where they came from (landing or change files)
    and nothing is quarantined -- the report lists what failed.

    Args:
        spark: the SparkSession (unused by the pandas engine; kept for one call shape).
        catalog: ``acidflow.catalog.Catalog``.
        table_name: the target table.
        df: the rows about to be written: Spark DataFrame (ingest's good rows), or pyarrow
            Table / pandas DataFrame (a CDC merge plan's insert rows).
        suite_dir: suites directory (None = :func:`suite_dir_default`).
    Returns:
        :class:`GateResult` when it passed; None when the table has no suite.
    Raises:
        QualityGateError: an expectation failed (message names the report).
        SuiteError: a broken suite file.
    """
    result = check(catalog, table_name, df, scope="staged", suite_dir=suite_dir)
    if result is not None and not result.success:
        raise QualityGateError(table_name, result.report_path, [e.summary() for e in result.failed])
    return result
