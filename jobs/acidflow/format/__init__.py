"""Hive's ACID rules, pure: no I/O of its own choosing, no pyspark, nothing else of acidflow.

* ``names``: base, delta, delete delta and bucket file names (Hive ``AcidUtils``);
* ``writeids``, ``layout``: ``ValidWriteIdList`` and ``getAcidState`` over a listing it is
  given (layout re-exports the names);
* ``bucketing``, ``bucketing_hash``: the bucket property (``BucketCodec``) and Hive's bucket
  hash (``ObjectInspectorUtils.getBucketNumber``, both bucketing versions);
* ``hivetypes``, ``types``: the one Hive type parser and the ORC / Arrow mappings;
* ``partitions``, ``schemaevolution``, ``keys``, ``packing``, ``table``: partition paths,
  Hive's type-change rules, primary-key hashes, stripe packing, the table protocol;
* ``fileio``: the file-system protocol the codec reads and writes through;
* ``orc/``: the ORC codec (event files, footer metadata, key index, the Arrow writer).

The rules and their Hive/Trino sources: docs/hive-acid-format.md.
"""
