#!/usr/bin/env bash
# Makes sure Debian's Chromium and its chromedriver are installed, for the console's
# browser tests (selenium drives them by path; nothing is downloaded at run time).
set -euo pipefail

missing=
for tool in /usr/bin/chromium /usr/bin/chromedriver; do
    [ -x "$tool" ] || missing=1
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium: Chromium or chromedriver is missing; as root, run:" \
         "apt-get install chromium chromium-driver" >&2
    exit 1
fi
echo "install-chromium: installing chromium and chromium-driver" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
