/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * list-checks.h - the header checks every LIST command makes (struct
 * rof_list in kmod/include/uapi/rof.h), shared by the C test programs.
 */
#ifndef ROF_LIST_CHECKS_H
#define ROF_LIST_CHECKS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <uapi/rof.h>

/* The program's check: ioctl @cmd on @arg must fail with @want. */
typedef void (*list_expect_fn)(int fd, unsigned long cmd, void *arg,
			       int want, const char *what);

/* The program's report of one check that is not an errno. */
typedef void (*list_result_fn)(int ok, const char *what);

/*
 * A wrong elem_size, an unknown flag, start without ROF_LIST_FROM, a capacity above
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
	req.flags = ROF_LIST_FROM << 1;
	snprintf(what, sizeof(what), "%s flag after ROF_LIST_FROM", name);
	expect(fd, cmd, &req, EINVAL, what);
	req.flags = 0;
	req.start = 1;
	snprintf(what, sizeof(what), "%s start without ROF_LIST_FROM", name);
	expect(fd, cmd, &req, EINVAL, what);
	req.start = 0;
	req.capacity = ROF_LIST_MAX + 1;
	snprintf(what, sizeof(what), "%s huge capacity", name);
	expect(fd, cmd, &req, E2BIG, what);
	req.capacity = 2;
	req.elems = 16;		/* unmapped */
	snprintf(what, sizeof(what), "%s bad array", name);
	expect(fd, cmd, &req, EFAULT, what);
}

/*
 * ROF_LIST_FROM (ABI 0.3): pages of @page elements, each from one past the
 * last id of the one before, list the objects of one unpaged LIST exactly
 * once, in increasing id order, and report as total how many are left;
 * past the last id the list is empty.  Objects must not come or go
 * meanwhile.  @id_of: an element's id (the one ROF_LIST_FROM orders by).
 * Inline, so that a program that does not page need not use it.
 */
static inline void list_paging_checks(int fd, unsigned long cmd,
				      const char *name, size_t elem_size,
				      uint32_t page,
				      uint32_t (*id_of)(const void *elem),
				      list_expect_fn expect,
				      list_result_fn result)
{
	uint32_t i, n, got = 0, pages = 0, start = 0, last = 0;
	int ordered = 1, bounded = 1, cursor = 1, same = 1;
	char *all = NULL, *buf = NULL;
	struct rof_list req;
	char what[160];

	memset(&req, 0, sizeof(req));
	req.elem_size = elem_size;
	snprintf(what, sizeof(what), "%s sizing call before paging", name);
	expect(fd, cmd, &req, 0, what);
	n = req.total;
	all = calloc(n + 16, elem_size);
	buf = calloc(page, elem_size);
	if (!all || !buf) {
		result(0, "paging checks: out of memory");
		goto out;
	}
	req.elems = (uintptr_t)all;
	req.capacity = n + 16;
	snprintf(what, sizeof(what), "%s unpaged", name);
	expect(fd, cmd, &req, 0, what);
	n = req.count;
	for (i = 1; i < n; i++)
		ordered &= id_of(all + i * elem_size) >
			   id_of(all + (i - 1) * elem_size);
	snprintf(what, sizeof(what), "%s unpaged: %u objects in id order",
		 name, n);
	result(ordered && n == req.total, what);

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.elems = (uintptr_t)buf;
		req.capacity = page;
		req.elem_size = elem_size;
		req.flags = ROF_LIST_FROM;
		req.start = start;
		snprintf(what, sizeof(what), "%s ROF_LIST_FROM %u, %u a page",
			 name, start, page);
		if (ioctl(fd, cmd, &req)) {
			expect(fd, cmd, &req, 0, what);
			goto out;
		}
		pages++;
		bounded &= req.count <= page && req.count <= req.total &&
			   req.total == n - got;
		for (i = 0; i < req.count && got + i < n; i++) {
			last = id_of(buf + i * elem_size);
			same &= last == id_of(all + (got + i) * elem_size);
		}
		cursor &= req.count ? req.start == last + 1 :
				      req.start == start;
		got += req.count;
		if (req.count == req.total || !req.count || pages > n + 1)
			break;
		start = req.start;
	}
	snprintf(what, sizeof(what),
		 "%s paged %u a page: %u objects in %u pages, each once, in id order",
		 name, page, got, pages);
	result(bounded && same && got == n, what);
	snprintf(what, sizeof(what),
		 "%s paged: start comes back one past the last id", name);
	result(cursor, what);

	/* Past the last id: nothing, and start unchanged. */
	memset(&req, 0, sizeof(req));
	req.elems = (uintptr_t)buf;
	req.capacity = page;
	req.elem_size = elem_size;
	req.flags = ROF_LIST_FROM;
	req.start = n ? id_of(all + (n - 1) * elem_size) + 1 : 0;
	start = req.start;
	snprintf(what, sizeof(what), "%s ROF_LIST_FROM past the last id", name);
	expect(fd, cmd, &req, 0, what);
	snprintf(what, sizeof(what),
		 "%s past the last id: count %u total %u, start kept", name,
		 req.count, req.total);
	result(!req.count && !req.total && req.start == start, what);

	/* A sizing call from the second object counts the rest. */
	if (n >= 2) {
		memset(&req, 0, sizeof(req));
		req.elem_size = elem_size;
		req.flags = ROF_LIST_FROM;
		req.start = id_of(all + elem_size);
		start = req.start;
		snprintf(what, sizeof(what),
			 "%s ROF_LIST_FROM sizing call", name);
		expect(fd, cmd, &req, 0, what);
		snprintf(what, sizeof(what),
			 "%s sizing from the second id: total %u of %u",
			 name, req.total, n);
		result(!req.count && req.total == n - 1 && req.start == start,
		       what);
	}
out:
	free(all);
	free(buf);
}

#endif /* ROF_LIST_CHECKS_H */
