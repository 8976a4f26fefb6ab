#!/bin/bash
# What `make demo` shows inside the VM: rofd serving the device status
# that rof.ko reads from the RDMA core, through rofctl.
. "$ROF_SRC/selftests/lib.sh"
set -e
echo "== rdma link"
rdma link show
echo "== starting rofd"
rofd_start
echo "== rofctl status"
rofctl --socket "$ROF_SOCKET" status
echo "== rofctl status -j"
rofctl --socket "$ROF_SOCKET" -p status -j
rofd_stop
echo "== rofd stopped"
