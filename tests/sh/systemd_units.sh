#!/usr/bin/env bash
# systemd/kvsnapd.service and kvsnapd.socket pass `systemd-analyze verify`
# with no complaint (it exits 0 on mere warnings, so any output fails),
# a deliberately broken copy is caught (the check can fail), and the
# service carries the hardening the daemon issue asks for.
set -u
. "$(dirname "$0")/lib.bash"
need command:systemd-analyze
scratch units
# ExecStart must name an existing binary: point it at the build's
unit() { sed "s|/usr/local/bin/kvsnapd|$PWD/$BUILD/kvsnapd|; $1" systemd/kvsnapd.service > "$T/kvsnapd.service"; cp systemd/kvsnapd.socket "$T/"; }
unit ""
out=$(systemd-analyze verify --man=no "$T/kvsnapd.socket" "$T/kvsnapd.service" 2>&1); rc=$?
[ "$rc" -eq 0 ] && [ -z "$out" ]; ok "systemd-analyze verify: clean" $?
[ -z "$out" ] || echo "$out" | sed 's/^/#   /'
unit "s|Type=notify|Type=bogus|"
out=$(systemd-analyze verify --man=no "$T/kvsnapd.socket" "$T/kvsnapd.service" 2>&1)
[ -n "$out" ]; ok "a broken unit is reported" $?
for d in Type=notify User= StateDirectory= RuntimeDirectory= NoNewPrivileges=yes \
	ProtectSystem=strict ProtectHome= PrivateTmp=yes UMask=0077 Restart=on-failure; do
	grep -q "^$d" systemd/kvsnapd.service; ok "service has $d" $?
done
! grep -q '^PrivateDevices=yes' systemd/kvsnapd.service; ok "no PrivateDevices (GPU reachable)" $?
grep -q '^SocketMode=0660' systemd/kvsnapd.socket; ok "socket is 0660" $?
finish
