#!/bin/sh
# check-exports.sh LIBRARY: librof exports only its API.  Every dynamic
# symbol LIBRARY defines must be a C function of rof.h (rof_*), something
# of namespace rof (rof::, the generated rof::v1 messages included, with
# typeinfo and vtables), grpc.health.v1's generated code and the protobuf
# descriptor tables of both (which rofd needs from the one copy in librof),
# or the version node LIBROF_1 itself (libclient/librof.map); every one
# must carry version LIBROF_1.  Exit 77 (CTest's skip) when LIBRARY is not a shared
# library, as while the "rof" target is built static.
set -u
lib=${1:?usage: check-exports.sh LIBRARY}
case $lib in
*.so | *.so.*) ;;
*)
	echo "SKIP: $lib is not a shared library"
	exit 77
	;;
esac
syms=$(nm -D --defined-only "$lib") || exit 1
demangled=$(nm -D --defined-only -C "$lib") || exit 1
[ -n "$syms" ] || { echo "FAIL: $lib exports nothing"; exit 1; }

# The symbol name is the last field: "ADDRESS TYPE NAME" (ADDRESS may be
# absent for absolute symbols).  Demangled names contain spaces, so cut
# the first two fields instead.
bad=$(printf '%s\n' "$demangled" | sed -E 's/^[0-9a-f]* *[A-Za-z] //' |
	sed -E 's/@@?LIBROF_1$//' |
	grep -Ev '^(rof_[A-Za-z0-9_]*|LIBROF_1|((typeinfo for |typeinfo name for |vtable for |guard variable for )?(rof|grpc::health::v1)::.*)|(descriptor_table|TableStruct)_(rof|grpc_2fhealth)_[A-Za-z0-9_]*(::.*|\(.*\))?)$')
if [ -n "$bad" ]; then
	echo "FAIL: $lib exports symbols outside its API:"
	printf '%s\n' "$bad" | head -50 | sed 's/^/  /'
	exit 1
fi
unversioned=$(printf '%s\n' "$syms" | awk '{ print $NF }' | grep -v '@LIBROF_1$' | grep -vx 'LIBROF_1')
if [ -n "$unversioned" ]; then
	echo "FAIL: $lib exports symbols without version LIBROF_1:"
	printf '%s\n' "$unversioned" | head -50 | sed 's/^/  /'
	exit 1
fi
nc=$(printf '%s\n' "$syms" | awk '{ print $NF }' | grep -c '^rof_')
ncxx=$(printf '%s\n' "$syms" | grep -c ' _Z')
required="rof_code_name rof_client_open"
# The C API's session half is built once rof::Session is in the library.
if printf '%s\n' "$demangled" | grep -q ' rof::Session::'; then
	required="$required rof_session_open rof_read rof_post_read rof_poll"
fi
for f in $required; do
	printf '%s\n' "$syms" | awk '{ print $NF }' | grep -q "^$f@@LIBROF_1$" ||
		{ echo "FAIL: $lib does not export $f@@LIBROF_1"; exit 1; }
done
echo "ok: $lib exports $nc C symbols and $ncxx C++ symbols, all LIBROF_1, nothing else"
