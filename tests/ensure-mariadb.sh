#!/usr/bin/env bash
# Makes sure a MariaDB server answers on 127.0.0.1:3306 for the integration and
# end-to-end tests: installs mariadb-server where it is missing, starts it where it
# is not running, and waits until it accepts connections.
set -euo pipefail

host=${JOBARCHIVE_TEST_MYSQL_HOST:-127.0.0.1}
port=${JOBARCHIVE_TEST_MYSQL_PORT:-3306}

ping() { mysqladmin --user=root --host="$host" --port="$port" --connect-timeout=2 ping >/dev/null 2>&1; }

ping && exit 0

if [ ! -x /usr/sbin/mariadbd ]; then
    echo "ensure-mariadb: installing mariadb-server" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq mariadb-server >/dev/null
fi

if ! pgrep -x mariadbd >/dev/null; then
    echo "ensure-mariadb: starting mariadbd" >&2
    install -d -o mysql -g mysql /run/mysqld
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
fi

for _ in $(seq 1 60); do
    ping && exit 0
    sleep 1
done
echo "ensure-mariadb: no MariaDB answers on $host:$port after 60 s" \
     "(a mariadbd on another port blocks start-stop-daemon --oknodo)" >&2
exit 1
