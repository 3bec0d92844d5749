"""The CDC job: apply change files to full-ACID tables, one batch per file (``apply``), with the
plan of each batch (``changes``: precombine, the late-event rule, the fold into a split-update),
the CDC tables' bookkeeping (``tables``) and the spark-submit subcommand (``entry``).

Change formats and the PostgreSQL source live in ``acidflow.sources``; the job calls the quality
gate (``acidflow.quality``) and the quarantine (``acidflow.quarantine``); nothing below calls it."""
