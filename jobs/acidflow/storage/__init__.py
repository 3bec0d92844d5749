"""Storage: file systems (local disk, fsspec object stores), exclusive directory claims, a
partition's listing turned into Hive's ``AcidState`` (``state``), and the rules that read a
table's directories: history retention (``retention``) and the checks of an adopted Hive
table (``adoption``). Imports only :mod:`acidflow.format`."""
