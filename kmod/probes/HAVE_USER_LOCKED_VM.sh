#!/bin/sh
# struct user_struct's locked_vm: there when the kernel has one of the
# subsystems that charge it (networking, io_uring, memfd_secret, VFIO's,
# IOMMUFD's). Prints the test program.
cat <<'C'
#include <linux/sched/user.h>
long probe(struct user_struct *u)
{
	return atomic_long_read(&u->locked_vm);
}
C
