#!/bin/sh
# compat_ptr_ioctl(): added in 5.5. Prints the test program.
cat <<'C'
#include <linux/fs.h>
long probe(struct file *f, unsigned int cmd, unsigned long arg)
{
	return compat_ptr_ioctl(f, cmd, arg);
}
C
