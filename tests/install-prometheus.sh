#!/usr/bin/env bash
# Makes sure Debian's Prometheus is installed, for the private server the efficiency
# tests start and stop themselves (testbed/prometheus.py: its own data directory and
# configuration, a free port on loopback). Starts, stops and configures no service:
# the package's own prometheus.service, if it runs, is not touched.
set -euo pipefail

[ -x /usr/bin/prometheus ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-prometheus: /usr/bin/prometheus is missing; as root, run:" \
         "apt-get install --no-install-recommends prometheus" >&2
    exit 1
fi
echo "install-prometheus: installing prometheus (the binary only: no service is started)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# policy-rc.d: Debian's package would start its system service on install.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
    trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
