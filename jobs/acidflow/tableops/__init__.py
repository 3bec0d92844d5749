"""Table operations of ``acidflow table``: Hive DDL of a table (:mod:`.ddl`), adoption of an
existing Hive ACID table with its write-id history (:mod:`.adopt`) and conversion of a plain
ORC table into a full-ACID one (:mod:`.convert`, Hive's ``ALTER TABLE ... SET TBLPROPERTIES
('transactional'='true')``).

Layering: above the format (``acidflow.acid``) and the catalog (``acidflow.catalog``, including
``acidflow.catalog.hms.client`` for reading a metastore), below the CLI; it imports none of the
jobs.
"""
