"""Small full-ACID tables written the way a Hive writer does (catalog transaction, write id,
``delta_W_W_0000/bucket_N`` insert events, ``delete_delta_W_W_0000/bucket_N`` delete events,
``_orc_acid_version``, components, commit) without a Spark job per write -- the event files come
from the project's own ``EventFileWriter``, so the compaction tests stay fast."""

from __future__ import annotations

import collections

from acidflow.format.bucketing import decode_bucket_id, encode_bucket_property
from acidflow.format.layout import format_delta
from acidflow.format.orc import files as acid_files
from acidflow.storage.fs import TableFS, join


def write(
    catalog,
    name: str,
    inserts: dict[int, list[tuple]] | None = None,
    deletes: list[tuple[int, int, int]] = (),
    *,
    partition: str | None = None,
    end: str = "commit",
):
    """One transaction on ``name``: ``inserts`` = {writer/bucket id: [row tuples]},
    ``deletes`` = ROW__IDs ``(writeid, bucketid, rowid)`` to delete. ``end`` = commit, abort
    or open (left open). Returns ``(txn_id, write_id)``."""
    table = catalog.get_table(name)
    tfs = TableFS(table.location)
    pdir = join(table.location, partition) if partition else table.location
    cols = [(c.name, c.hive_type) for c in table.columns]
    txn = catalog.open_transaction(agent_info="test writer")
    w = catalog.allocate_write_id(txn, table.name)
    for b, rows in sorted((inserts or {}).items()):
        d = join(pdir, format_delta(w, w, 0))
        bp = encode_bucket_property(b, 0)
        acid_files.write_event_file(
            tfs, join(d, f"bucket_{b:05d}"), cols, [(0, w, bp, i, w, r) for i, r in enumerate(rows)]
        )
        acid_files.write_acid_version_file(tfs, d)
    if inserts:
        catalog.add_component(txn, table.name, partition, "insert")
    by_bucket = collections.defaultdict(list)
    for key in deletes:
        by_bucket[decode_bucket_id(key[1])].append(key)
    for b, keys in sorted(by_bucket.items()):
        d = join(pdir, format_delta(w, w, 0, delete=True))
        acid_files.write_event_file(
            tfs,
            join(d, f"bucket_{b:05d}"),
            cols,
            [(2, k[0], k[1], k[2], w, None) for k in sorted(keys)],
        )
        acid_files.write_acid_version_file(tfs, d)
    if deletes:
        catalog.add_component(txn, table.name, partition, "delete")
    if end == "commit":
        catalog.commit_transaction(txn)
    elif end == "abort":
        catalog.abort_transaction(txn, "test abort")
    return txn, w


def rows(catalog, name: str, **kw) -> list[tuple]:
    """Sorted visible rows (data columns + ROW__ID tuple) read in-process."""
    from acidflow.read import table as reads

    table = catalog.get_table(name)
    names = [c.name for c in table.columns + table.partition_columns]
    out = []
    for r in reads.read_table(None, catalog, name, row_id=True, **kw).to_pylist():
        rid = r["ROW__ID"]
        out.append(tuple(r[n] for n in names) + ((rid["writeid"], rid["bucketid"], rid["rowid"]),))
    return sorted(out, key=repr)
