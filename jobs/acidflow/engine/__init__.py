"""The write engine: ``Transaction`` (the user's verbs: insert, upsert, delete, update, merge,
insert overwrite), the statements in ``statements/`` typed against the one port
:class:`acidflow.engine.ports.StatementContext`, the writer (event files from Spark or Arrow),
the key lookup, incoming-frame conformance and the late-event ordering rule. Knows the catalog
only through the protocols of ``ports``."""
