"""The ORC codec of ACID event files: ``files`` (event and original files, Hive's footer
metadata), ``orcfooter`` (footer rewrite), ``orcindex`` (the key index from stripe statistics
and bloom filters) and ``columnar`` (the streamed Arrow writer every statement uses).

I/O goes through the :class:`acidflow.format.fileio.FileIO` protocol a caller passes in."""
