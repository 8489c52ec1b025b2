#!/usr/bin/env bash
# Makes sure MariaDB's server binaries are installed, for the private server that the
# test run (and make bench) starts and stops itself. Starts, stops and configures no
# server: the machine's own database, if any, is not touched. Nothing is needed when
# JOBARCHIVE_TEST_MYSQL_URL names an external server.
set -euo pipefail

[ -n "${JOBARCHIVE_TEST_MYSQL_URL:-}" ] && exit 0
PATH="$PATH:/usr/sbin:/usr/local/sbin"
for tool in mariadbd mariadb-install-db my_print_defaults; do
    command -v "$tool" >/dev/null || missing=1
done
[ -z "${missing:-}" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-mariadb: MariaDB's server binaries are missing; as root, run:" \
         "apt-get install mariadb-server-core mariadb-client-core (or set JOBARCHIVE_TEST_MYSQL_URL)" >&2
    exit 1
fi
echo "install-mariadb: installing mariadb-server-core and mariadb-client-core (binaries only: no service)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends mariadb-server-core mariadb-client-core >/dev/null
