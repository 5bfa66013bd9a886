#!/bin/sh
# MODULE_IMPORT_NS(DMA_BUF) with a bare identifier: before 6.13. From 6.13
# the argument is a string literal and the identifier form fails to build
# (the string form builds everywhere, wrongly quoted before 6.13, so it is
# the identifier form that must be probed).
cat <<'C'
#include <linux/module.h>
MODULE_IMPORT_NS(DMA_BUF);
MODULE_LICENSE("Dual MIT/GPL");
C
