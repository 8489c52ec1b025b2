#!/usr/bin/env bash
# Makes sure MariaDB's server binaries are installed, for the private server that the
# test run (and make bench) starts and stops itself, and Debian's galera-4 and rsync,
# for the private three-node Galera cluster the Galera tests start (rsync carries its
# state transfers). Starts, stops and configures no server: the machine's own database,
# if any, is not touched. The single server's binaries are not needed when
# JOBARCHIVE_TEST_MYSQL_URL names an external server; the Galera nodes still are.
set -euo pipefail

PATH="$PATH:/usr/sbin:/usr/local/sbin"
packages=()
if [ -z "${JOBARCHIVE_TEST_MYSQL_URL:-}" ]; then
    for tool in mariadbd mariadb-install-db my_print_defaults; do
        command -v "$tool" >/dev/null || missing=1
    done
    [ -n "${missing:-}" ] && packages+=(mariadb-server-core mariadb-client-core)
fi
# The Galera nodes need the server too, even beside an external server.
command -v mariadbd >/dev/null || packages+=(mariadb-server-core mariadb-client-core)
[ -e /usr/lib/galera/libgalera_smm.so ] || packages+=(galera-4)
command -v rsync >/dev/null || packages+=(rsync)
# wsrep_sst_rsync, the state transfer script, comes with Debian's mariadb-server.
command -v wsrep_sst_rsync >/dev/null || packages+=(mariadb-server)
[ "${#packages[@]}" -eq 0 ] && exit 0

mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
if [ "$(id -u)" -ne 0 ]; then
    echo "install-mariadb: missing ${packages[*]}; as root, run:" \
         "apt-get install ${packages[*]} (or set JOBARCHIVE_TEST_MYSQL_URL; the Galera tests are then skipped without galera-4)" >&2
    exit 1
fi
echo "install-mariadb: installing ${packages[*]} (binaries only: no service is started)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# policy-rc.d: Debian's mariadb-server would start the system service on install.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
    trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
