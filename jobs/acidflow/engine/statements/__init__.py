"""Write statements beyond a plain insert/upsert: ``dml`` (UPDATE ... SET ... WHERE, DELETE
WHERE) and ``merge`` (MERGE INTO), each typed against
:class:`acidflow.engine.ports.StatementContext` (never against ``Transaction``)."""
