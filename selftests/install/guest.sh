#!/bin/bash
# selftests/install/guest.sh - the guest side of the install test, started
# by rof-install.service in a VM whose PID 1 is systemd (selftests/vm/run
# --mode install): the test (check) as KTAP, one top-level result with the
# test's TAP lines indented beneath it, as selftests/vm/guest-run does.
set -u
# shellcheck source=/dev/null # written by selftests/vm/init
. /etc/rof-install.env
# shellcheck source=/dev/null # written by selftests/install/run
. "$ROF_BUILD/vm/install.env"
export ROF_SRC ROF_BUILD ROF_INSTALL_REDUCED ROF_TMP_MARKER ROF_DKMS_TARBALL
echo "KTAP version 1"
echo "1..1"
echo "# rofvm: start install"
start=$(date +%s)
bash "$ROF_SRC/selftests/install/check" 2>&1 | sed -u 's/^/  /'
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ]; then
	echo "ok 1 install # $(($(date +%s) - start))s"
else
	echo "  not ok 999 - install exited with status $rc"
	echo "not ok 1 install # $(($(date +%s) - start))s"
fi
exit "$rc"
