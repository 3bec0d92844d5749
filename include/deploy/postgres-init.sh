#!/usr/bin/env bash
# Runs once, when the postgres container initialises an empty data volume
# (/docker-entrypoint-initdb.d). Creates the databases of the deployment, each owned by its own
# login role: the Airflow metadata database, the acidflow transaction catalog, the Hive
# metastore's database (its schema is written by Hive's schematool, service hive-metastore) and
# the CDC source database that Debezium streams (its role may replicate; a publication of all
# its tables, which only a superuser may create, is made here once for the connector).
# Names and passwords come from the container's environment (see docker-compose.yml); nothing
# is defaulted here. psql variables (:"name" identifiers, :'value' literals) do the quoting.
set -euo pipefail

for v in AIRFLOW_DB_USER AIRFLOW_DB_PASSWORD AIRFLOW_DB_NAME \
         ACIDFLOW_DB_USER ACIDFLOW_DB_PASSWORD ACIDFLOW_DB_NAME \
         HIVE_METASTORE_DB_USER HIVE_METASTORE_DB_PASSWORD HIVE_METASTORE_DB_NAME \
         SOURCE_DB_USER SOURCE_DB_PASSWORD SOURCE_DB_NAME SOURCE_DB_PUBLICATION; do
  if [ -z "${!v:-}" ]; then
    echo "postgres-init: $v is not set; it must be passed to the postgres service" >&2
    exit 1
  fi
done

create_db() {  # role password database
  psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname postgres \
       -v role="$1" -v password="$2" -v db="$3" <<'SQL'
CREATE ROLE :"role" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"role";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO :"role";
SQL
  echo "postgres-init: database $3 owned by $1"
}

create_db "$AIRFLOW_DB_USER" "$AIRFLOW_DB_PASSWORD" "$AIRFLOW_DB_NAME"
create_db "$ACIDFLOW_DB_USER" "$ACIDFLOW_DB_PASSWORD" "$ACIDFLOW_DB_NAME"
create_db "$HIVE_METASTORE_DB_USER" "$HIVE_METASTORE_DB_PASSWORD" "$HIVE_METASTORE_DB_NAME"
create_db "$SOURCE_DB_USER" "$SOURCE_DB_PASSWORD" "$SOURCE_DB_NAME"

# Debezium (pgoutput) opens a logical replication connection as the source role and reads the
# publication; FOR ALL TABLES also covers the tables created later.
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "$SOURCE_DB_NAME" \
     -v role="$SOURCE_DB_USER" -v publication="$SOURCE_DB_PUBLICATION" <<'SQL'
ALTER ROLE :"role" REPLICATION;
CREATE PUBLICATION :"publication" FOR ALL TABLES;
SQL
echo "postgres-init: $SOURCE_DB_USER may replicate; publication $SOURCE_DB_PUBLICATION on $SOURCE_DB_NAME"
