"""The columnar fast path of the CDC upsert (``acidflow.cdc.columnar``) against the row path
(``acidflow.cdc.changes``, the rules' one definition): seeded random GoldenGate batches over
two tables -- a bucketed table keyed by a bigint with string / decimal / date / timestamp
columns, and a table partitioned by part of its (string, string) key -- applied once with the
fast path and once forced through the row path (``CdcOptions(columnar=False)``), each into its
own warehouse and catalog. After every batch the tables (every column and ROW__ID), the batch
statistics, the catalog's tombstones and the quarantine files must be equal.

The batches change keys several times, insert existing keys, update and delete missing ones,
carry late events (against stored rows, against rows stored with a NULL ``_cdc_position`` --
written outside CDC -- and against tombstones of earlier batches), equal positions, and
values that Arrow and ``coerce`` must read alike (ISO, ``T`` and GoldenGate ``:`` timestamps,
fractions, offsets; decimals with more digits than the scale; dates given as timestamps)."""

import json
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from acidflow.catalog import Column, SqlCatalog, TableDef
from acidflow.cdc import apply as cdc_apply
from acidflow.cdc.apply import CdcOptions, apply_file
from acidflow.cdc.changes import POSITION_COLUMN, Policies
from acidflow.engine.transaction import Transaction
from acidflow.format.keys import key_json
from acidflow.read.table import read_table

pytestmark = pytest.mark.spark

T1 = TableDef(
    name="cdc.items",
    columns=[
        Column("id", "bigint"),
        Column("name", "string"),
        Column("amt", "decimal(12,2)"),
        Column("d", "date"),
        Column("ts", "timestamp"),
        Column("n", "int"),
        Column(POSITION_COLUMN, "string"),
    ],
    primary_key=["id"],
    bucket_columns=["id"],
    num_buckets=3,
    ordering_column=POSITION_COLUMN,
)
T2 = TableDef(
    name="cdc.visits",
    columns=[Column("code", "string"), Column("v", "int"), Column(POSITION_COLUMN, "string")],
    partition_columns=[Column("region", "string")],
    primary_key=["region", "code"],
    num_buckets=2,
    ordering_column=POSITION_COLUMN,
)
SOURCES = {"shop.items": T1, "shop.visits": T2}

TIMESTAMPS = [
    "2024-01-02 03:04:05",
    "2024-01-02T03:04:05.5",
    "2024-02-29 23:59:59.123456",
    "2024-01-02:03:04:05.000001",
    "2024-01-02 03:04:05+02:00",
    "1999-12-31 00:00:00.1",
    None,
]
DATES = ["2024-02-29", "2023-12-31", "2024-01-02 10:00:00", "0001-01-01", None]
AMOUNTS = [Decimal("12.345"), Decimal("12.355"), Decimal("-0.005"), 7, "99.999", Decimal("0"), None]


class Stream:
    """Seeded GoldenGate events: a clock for ``op_ts`` and a ``pos`` counter."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.clock = 0
        self.pos = 0
        self.last: dict[tuple, tuple[str, str]] = {}  # key -> (op_ts, pos) of its last event

    def stamp(self, key: tuple, late: bool, same: bool) -> tuple[str, str]:
        if same and key in self.last:  # an equal position (tie: input order)
            return self.last[key]
        self.pos += 1
        if late:  # older than what the key has seen
            ts = max(0, self.clock - self.rng.randint(1, 40))
        else:
            self.clock += self.rng.randint(0, 2)
            ts = self.clock
        out = (
            f"2024-05-01 00:{ts // 60 % 60:02d}:{ts % 60:02d}.{ts // 3600:06d}",
            f"{self.pos:08d}",
        )
        self.last[key] = out
        return out

    def items_image(self, id_: int, complete: bool = True) -> dict:
        r = self.rng
        img = {
            "ID": id_,
            "NAME": r.choice(["a", "b", "ü", "", None]),
            "AMT": r.choice(AMOUNTS),
            "D": r.choice(DATES),
            "TS": r.choice(TIMESTAMPS),
            "N": r.choice([1, -5, 2147483647, None]),
        }
        if not complete:
            del img[r.choice(["NAME", "AMT", "D", "TS", "N"])]
        return img

    def event(self, late_rate: float, partial_rate: float = 0.0) -> dict:
        r = self.rng
        op = r.choices("IUD", [3, 5, 2])[0]
        late, same = r.random() < late_rate, r.random() < 0.05
        if r.random() < 0.5:
            id_ = r.randint(1, 30)
            ts, pos = self.stamp(("i", id_), late, same)
            after = None if op == "D" else self.items_image(id_, r.random() >= partial_rate)
            before = None if op == "I" else {"ID": id_}
            table, pk = "SHOP.ITEMS", ["ID"]
        else:
            key = {"REGION": r.choice(["eu", "us"]), "CODE": r.choice("abcdefghijkl")}
            ts, pos = self.stamp(("v", key["REGION"], key["CODE"]), late, same)
            after = None if op == "D" else {**key, "V": r.choice([1, 2, 3, None])}
            before = None if op == "I" else dict(key)
            table, pk = "SHOP.VISITS", ["REGION", "CODE"]
        return {
            "table": table,
            "op_type": op,
            "op_ts": ts,
            "current_ts": ts,
            "pos": pos,
            "primary_keys": pk,
            "before": before,
            "after": after,
        }


def _write(path: Path, events: list) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((e if isinstance(e, str) else json.dumps(e, default=str)) + "\n" for e in events)
    )
    return str(path)


def _setup(root: Path, spark):
    wh = root / "warehouse"
    wh.mkdir(parents=True)
    cat = SqlCatalog(f"sqlite:///{wh / '_acidflow_catalog.db'}", warehouse=str(wh))
    for t in (T1, T2):
        cat.create_table(TableDef(**{**t.__dict__}))
    # rows written outside CDC: a NULL _cdc_position, older than every event
    with Transaction(cat) as txn:
        txn.insert(
            "cdc.items",
            spark.createDataFrame(
                pa.table(
                    {
                        "id": pa.array([1, 2, 3, 4], pa.int64()),
                        "name": ["x1", "x2", "x3", "x4"],
                        "amt": pa.array([Decimal("1.00")] * 4, pa.decimal128(12, 2)),
                        "d": pa.array([None] * 4, pa.date32()),
                        "ts": pa.array([None] * 4, pa.timestamp("us")),
                        "n": pa.array([0] * 4, pa.int32()),
                        POSITION_COLUMN: pa.array([None] * 4, pa.string()),
                    }
                )
            ),
        )
    return cat


def _state(cat, name: str):
    rows = read_table(None, cat, name, row_id=True).to_pylist()
    for r in rows:
        r["ROW__ID"] = tuple(r["ROW__ID"].values())
    return sorted(rows, key=lambda r: (r.get("region") or "", r["ROW__ID"]))


def _tombstones(cat):
    items = [key_json((i,)) for i in range(0, 32)]
    visits = [key_json((r, c)) for r in ("eu", "us") for c in "abcdefghijkl"]
    return cat.tombstones("cdc.items", items), cat.tombstones("cdc.visits", visits)


def _quarantine(report):
    if not report.quarantine_file:
        return []
    lines = [json.loads(x) for x in Path(report.quarantine_file).read_text().splitlines()]
    for x in lines:
        x.pop("quarantined_at")
    return lines


@pytest.mark.parametrize(
    "seed,policies",
    [
        (1, Policies()),
        (2, Policies()),
        (3, Policies("quarantine", "quarantine", "quarantine")),
        (4, Policies("insert", "quarantine", "count")),
    ],
)
def test_columnar_path_equals_row_path(spark, tmp_path, monkeypatch, seed, policies):
    taken: list[bool] = []
    real = cdc_apply._plan_columnar

    def spy(*a, **k):
        out = real(*a, **k)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(cdc_apply, "_plan_columnar", spy)
    fast_cat, row_cat = _setup(tmp_path / "fast", spark), _setup(tmp_path / "rows", spark)
    stream = Stream(seed)
    batches = []
    for b in range(7):
        # batch 0 in order; later ones with late events; batch 5 partial updates (row path)
        events = [
            stream.event(
                late_rate=0.0 if b in (0, 3) else 0.25, partial_rate=0.3 if b == 5 else 0.0
            )
            for _ in range(70)
        ]
        if b == 6:  # a value that does not convert: a bad record (row path for the batch)
            events.insert(
                3,
                {
                    **events[0],
                    "after": {"ID": 5, "AMT": "not a number"},
                    "table": "SHOP.ITEMS",
                    "primary_keys": ["ID"],
                    "op_type": "I",
                },
            )
        batches.append(events)
    kinds = []
    for b, events in enumerate(batches):
        path = _write(tmp_path / "in" / f"b{b:02d}.jsonl", events)
        reports = []
        for cat, use in ((fast_cat, True), (row_cat, False)):
            taken.clear()
            opts = CdcOptions(
                fmt="goldengate",
                tables=dict(SOURCES),
                policies=policies,
                quality_gate=False,
                quarantine_threshold=1.0,
                columnar=use,
            )
            reports.append(apply_file(spark, cat, path, opts))
            if use:
                kinds.append(list(taken))
        fast, rows = reports
        assert fast.tables == rows.tables, f"batch {b}"
        assert _quarantine(fast) == _quarantine(rows), f"batch {b}"
        for name in ("cdc.items", "cdc.visits"):
            assert _state(fast_cat, name) == _state(row_cat, name), f"batch {b} {name}"
        assert _tombstones(fast_cat) == _tombstones(row_cat), f"batch {b}"
    # the fast path took both tables of every batch but the partial-update one (items) and
    # the one with a bad value (items); the row path took those
    assert kinds[:5] == [[True, True]] * 5
    assert kinds[5] == kinds[6] == [False, True]


def test_fast_path_counts_every_case(spark, tmp_path):
    """Hand-made: each statistic of the plan is hit once by the fast path and equals the
    row path's (late vs stored, vs NULL-position row, vs tombstone; D of missing; I of
    existing; U of missing; I-U, U-D in one batch; equal positions in input order)."""
    fast_cat, row_cat = _setup(tmp_path / "fast", spark), _setup(tmp_path / "rows", spark)

    def ev(op, id_, ts, pos, name="v"):
        return {
            "table": "SHOP.ITEMS",
            "op_type": op,
            "op_ts": f"2024-06-01 00:00:{ts:02d}",
            "pos": f"{pos:04d}",
            "primary_keys": ["ID"],
            "before": None if op == "I" else {"ID": id_},
            "after": None
            if op == "D"
            else {"ID": id_, "NAME": name, "AMT": 1, "D": None, "TS": None, "N": 1},
        }

    b1 = [
        ev("I", 10, 10, 1),
        ev("U", 10, 11, 2, "u"),  # I-U: inserted
        ev("I", 11, 10, 3),
        ev("D", 11, 12, 4),  # I-D: nothing, tombstone
        ev("U", 12, 10, 5),
        ev("D", 13, 10, 6),  # U / D of missing
        ev("I", 1, 1, 7, "again"),  # I of existing (NULL pos)
        ev("U", 14, 20, 8, "first"),
        ev("U", 14, 20, 8, "second"),
    ]  # equal positions
    b2 = [
        ev("U", 10, 5, 9, "late"),  # late vs stored row
        ev("I", 11, 11, 10, "late"),  # late vs tombstone
        ev("I", 11, 13, 11, "back"),
        ev("D", 2, 0, 12),  # newer; D of NULL-pos row
        ev("U", 3, 14, 13),
        ev("D", 3, 15, 14),
    ]  # U-D of a stored row
    for b, events in enumerate((b1, b2)):
        path = _write(tmp_path / "in" / f"{b}.jsonl", events)
        out = [
            apply_file(
                spark,
                cat,
                path,
                CdcOptions(
                    fmt="goldengate", tables=dict(SOURCES), quality_gate=False, columnar=use
                ),
            )
            for cat, use in ((fast_cat, True), (row_cat, False))
        ]
        assert out[0].tables == out[1].tables
        assert _state(fast_cat, "cdc.items") == _state(row_cat, "cdc.items")
        assert _tombstones(fast_cat) == _tombstones(row_cat)
    s1 = json.loads(json.dumps(out[0].tables["cdc.items"]))
    assert (s1["ignored_late"], s1["rows_deleted"], s1["rows_inserted"]) == (2, 2, 1)
    got = {r["id"]: r["name"] for r in _state(fast_cat, "cdc.items")}
    assert got[14] == "second" and got[10] == "u" and got[11] == "back" and got[1] == "again"
    assert 2 not in got and 3 not in got and 13 not in got
