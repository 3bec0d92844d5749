#!/usr/bin/env bash
# One-shot initialisation (service airflow-init); safe to run on every `up`:
#   1. wait for the metadata database, `airflow db migrate`;
#   2. write the simple auth manager's passwords file from AIRFLOW_ADMIN_USER /
#      AIRFLOW_ADMIN_PASSWORD (so no password is generated, printed or baked in; changing the
#      variable and re-running init rotates it);
#   3. create / upgrade the acidflow transaction catalog (Alembic) at ACIDFLOW_CATALOG_URL.
set -euo pipefail

: "${AIRFLOW_ADMIN_PASSWORD:?AIRFLOW_ADMIN_PASSWORD must be set (see .env.example)}"
: "${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:?AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE must be set}"
: "${ACIDFLOW_CATALOG_URL:?ACIDFLOW_CATALOG_URL must be set}"

echo "airflow-init: waiting for the metadata database"
airflow db check --retry 30 --retry-delay 2
echo "airflow-init: airflow db migrate"
airflow db migrate

echo "airflow-init: simple auth manager passwords file"
python - <<'PY'
import json, os, tempfile

path = os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
user = os.environ.get("AIRFLOW_ADMIN_USER") or "admin"
os.makedirs(os.path.dirname(path), exist_ok=True)
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".passwords.")
with os.fdopen(fd, "w") as f:
    json.dump({user: os.environ["AIRFLOW_ADMIN_PASSWORD"]}, f)
    f.write("\n")
os.chmod(tmp, 0o600)
os.replace(tmp, path)
print(f"airflow-init: user {user!r} written to {path}")
PY

echo "airflow-init: acidflow catalog migrations"
python -c "from acidflow.catalog import Catalog; print('airflow-init: catalog ready:', Catalog.from_settings())"
echo "airflow-init: done"
