#!/bin/sh
# SPDX-License-Identifier: MIT OR GPL-2.0-only
# Who may open /dev/gdrhook is said in two places that must agree: the mode
# the module gives its node (kmod/main.c, what devtmpfs makes without
# udev) and the packaged udev rule's (kmod/packaging/udev/70-gdrhook.rules,
# which both packages ship). Both are 0666, RDMA's model (kmod/README.md,
# "Access model"); the install leg and the VM's access step check the node
# itself.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "test_device_mode: FAIL: $*" >&2; exit 1; }
module=$(sed -n 's/^[[:space:]]*\.mode = \(0[0-7]*\),.*/\1/p' "$ROOT/kmod/main.c")
rule=$(sed -n 's/^KERNEL=="gdrhook".*MODE="\(0[0-7]*\)".*/\1/p' "$ROOT/kmod/packaging/udev/70-gdrhook.rules")
[ "$module" = 0666 ] || fail "kmod/main.c gives the node mode '$module', not 0666"
[ "$rule" = 0666 ] || fail "the udev rule gives the node mode '$rule', not 0666"
echo "test_device_mode: PASS: the module's node and the udev rule's are 0666"
