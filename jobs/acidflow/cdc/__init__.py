"""Change data capture: change-record formats, and pulling wal2json changes from PostgreSQL."""
