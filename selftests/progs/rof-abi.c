// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof-abi - TAP test of the /dev/rof ABI basics: ROF_IOC_VERSION and
 * ROF_IOC_DEVICE_LIST with good and bad arguments.
 *
 *   rof-abi            run the tests
 *   rof-abi list       print "name index num_ports port:state ..." per device
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "uapi/rof.h"

#include "list-checks.h"

static int test_n, test_failed;

static void result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++test_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		test_failed++;
}

/* Expect ioctl to fail with @want (0: succeed). */
static void expect(int fd, unsigned long cmd, void *arg, int want,
		   const char *what)
{
	int rc = ioctl(fd, cmd, arg);
	int err = rc < 0 ? errno : 0;

	if (err == want)
		result(1, "%s: %s", what, want ? strerror(want) : "ok");
	else
		result(0, "%s: got %s, want %s", what,
		       err ? strerror(err) : "success",
		       want ? strerror(want) : "success");
}

static int list_devices(int fd, struct rof_device_info **out, unsigned int *n)
{
	struct rof_list req;
	struct rof_device_info *d = NULL;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.elem_size = sizeof(*d);
		if (ioctl(fd, ROF_IOC_DEVICE_LIST, &req))
			return -errno;
		free(d);
		d = calloc(req.total ? req.total : 1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		req.elems = (unsigned long)d;
		req.capacity = req.total;
		if (ioctl(fd, ROF_IOC_DEVICE_LIST, &req)) {
			free(d);
			return -errno;
		}
		if (req.total <= req.count)
			break;
	}
	*out = d;
	*n = req.count;
	return 0;
}

static int cmd_list(int fd)
{
	struct rof_device_info *d;
	unsigned int n, i, p;
	int rc = list_devices(fd, &d, &n);

	if (rc) {
		fprintf(stderr, "rof-abi: ROF_IOC_DEVICE_LIST: %s\n",
			strerror(-rc));
		return 1;
	}
	for (i = 0; i < n; i++) {
		printf("%s %u %u", d[i].name, d[i].index, d[i].num_ports);
		for (p = 0; p < d[i].num_ports && p < ROF_MAX_PORTS; p++)
			printf(" %u:%u:%u", d[i].ports[p].port_num,
			       d[i].ports[p].state, d[i].ports[p].active_mtu);
		putchar('\n');
	}
	free(d);
	return 0;
}

static void test_version(int fd)
{
	struct rof_version v;

	memset(&v, 0, sizeof(v));
	expect(fd, ROF_IOC_VERSION, &v, 0, "VERSION");
	result(v.abi_major == ROF_ABI_MAJOR && v.abi_minor == ROF_ABI_MINOR,
	       "VERSION reports ABI %u.%u", v.abi_major, v.abi_minor);
	result(memchr(v.module_version, 0, sizeof(v.module_version)) &&
	       v.module_version[0],
	       "VERSION module_version \"%.*s\" is terminated",
	       (int)sizeof(v.module_version), v.module_version);

	memset(&v, 0, sizeof(v));
	v.flags = 1;
	expect(fd, ROF_IOC_VERSION, &v, EINVAL, "VERSION with unknown flag");
	memset(&v, 0, sizeof(v));
	v.reserved = 1;
	expect(fd, ROF_IOC_VERSION, &v, EINVAL, "VERSION with reserved set");
	expect(fd, ROF_IOC_VERSION, (void *)8, EFAULT, "VERSION bad pointer");
}

static void result_list(int ok, const char *what)
{
	result(ok, "%s", what);
}

static uint32_t device_id_of(const void *e)
{
	return ((const struct rof_device_info *)e)->index;
}

static void test_list(int fd)
{
	struct rof_device_info d[2], *all;
	struct rof_list req;
	unsigned int n, i;
	int found = 0;

	memset(&req, 0, sizeof(req));
	req.elem_size = sizeof(d[0]);
	expect(fd, ROF_IOC_DEVICE_LIST, &req, 0, "DEVICE_LIST sizing call");
	result(req.count == 0 && req.total >= 1,
	       "sizing call: count %u, total %u", req.count, req.total);

	list_header_checks(fd, ROF_IOC_DEVICE_LIST, "DEVICE_LIST", sizeof(d[0]),
			   expect);
	list_paging_checks(fd, ROF_IOC_DEVICE_LIST, "DEVICE_LIST", sizeof(d[0]),
			   1, device_id_of, expect, result_list);
	/* A wrong elem_size is refused with a valid array, too. */
	memset(&req, 0, sizeof(req));
	req.elem_size = sizeof(d[0]) - 8;
	req.capacity = 2;
	req.elems = (unsigned long)d;
	expect(fd, ROF_IOC_DEVICE_LIST, &req, EINVAL, "DEVICE_LIST short elem_size");
	req.elem_size = sizeof(d[0]);
	req.elems = 16;
	expect(fd, ROF_IOC_DEVICE_LIST, NULL, EFAULT, "DEVICE_LIST NULL argument");
	expect(fd, _IOWR(ROF_IOC_MAGIC, 0xff, struct rof_list), &req, ENOTTY,
	       "unknown command");

	if (list_devices(fd, &all, &n)) {
		result(0, "DEVICE_LIST full listing");
		return;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(all[i].name, getenv("ROF_RXE") ?: "rxe0"))
			continue;
		found = 1;
		result(all[i].num_ports == 1 && all[i].ports[0].port_num == 1,
		       "%s has port 1 (num_ports %u)", all[i].name,
		       all[i].num_ports);
		result(all[i].ports[0].state == ROF_PORT_ACTIVE,
		       "%s port 1 is ACTIVE (state %u)", all[i].name,
		       all[i].ports[0].state);
		result(all[i].ports[0].active_mtu >= 256,
		       "%s port 1 active_mtu %u", all[i].name,
		       all[i].ports[0].active_mtu);
		result(all[i].node_guid != 0, "%s node_guid %016llx",
		       all[i].name, (unsigned long long)all[i].node_guid);
	}
	result(found, "the device list names %s", getenv("ROF_RXE") ?: "rxe0");
	free(all);
}

int main(int argc, char **argv)
{
	int fd = open(ROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		if (argc > 1)
			fprintf(stderr, "rof-abi: %s: %s\n", ROF_DEVICE_PATH,
				strerror(errno));
		else
			printf("Bail out! %s: %s\n", ROF_DEVICE_PATH,
			       strerror(errno));
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "list"))
		return cmd_list(fd);

	test_version(fd);
	test_list(fd);
	printf("1..%d\n", test_n);
	close(fd);
	return test_failed ? 1 : 0;
}
