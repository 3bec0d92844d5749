#!/usr/bin/env bash
# Runs once, when the postgres container initialises an empty data volume
# (/docker-entrypoint-initdb.d). Creates the two databases of the deployment, each owned by its
# own login role: the Airflow metadata database and the acidflow transaction catalog.
# Names and passwords come from the container's environment (see docker-compose.yml); nothing
# is defaulted here. psql variables (:"name" identifiers, :'value' literals) do the quoting.
set -euo pipefail

for v in AIRFLOW_DB_USER AIRFLOW_DB_PASSWORD AIRFLOW_DB_NAME \
         ACIDFLOW_DB_USER ACIDFLOW_DB_PASSWORD ACIDFLOW_DB_NAME; do
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
