#!/bin/sh
# The container's start (docs/deploy.md): configuration from the environment alone, the
# migrations, then the app in the foreground. Every line of output goes to stdout.
#
#   NMB_HOME              the study's folder: image store (and SQLite, when no database URL)
#   NMB_DATABASE_URL      postgresql+psycopg://user:password@host:5432/db
#   NMB_TRUSTED_PROXIES   the reverse proxy's address or network (X-Forwarded-For is believed
#                         only from there)
#   NMB_BASE_PATH         the path prefix, e.g. nmb for https://hospital.example/nmb/
#                         (else STREAMLIT_SERVER_BASE_URL_PATH, as outside the container)
#   NMB_PORT              the port the app listens on (8501)
#   NMB_RUNTIME_DIR       where the generated secrets file is written (/run/nmb)
#   NMB_DB_WAIT           seconds to wait for the database to answer at start (60)
#   NMB_OIDC_*, NMB_AUTH_COOKIE_SECRET   single sign-on, NMB_OIDC_PROMPT its prompt
#                         (deploy/configure.py)
set -eu
exec 2>&1
cd "$(dirname "$0")/.."  # the app's folder: serve.py, app.py, pages/

: "${NMB_HOME:=/var/lib/nmb}"
: "${NMB_RUNTIME_DIR:=/run/nmb}"
: "${NMB_BASE_PATH:=${STREAMLIT_SERVER_BASE_URL_PATH:-}}"
export NMB_HOME NMB_BASE_PATH
secrets="$NMB_RUNTIME_DIR/secrets.toml"

python deploy/configure.py "$secrets"
python deploy/wait_for_database.py  # up to NMB_DB_WAIT seconds (60)
python -m cli db upgrade  # migrations; a database newer than this code is refused (exit 2)
exec python -m streamlit run serve.py \
  --server.address 0.0.0.0 --server.port "${NMB_PORT:-8501}" \
  --server.baseUrlPath "${NMB_BASE_PATH:-}" --secrets.files "$secrets"
# (headless, no file watcher, no usage statistics: .streamlit/config.toml of the app's folder)
