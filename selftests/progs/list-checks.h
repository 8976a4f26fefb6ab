/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * list-checks.h - the header checks every LIST command makes (struct
 * rof_list in kmod/include/uapi/rof.h), shared by the C test programs.
 */
#ifndef ROF_LIST_CHECKS_H
#define ROF_LIST_CHECKS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <uapi/rof.h>

/* The program's check: ioctl @cmd on @arg must fail with @want. */
typedef void (*list_expect_fn)(int fd, unsigned long cmd, void *arg,
			       int want, const char *what);

/*
 * A wrong elem_size, an unknown flag, reserved set, a capacity above
 * ROF_LIST_MAX and an unmapped array are refused.  @name: the command's,
 * for the messages; @elem_size: the right one.
 */
static void list_header_checks(int fd, unsigned long cmd, const char *name,
			       size_t elem_size, list_expect_fn expect)
{
	struct rof_list req;
	char what[96];

	memset(&req, 0, sizeof(req));
	req.elem_size = elem_size - 8;
	snprintf(what, sizeof(what), "%s wrong elem_size", name);
	expect(fd, cmd, &req, EINVAL, what);
	req.elem_size = elem_size + 8;
	snprintf(what, sizeof(what), "%s elem_size too big", name);
	expect(fd, cmd, &req, EINVAL, what);
	req.elem_size = elem_size;
	req.flags = 0x80;
	snprintf(what, sizeof(what), "%s unknown flag", name);
	expect(fd, cmd, &req, EINVAL, what);
	req.flags = 0;
	req.reserved = 1;
	snprintf(what, sizeof(what), "%s reserved set", name);
	expect(fd, cmd, &req, EINVAL, what);
	req.reserved = 0;
	req.capacity = ROF_LIST_MAX + 1;
	snprintf(what, sizeof(what), "%s huge capacity", name);
	expect(fd, cmd, &req, E2BIG, what);
	req.capacity = 2;
	req.elems = 16;		/* unmapped */
	snprintf(what, sizeof(what), "%s bad array", name);
	expect(fd, cmd, &req, EFAULT, what);
}

#endif /* ROF_LIST_CHECKS_H */
