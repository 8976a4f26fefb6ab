// SPDX-License-Identifier: GPL-2.0-only
/*
 * kobj-ioctl - TAP test of the tenant, region, free-list, audit and drain
 * ioctls of /dev/rof: every command with good and bad arguments, without
 * CAP_SYS_ADMIN, and region mappings across processes.
 *
 *   kobj-ioctl              run the tests (leaves no object behind)
 *   kobj-ioctl setup NAME   create tenant NAME with a 1 MiB region "r0"
 *                           and a free list in it, print the tenant id
 *   kobj-ioctl count        print "tenants regions freelists"
 *   kobj-ioctl drain [force] ROF_IOC_TENANT_DRAIN; prints "destroyed remaining"
 *   kobj-ioctl cycles N     N create/destroy cycles of every object type
 *                           (tenant, region, mapping, free list, token,
 *                           audit fd); exit status says whether all worked
 *   kobj-ioctl races N      TAP test of creates racing destroys by id
 *                           (N stress iterations; uses the module's
 *                           fault_delay_ms) and of LIST copy-outs that
 *                           fault (userfaultfd) while other commands run
 *   kobj-ioctl revoke-wait REGION DELAY_MS SESSION...
 *                           force-destroy REGION, whose live SESSIONs
 *                           detach DELAY_MS late (fault_delay_ms): the
 *                           destroy must wait for them
 *   kobj-ioctl revoke-kill REGION DELAY_MS
 *                           the same destroy in a child, killed while it
 *                           waits: it dies at once, the region is gone
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uapi/rof.h"
#include "uapi/rof_isa.h"

#include "crc64.h"
#include "list-checks.h"

#define PAGE		4096UL
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define NOBODY		65534

static int test_n, test_failed;
static int quiet;	/* in cycles: report failures only */

static void result(int ok, const char *fmt, ...)
{
	va_list ap;

	if (quiet && ok)
		return;
	printf("%sok %d - ", ok ? "" : "not ", ++test_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		test_failed++;
}

/* ioctl, returning 0 or the errno. */
static int ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

static int expect(int fd, unsigned long cmd, void *arg, int want,
		  const char *what)
{
	int err = ioc(fd, cmd, arg);

	if (err == want)
		result(1, "%s: %s", what, want ? strerror(want) : "ok");
	else
		result(0, "%s: got %s, want %s", what,
		       err ? strerror(err) : "success",
		       want ? strerror(want) : "success");
	return err;
}

/* expect() as list_header_checks() calls it. */
static void expect_list(int fd, unsigned long cmd, void *arg, int want,
			const char *what)
{
	expect(fd, cmd, arg, want, what);
}

/* result() as list_paging_checks() calls it. */
static void result_list(int ok, const char *what)
{
	result(ok, "%s", what);
}

/* The ids ROF_LIST_FROM orders each list by. */
static uint32_t tenant_id_of(const void *e)
{
	return ((const struct rof_tenant_info *)e)->id;
}

static uint32_t region_id_of(const void *e)
{
	return ((const struct rof_region_info *)e)->id;
}

static uint32_t freelist_id_of(const void *e)
{
	return ((const struct rof_freelist_info *)e)->id;
}

static int open_rof(void)
{
	int fd = open(ROF_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		printf("Bail out! %s: %s\n", ROF_DEVICE_PATH, strerror(errno));
		exit(1);
	}
	return fd;
}

static int tenant_create(int fd, const char *name, uint32_t *id)
{
	struct rof_tenant_create c;
	int err;

	memset(&c, 0, sizeof(c));
	snprintf(c.name, sizeof(c.name), "%s", name);
	err = ioc(fd, ROF_IOC_TENANT_CREATE, &c);
	if (!err)
		*id = c.id;
	return err;
}

static int destroy(int fd, unsigned long cmd, uint32_t id, uint32_t flags)
{
	struct rof_destroy d = { .id = id, .flags = flags };

	return ioc(fd, cmd, &d);
}

static int region_create(int fd, uint32_t tenant, const char *name,
			 uint64_t size, uint32_t access, uint32_t *id)
{
	struct rof_region_create c;
	int err;

	memset(&c, 0, sizeof(c));
	snprintf(c.name, sizeof(c.name), "%s", name);
	c.tenant = tenant;
	c.size = size;
	c.access = access;
	err = ioc(fd, ROF_IOC_REGION_CREATE, &c);
	if (!err)
		*id = c.id;
	return err;
}

static int freelist_create(int fd, uint32_t region, uint64_t offset,
			   uint32_t block_size, uint32_t count, uint32_t *id)
{
	struct rof_freelist_create c;
	int err;

	memset(&c, 0, sizeof(c));
	c.region = region;
	c.offset = offset;
	c.block_size = block_size;
	c.count = count;
	err = ioc(fd, ROF_IOC_FREELIST_CREATE, &c);
	if (!err)
		*id = c.id;
	return err;
}

static int mint(int fd, uint32_t region, uint32_t access, uint32_t ttl_ms,
		uint64_t token[2])
{
	struct rof_region_token t;
	int err;

	memset(&t, 0, sizeof(t));
	t.region = region;
	t.access = access;
	t.ttl_ms = ttl_ms;
	err = ioc(fd, ROF_IOC_REGION_TOKEN, &t);
	if (!err)
		memcpy(token, t.token, sizeof(t.token));
	return err;
}

static int map_token(int fd, const uint64_t token[2], struct rof_region_map *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->token, token, sizeof(m->token));
	return ioc(fd, ROF_IOC_REGION_MAP, m);
}

/* LIST into a malloc'd array; returns the errno. */
static int list_all(int fd, unsigned long cmd, size_t elem_size, void **out,
		    uint32_t *n)
{
	struct rof_list req;
	void *buf = NULL;
	int err;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.elem_size = elem_size;
		err = ioc(fd, cmd, &req);
		if (err)
			return err;
		free(buf);
		buf = calloc(req.total + 1, elem_size);
		if (!buf)
			return errno;	/* ENOMEM */
		req.elems = (uintptr_t)buf;
		req.capacity = req.total + 1;
		err = ioc(fd, cmd, &req);
		if (err) {
			free(buf);
			return err;
		}
		if (req.count == req.total)
			break;
	}
	*out = buf;
	*n = req.count;
	return 0;
}

static int get_tenant(int fd, uint32_t id, struct rof_tenant_info *ti)
{
	memset(ti, 0, sizeof(*ti));
	ti->id = id;
	return ioc(fd, ROF_IOC_TENANT_GET, ti);
}

static int get_region(int fd, uint32_t id, struct rof_region_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->id = id;
	return ioc(fd, ROF_IOC_REGION_GET, ri);
}

/* Remove CAP_SYS_ADMIN from this process, staying uid 0. */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	data[CAP_SYS_ADMIN / 32].permitted &= ~(1U << (CAP_SYS_ADMIN % 32));
	data[CAP_SYS_ADMIN / 32].inheritable &= ~(1U << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &hdr, data);
}

static int become_nobody(void)
{
	return setresgid(NOBODY, NOBODY, NOBODY) ||
	       setresuid(NOBODY, NOBODY, NOBODY) ? -1 : 0;
}

/* Run @fn in a child; its exit status is the number of failures. */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* --- tenants ------------------------------------------------------------ */

static uint32_t ta, tb;		/* the test's tenants */

static void test_tenants(int fd)
{
	struct rof_tenant_create c;
	struct rof_tenant_set_quota q;
	struct rof_tenant_info ti, *all;
	struct rof_list req;
	uint32_t n, i, found = 0, id;

	expect(fd, ROF_IOC_TENANT_CREATE, &(struct rof_tenant_create){
		.name = "kobj-a" }, 0, "TENANT_CREATE kobj-a");
	n = tenant_create(fd, "kobj-a2", &ta);
	result(!n && ta >= 1 && ta <= ROF_TENANT_ID_MAX,
	       "TENANT_CREATE assigns id %u", ta);
	expect(fd, ROF_IOC_TENANT_CREATE, &(struct rof_tenant_create){
		.name = "kobj-a2" }, EEXIST, "TENANT_CREATE duplicate name");

	memset(&c, 0, sizeof(c));
	strcpy(c.name, "kobj-b");
	c.flags = ROF_TENANT_CREATE_ID;
	c.id = 4242;
	expect(fd, ROF_IOC_TENANT_CREATE, &c, 0, "TENANT_CREATE with id 4242");
	tb = c.id;
	result(tb == 4242, "TENANT_CREATE kept the given id (%u)", tb);
	strcpy(c.name, "kobj-b2");
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EEXIST, "TENANT_CREATE duplicate id");
	c.id = 0;
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE id 0");
	c.id = ROF_TENANT_ID_MAX + 1;
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE id above max");
	c.flags = 0;
	c.id = 7;
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE id without flag");
	c.id = 0;
	c.flags = 0x8;
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE unknown flag");
	c.flags = 0;
	c.reserved = 1;
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE reserved set");
	c.reserved = 0;
	memset(c.name, 'a', sizeof(c.name));
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE unterminated name");
	memset(c.name, 0, sizeof(c.name));
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE empty name");
	strcpy(c.name, "a/b");
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE name with '/'");
	strcpy(c.name, "a b");
	expect(fd, ROF_IOC_TENANT_CREATE, &c, EINVAL, "TENANT_CREATE name with ' '");
	expect(fd, ROF_IOC_TENANT_CREATE, (void *)8, EFAULT, "TENANT_CREATE bad pointer");

	/* GET */
	memset(&ti, 0, sizeof(ti));
	ti.id = ta;
	expect(fd, ROF_IOC_TENANT_GET, &ti, 0, "TENANT_GET");
	result(!strcmp(ti.name, "kobj-a2") && ti.id == ta,
	       "TENANT_GET names kobj-a2 (%s, %u)", ti.name, ti.id);
	result(ti.quota.region_bytes == ROF_QUOTA_UNLIMITED &&
	       ti.quota.sessions == UINT32_MAX &&
	       ti.quota.programs == UINT32_MAX &&
	       ti.quota.credits == ROF_CREDITS_DEFAULT,
	       "new tenant: unlimited, credits %u", ti.quota.credits);
	result(!ti.usage.region_bytes && !ti.usage.regions &&
	       !ti.usage.sessions && !ti.usage.programs && !ti.flags,
	       "new tenant: no usage, no flags");
	memset(&ti, 0, sizeof(ti));
	ti.id = 999999;
	expect(fd, ROF_IOC_TENANT_GET, &ti, ENOENT, "TENANT_GET unknown id");
	ti.id = ta;
	ti.flags = 2;
	expect(fd, ROF_IOC_TENANT_GET, &ti, EINVAL, "TENANT_GET unknown flag");
	expect(fd, ROF_IOC_TENANT_GET, (void *)8, EFAULT, "TENANT_GET bad pointer");

	/* SET_QUOTA */
	memset(&q, 0, sizeof(q));
	q.id = ta;
	q.quota.region_bytes = 2 * PAGE;
	q.quota.sessions = 3;
	q.quota.programs = 4;
	q.quota.credits = 16;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, 0, "TENANT_SET_QUOTA");
	get_tenant(fd, ta, &ti);
	result(ti.quota.region_bytes == 2 * PAGE && ti.quota.sessions == 3 &&
	       ti.quota.programs == 4 && ti.quota.credits == 16,
	       "TENANT_GET shows the new quota");
	q.quota.credits = 0;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, EINVAL, "SET_QUOTA credits 0");
	q.quota.credits = ROF_CREDITS_QUOTA_MAX + 1;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, EINVAL, "SET_QUOTA credits above max");
	q.quota.credits = 16;
	q.quota.invoke_records = ROF_INVOKE_SAMPLE_MAX + 1;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, EINVAL, "SET_QUOTA invoke_records above sample max");
	q.quota.invoke_records = ~0U;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, EINVAL, "SET_QUOTA invoke_records all ones");
	q.quota.invoke_records = ROF_INVOKE_SAMPLE_MAX;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, 0, "SET_QUOTA invoke_records sample max");
	get_tenant(fd, ta, &ti);
	result(ti.quota.invoke_records == ROF_INVOKE_SAMPLE_MAX,
	       "TENANT_GET shows invoke_records");
	q.quota.invoke_records = ROF_INVOKE_RECORDS_ALL;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, 0, "SET_QUOTA invoke_records all");
	q.flags = 1;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, EINVAL, "SET_QUOTA unknown flag");
	q.flags = 0;
	q.id = 999999;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, ENOENT, "SET_QUOTA unknown tenant");

	/* LIST */
	memset(&req, 0, sizeof(req));
	req.elem_size = sizeof(ti);
	expect(fd, ROF_IOC_TENANT_LIST, &req, 0, "TENANT_LIST sizing call");
	result(req.count == 0 && req.total >= 3, "sizing call: count %u total %u",
	       req.count, req.total);
	list_header_checks(fd, ROF_IOC_TENANT_LIST, "TENANT_LIST", sizeof(ti),
			   expect_list);
	list_paging_checks(fd, ROF_IOC_TENANT_LIST, "TENANT_LIST", sizeof(ti),
			   1, tenant_id_of, expect_list, result_list);
	list_paging_checks(fd, ROF_IOC_TENANT_LIST, "TENANT_LIST", sizeof(ti),
			   2, tenant_id_of, expect_list, result_list);
	if (!list_all(fd, ROF_IOC_TENANT_LIST, sizeof(ti), (void **)&all, &n)) {
		for (i = 0; i < n; i++)
			found += (all[i].id == ta && !strcmp(all[i].name, "kobj-a2")) +
				 (all[i].id == tb && !strcmp(all[i].name, "kobj-b"));
		free(all);
	}
	result(found == 2, "TENANT_LIST lists kobj-a2 and kobj-b");

	/* Destroy kobj-a (the one created by literal). */
	id = 0;
	if (!list_all(fd, ROF_IOC_TENANT_LIST, sizeof(ti), (void **)&all, &n)) {
		for (i = 0; i < n; i++)
			if (!strcmp(all[i].name, "kobj-a"))
				id = all[i].id;
		free(all);
	}
	result(id && !destroy(fd, ROF_IOC_TENANT_DESTROY, id, 0),
	       "TENANT_DESTROY an empty tenant");
	result(destroy(fd, ROF_IOC_TENANT_DESTROY, id, 0) == ENOENT,
	       "TENANT_DESTROY again: ENOENT");
	result(destroy(fd, ROF_IOC_TENANT_DESTROY, ta, 0x10) == EINVAL,
	       "TENANT_DESTROY unknown flag: EINVAL");
	expect(fd, ROF_IOC_TENANT_DESTROY, &(struct rof_destroy){
		.id = ta, .reserved = 1 }, EINVAL, "TENANT_DESTROY reserved set");
}

/* --- regions ------------------------------------------------------------ */

static uint32_t ra, rb;		/* 64 KiB in ta (after quota raise), in tb */

/*
 * ABI 0.7: a region made with its free lists in one command, or not at
 * all; the checks of the lists themselves are the Module contract's
 * (kmod-contract), which runs on this module too.
 */
static void test_region_freelists(int fd)
{
	struct {
		struct rof_region_freelists h;
		struct rof_freelist_spec l[2];
	} fls, *ro;
	struct rof_tenant_info before, after;
	struct rof_region_create c;
	struct rof_region_info ri;

	memset(&fls, 0, sizeof(fls));
	fls.h.count = 2;
	fls.l[0].block_size = 64;
	fls.l[0].count = 8;
	fls.l[1].offset = 1024;
	fls.l[1].block_size = 64;
	fls.l[1].count = 8;
	memset(&c, 0, sizeof(c));
	strcpy(c.name, "with-lists");
	c.tenant = ta;
	c.size = PAGE;
	c.access = ROF_ACCESS_ALL;
	c.freelists = (uintptr_t)&fls;
	expect(fd, ROF_IOC_REGION_CREATE, &c, 0,
	       "REGION_CREATE with two free lists");
	result(fls.l[0].id && fls.l[1].id && fls.l[0].id != fls.l[1].id,
	       "REGION_CREATE writes each list's id back (%u, %u)",
	       fls.l[0].id, fls.l[1].id);
	memset(&ri, 0, sizeof(ri));
	ri.id = c.id;
	expect(fd, ROF_IOC_REGION_GET, &ri, 0, "REGION_GET of it");
	result(ri.freelists == 2, "the region has its 2 free lists (%u)",
	       ri.freelists);
	result(!destroy(fd, ROF_IOC_REGION_DESTROY, c.id, 0),
	       "REGION_DESTROY takes its free lists");

	/* The ids cannot be written back: region and lists are undone. */
	ro = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED) {
		result(0, "mmap: %s", strerror(errno));
		return;
	}
	fls.l[0].id = 0;
	fls.l[1].id = 0;
	memcpy(ro, &fls, sizeof(fls));
	mprotect(ro, PAGE, PROT_READ);
	get_tenant(fd, ta, &before);
	c.freelists = (uintptr_t)ro;
	expect(fd, ROF_IOC_REGION_CREATE, &c, EFAULT,
	       "REGION_CREATE whose lists' ids cannot be written: EFAULT");
	get_tenant(fd, ta, &after);
	result(after.usage.regions == before.usage.regions &&
	       after.usage.freelists == before.usage.freelists &&
	       after.usage.region_bytes == before.usage.region_bytes,
	       "nothing of it is left (%u regions, %u free lists)",
	       after.usage.regions, after.usage.freelists);
	munmap(ro, PAGE);
}

static void test_regions(int fd)
{
	struct rof_region_create c;
	struct rof_tenant_set_quota q;
	struct rof_region_info ri, *all;
	struct rof_tenant_info ti;
	uint32_t id, big, n, i, found = 0;

	/* Quota: ta may have 2 pages. */
	result(!region_create(fd, ta, "q1", 2 * PAGE, ROF_ACCESS_READ, &id),
	       "REGION_CREATE within quota");
	result(region_create(fd, ta, "q2", PAGE, ROF_ACCESS_READ, &big) == EDQUOT,
	       "REGION_CREATE over the region_bytes quota: EDQUOT");
	get_tenant(fd, ta, &ti);
	result(ti.usage.region_bytes == 2 * PAGE && ti.usage.regions == 1,
	       "usage counts the region (%llu bytes, %u regions)",
	       (unsigned long long)ti.usage.region_bytes, ti.usage.regions);
	result(!destroy(fd, ROF_IOC_REGION_DESTROY, id, 0), "REGION_DESTROY");
	get_tenant(fd, ta, &ti);
	result(!ti.usage.region_bytes && !ti.usage.regions, "usage back to 0");
	memset(&q, 0, sizeof(q));
	q.id = ta;
	q.quota.region_bytes = ROF_QUOTA_UNLIMITED;
	q.quota.sessions = q.quota.programs = UINT32_MAX;
	q.quota.credits = ROF_CREDITS_DEFAULT;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, 0, "SET_QUOTA unlimited");

	result(!region_create(fd, ta, "ra", 16 * PAGE,
			      ROF_ACCESS_READ | ROF_ACCESS_WRITE, &ra),
	       "REGION_CREATE ra (64 KiB, rw)");
	result(region_create(fd, ta, "ra", PAGE, 0, &id) == EEXIST,
	       "REGION_CREATE duplicate name in a tenant: EEXIST");
	result(!region_create(fd, tb, "ra", PAGE, ROF_ACCESS_ALL, &rb),
	       "REGION_CREATE same name in another tenant");

	memset(&c, 0, sizeof(c));
	strcpy(c.name, "bad");
	c.tenant = ta;
	c.size = PAGE;
	c.access = 0x8;
	expect(fd, ROF_IOC_REGION_CREATE, &c, EINVAL, "REGION_CREATE unknown right");
	c.access = 0;
	c.flags = 1;
	expect(fd, ROF_IOC_REGION_CREATE, &c, EINVAL, "REGION_CREATE unknown flag");
	c.flags = 0;
	c.freelists = 8;	/* nothing mapped there */
	expect(fd, ROF_IOC_REGION_CREATE, &c, EFAULT,
	       "REGION_CREATE free lists at a bad address: EFAULT");
	c.freelists = 0;
	c.size = 0;
	expect(fd, ROF_IOC_REGION_CREATE, &c, EINVAL, "REGION_CREATE size 0");
	c.size = PAGE + 1;
	expect(fd, ROF_IOC_REGION_CREATE, &c, EINVAL, "REGION_CREATE size not page-aligned");
	c.size = ROF_REGION_SIZE_MAX + PAGE;
	expect(fd, ROF_IOC_REGION_CREATE, &c, E2BIG, "REGION_CREATE above max size");
	c.size = ~0ULL & ~(PAGE - 1);
	expect(fd, ROF_IOC_REGION_CREATE, &c, E2BIG, "REGION_CREATE size near 2^64");
	c.size = PAGE;
	c.tenant = 999999;
	expect(fd, ROF_IOC_REGION_CREATE, &c, ENOENT, "REGION_CREATE unknown tenant");
	c.tenant = ta;
	memset(c.name, 'x', sizeof(c.name));
	expect(fd, ROF_IOC_REGION_CREATE, &c, EINVAL, "REGION_CREATE unterminated name");
	expect(fd, ROF_IOC_REGION_CREATE, (void *)8, EFAULT, "REGION_CREATE bad pointer");

	/* GET / LIST */
	expect(fd, ROF_IOC_REGION_GET, &(struct rof_region_info){ .id = ra },
	       0, "REGION_GET");
	get_region(fd, ra, &ri);
	result(!strcmp(ri.name, "ra") && ri.size == 16 * PAGE &&
	       ri.tenant == ta && ri.access == (ROF_ACCESS_READ | ROF_ACCESS_WRITE) &&
	       ri.chunks >= 1 && ri.chunks <= 16 && !ri.attachments &&
	       !ri.mappings && !ri.freelists,
	       "REGION_GET: ra, 64 KiB, tenant %u, %u chunk(s)", ri.tenant,
	       ri.chunks);
	expect(fd, ROF_IOC_REGION_GET, &(struct rof_region_info){ .id = 999999 },
	       ENOENT, "REGION_GET unknown id");
	expect(fd, ROF_IOC_REGION_GET, &(struct rof_region_info){ .id = ra,
	       .flags = ROF_GET_BY_NAME << 1 }, EINVAL, "REGION_GET unknown flag");
	/* By name: the Module contract's RegionsAreFoundByTenantAndName. */
	list_header_checks(fd, ROF_IOC_REGION_LIST, "REGION_LIST", sizeof(ri),
			   expect_list);
	list_paging_checks(fd, ROF_IOC_REGION_LIST, "REGION_LIST", sizeof(ri),
			   1, region_id_of, expect_list, result_list);
	if (!list_all(fd, ROF_IOC_REGION_LIST, sizeof(ri), (void **)&all, &n)) {
		for (i = 0; i < n; i++)
			found += (all[i].id == ra && all[i].tenant == ta) +
				 (all[i].id == rb && all[i].tenant == tb);
		free(all);
	}
	result(found == 2, "REGION_LIST lists ra in both tenants");

	/* 4 MiB: the module tries 2 MiB runs first. */
	if (!region_create(fd, tb, "big", 1024 * PAGE, ROF_ACCESS_READ, &big)) {
		get_region(fd, big, &ri);
		result(ri.size == 1024 * PAGE && ri.chunks >= 1 && ri.chunks <= 1024,
		       "4 MiB region in %u physically contiguous run(s)", ri.chunks);
		result(!destroy(fd, ROF_IOC_REGION_DESTROY, big, 0),
		       "REGION_DESTROY 4 MiB region");
	} else {
		result(0, "REGION_CREATE 4 MiB: %s", strerror(errno));
	}
	result(destroy(fd, ROF_IOC_REGION_DESTROY, 999999, 0) == ENOENT,
	       "REGION_DESTROY unknown id: ENOENT");
	result(destroy(fd, ROF_IOC_REGION_DESTROY, ra, 4) == EINVAL,
	       "REGION_DESTROY unknown flag: EINVAL");
	result(destroy(fd, ROF_IOC_TENANT_DESTROY, ta, 0) == ENOTEMPTY,
	       "TENANT_DESTROY of a tenant with regions: ENOTEMPTY");
}

/* --- mappings ------------------------------------------------------------ */

struct map_arg {
	uint64_t token[2];
	int write;		/* map read/write and fill the pattern */
	int pipe_rd;		/* -1, or wait for a byte before re-checking */
	int ready_wr;		/* -1, or write a byte once mapped */
	uint32_t expect_region;
};

/* The byte at region offset @i: differs between pages. */
static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 7 + 3 + (i >> 12));
}

static int pattern_ok(const unsigned char *p, size_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(off + i))
			return 0;
	return 1;
}

/* A local process without privileges: binds, maps, writes or checks. */
static int child_map(void *varg)
{
	struct map_arg *a = varg;
	struct rof_region_map m;
	int fd = open_rof(), fails = 0;
	unsigned char *p;
	size_t len = 16 * PAGE, i;
	char c;

	quiet = 0;
	if (become_nobody())
		return 100;
	if (map_token(fd, a->token, &m))
		return 101;
	if (m.region != a->expect_region || m.size != len)
		return 102;
	if (!a->write) {
		/* Read-only: no writable mapping, now or later. */
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED || errno != EACCES)
			fails++;
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return 103;
		if (!mprotect(p, len, PROT_READ | PROT_WRITE) || errno != EACCES)
			fails++;
		if (!pattern_ok(p, 0, len))
			return 104;
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return 105;
		for (i = 0; i < len; i++)
			p[i] = pat(i);
	}
	close(fd);	/* the mapping keeps the region */
	if (a->ready_wr >= 0 && write(a->ready_wr, "r", 1) != 1)
		return 108;
	if (a->pipe_rd >= 0) {
		if (read(a->pipe_rd, &c, 1) != 1)
			return 106;
		if (!pattern_ok(p, 0, len))	/* after the region's destroy */
			return 107;
	}
	munmap(p, len);
	return fails;
}

static void test_mappings(int fd)
{
	struct map_arg a = { .pipe_rd = -1, .ready_wr = -1, .expect_region = ra };
	struct rof_region_token t;
	struct rof_region_map m;
	struct rof_region_info ri;
	uint64_t tok[2], tok2[2];
	int mfd, rc, pfd[2], rfd[2];
	char c;
	pid_t pid;
	void *p;

	/* TOKEN arguments */
	memset(&t, 0, sizeof(t));
	t.region = ra;
	t.access = ROF_ACCESS_WRITE;
	expect(fd, ROF_IOC_REGION_TOKEN, &t, EINVAL, "REGION_TOKEN write-only");
	t.access = ROF_ACCESS_READ | ROF_ACCESS_ATOMIC;
	expect(fd, ROF_IOC_REGION_TOKEN, &t, EINVAL, "REGION_TOKEN atomic right");
	t.access = 0;
	expect(fd, ROF_IOC_REGION_TOKEN, &t, EINVAL, "REGION_TOKEN no right");
	t.access = ROF_ACCESS_READ;
	t.ttl_ms = ROF_TOKEN_TTL_MAX_MS + 1;
	expect(fd, ROF_IOC_REGION_TOKEN, &t, EINVAL, "REGION_TOKEN ttl above max");
	t.ttl_ms = 0;
	t.flags = 1;
	expect(fd, ROF_IOC_REGION_TOKEN, &t, EINVAL, "REGION_TOKEN unknown flag");
	t.flags = 0;
	t.region = 999999;
	expect(fd, ROF_IOC_REGION_TOKEN, &t, ENOENT, "REGION_TOKEN unknown region");

	/* A second process, as nobody, writes; then the token is spent. */
	result(!mint(fd, ra, ROF_ACCESS_READ | ROF_ACCESS_WRITE, 0, a.token),
	       "REGION_TOKEN read/write");
	a.write = 1;
	rc = in_child(child_map, &a);
	result(rc == 0, "nobody binds with the token, maps rw, writes (rc %d)", rc);
	mfd = open_rof();
	result(map_token(mfd, a.token, &m) == EACCES,
	       "the same token a second time: EACCES");

	/* A third process, read-only, sees the data the exited one wrote. */
	result(!mint(fd, ra, ROF_ACCESS_READ, 0, a.token), "REGION_TOKEN read-only");
	a.write = 0;
	rc = in_child(child_map, &a);
	result(rc == 0,
	       "read-only mapping in another process sees the data, refuses PROT_WRITE and mprotect (rc %d)",
	       rc);

	/* MAP and mmap arguments, on this process's fd. */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 0);
	result(p == MAP_FAILED && errno == ENODEV, "mmap before REGION_MAP: ENODEV");
	memset(&m, 0, sizeof(m));
	m.flags = 1;
	expect(mfd, ROF_IOC_REGION_MAP, &m, EINVAL, "REGION_MAP unknown flag");
	m.flags = 0;
	m.reserved = 1;
	expect(mfd, ROF_IOC_REGION_MAP, &m, EINVAL, "REGION_MAP reserved set");
	m.reserved = 0;
	m.token[0] = 0x1234;
	expect(mfd, ROF_IOC_REGION_MAP, &m, EACCES, "REGION_MAP forged token");
	expect(mfd, ROF_IOC_REGION_MAP, (void *)8, EFAULT, "REGION_MAP bad pointer");
	mint(fd, ra, ROF_ACCESS_READ, 1, tok);
	usleep(100 * 1000);
	result(map_token(mfd, tok, &m) == EACCES, "REGION_MAP expired token: EACCES");

	mint(fd, ra, ROF_ACCESS_READ | ROF_ACCESS_WRITE, 0, tok);
	mint(fd, ra, ROF_ACCESS_READ, 0, tok2);
	rc = map_token(mfd, tok, &m);
	result(!rc && m.region == ra && m.size == 16 * PAGE &&
	       m.access == (ROF_ACCESS_READ | ROF_ACCESS_WRITE),
	       "REGION_MAP binds the fd (region %u, %llu bytes)", m.region,
	       (unsigned long long)m.size);
	result(map_token(mfd, tok2, &m) == EBUSY, "REGION_MAP on a bound fd: EBUSY");
	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, mfd, 0);
	result(p == MAP_FAILED && errno == EINVAL, "MAP_PRIVATE: EINVAL");
	p = mmap(NULL, 17 * PAGE, PROT_READ, MAP_SHARED, mfd, 0);
	result(p == MAP_FAILED && errno == ENXIO, "mmap longer than the region: ENXIO");
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 16 * PAGE);
	result(p == MAP_FAILED && errno == ENXIO, "mmap at offset = size: ENXIO");
	/* Remotely writable memory is never executable, now or later. */
	p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_SHARED, mfd, 0);
	rc = p == MAP_FAILED && errno == EACCES;
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	result(rc, "mmap with PROT_EXEC: EACCES");
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 0);
	result(p != MAP_FAILED && mprotect(p, PAGE, PROT_READ | PROT_EXEC) &&
	       errno == EACCES, "mprotect(PROT_EXEC) of a mapping: EACCES");
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 15 * PAGE);
	result(p != MAP_FAILED && pattern_ok(p, 15 * PAGE, PAGE),
	       "mmap of the last page at its offset");
	get_region(fd, ra, &ri);
	result(ri.mappings == 2, "REGION_GET counts the bound fd and the vma (%u)",
	       ri.mappings);
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	close(mfd);
	get_region(fd, ra, &ri);
	result(ri.mappings == 0, "mappings back to 0 after munmap and close (%u)",
	       ri.mappings);

	/* The region outlives its destroy while a process maps it. */
	if (pipe(pfd) || pipe(rfd)) {
		result(0, "pipe: %s", strerror(errno));
		return;
	}
	mint(fd, ra, ROF_ACCESS_READ, 0, a.token);
	mint(fd, ra, ROF_ACCESS_READ, 0, tok);		/* purged by destroy */
	a.pipe_rd = pfd[0];
	a.ready_wr = rfd[1];
	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(pfd[1]);
		close(rfd[0]);
		_exit(child_map(&a));
	}
	close(pfd[0]);
	close(rfd[1]);
	/* Destroy once the child has mapped and closed its fd. */
	result(read(rfd[0], &c, 1) == 1, "the child mapped the region");
	close(rfd[0]);
	get_region(fd, ra, &ri);
	/* Its closed fd lives on in the vma, and with it the binding. */
	result(ri.mappings == 2, "the vma and its file's binding (%u)",
	       ri.mappings);
	result(!destroy(fd, ROF_IOC_REGION_DESTROY, ra, 0),
	       "REGION_DESTROY while another process maps it");
	mfd = open_rof();
	result(map_token(mfd, tok, &m) == EACCES,
	       "tokens of a destroyed region are void");
	close(mfd);
	if (write(pfd[1], "x", 1) != 1)
		result(0, "pipe write");
	close(pfd[1]);
	waitpid(pid, &rc, 0);
	result(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
	       "the mapping still reads the data after the destroy (rc %d)",
	       WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
	result(!region_create(fd, ta, "ra", 16 * PAGE,
			      ROF_ACCESS_READ | ROF_ACCESS_WRITE, &ra),
	       "the name is free again after the destroy");
}

/*
 * A bound fd and a mapping outlive their region's destroy, and the
 * region's bytes stay charged to its tenant until its pages are freed: a
 * destroyed region is never mapped again, and create, bind, destroy in a
 * loop cannot pin memory that no quota counts.
 */
static void test_mapping_destroyed(int fd)
{
	struct rof_tenant_set_quota q;
	struct rof_tenant_info ti;
	struct rof_region_map m;
	uint32_t t, r, r2;
	uint64_t tok[2];
	int mfd, vma, i, rc;
	void *p;

	if (tenant_create(fd, "kobj-mapq", &t)) {
		result(0, "TENANT_CREATE kobj-mapq: %s", strerror(errno));
		return;
	}
	memset(&q, 0, sizeof(q));
	q.id = t;
	q.quota.region_bytes = 16 * PAGE;
	q.quota.sessions = q.quota.programs = UINT32_MAX;
	q.quota.credits = ROF_CREDITS_DEFAULT;
	expect(fd, ROF_IOC_TENANT_SET_QUOTA, &q, 0, "SET_QUOTA region_bytes 64 KiB");
	/* First the fd bound and never mapped, then a mapping whose fd is closed. */
	for (vma = 0; vma < 2; vma++) {
		const char *what = vma ? "a mapping" : "a bound fd";

		if (region_create(fd, t, "m", 16 * PAGE, ROF_ACCESS_READ, &r) ||
		    mint(fd, r, ROF_ACCESS_READ, 0, tok)) {
			result(0, "REGION_CREATE and REGION_TOKEN within quota");
			break;
		}
		mfd = open_rof();
		result(!map_token(mfd, tok, &m), "REGION_MAP binds an fd");
		p = MAP_FAILED;
		if (vma) {
			p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 0);
			result(p != MAP_FAILED, "mmap of the bound region");
			close(mfd);
		}
		result(!destroy(fd, ROF_IOC_REGION_DESTROY, r, 0),
		       "REGION_DESTROY while %s holds it", what);
		if (!vma) {
			p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mfd, 0);
			rc = p == MAP_FAILED && errno == ENOENT;
			if (p != MAP_FAILED)
				munmap(p, PAGE);
			p = MAP_FAILED;
			result(rc, "mmap of a destroyed region: ENOENT");
		}
		get_tenant(fd, t, &ti);
		result(ti.usage.region_bytes == 16 * PAGE && !ti.usage.regions,
		       "its bytes stay charged while %s holds its pages (%llu bytes, %u regions)",
		       what, (unsigned long long)ti.usage.region_bytes,
		       ti.usage.regions);
		result(region_create(fd, t, "m2", PAGE, ROF_ACCESS_READ, &r2) == EDQUOT,
		       "a new region over the quota meanwhile: EDQUOT");
		if (vma)
			munmap(p, PAGE);
		else
			close(mfd);
		/* The pages go from a workqueue: wait for the uncharge. */
		for (i = 0; i < 2000; i++) {
			if (get_tenant(fd, t, &ti) || !ti.usage.region_bytes)
				break;
			usleep(5 * 1000);
		}
		result(!ti.usage.region_bytes,
		       "releasing %s uncharges the bytes (%llu)", what,
		       (unsigned long long)ti.usage.region_bytes);
	}
	result(!destroy(fd, ROF_IOC_TENANT_DESTROY, t, 0),
	       "TENANT_DESTROY kobj-mapq");
}

/* --- free lists ---------------------------------------------------------- */

static void test_freelists(int fd)
{
	struct rof_freelist_create c;
	struct rof_freelist_info *all = NULL;
	struct rof_isa_freelist *h;
	struct rof_tenant_info ti;
	struct rof_region_map m;
	struct rof_region_info ri;
	uint64_t tok[2], *blk;
	uint32_t fl, fl2, n, other, i, ok;
	unsigned char *p;
	int mfd;

	result(!freelist_create(fd, ra, 0, 64, 16, &fl), "FREELIST_CREATE 16 x 64 at 0");
	result(freelist_create(fd, ra, 64, 64, 1, &fl2) == EADDRINUSE,
	       "FREELIST_CREATE overlapping: EADDRINUSE");
	result(!freelist_create(fd, ra, 64 + 16 * 64, 128, 8, &fl2),
	       "FREELIST_CREATE right after the first");
	result(freelist_create(fd, ra, 15 * PAGE, 64, 64, &n) == ERANGE,
	       "FREELIST_CREATE past the region's end: ERANGE");
	result(freelist_create(fd, ra, ~0ULL - 7, 8, 1, &n) == ERANGE,
	       "FREELIST_CREATE offset + length overflowing: ERANGE");
	result(freelist_create(fd, ra, 8 * PAGE, 12, 4, &n) == EINVAL,
	       "FREELIST_CREATE block size not a multiple of 8: EINVAL");
	result(freelist_create(fd, ra, 8 * PAGE, 0, 4, &n) == EINVAL,
	       "FREELIST_CREATE block size 0: EINVAL");
	result(freelist_create(fd, ra, 8 * PAGE + 4, 8, 4, &n) == EINVAL,
	       "FREELIST_CREATE misaligned offset: EINVAL");
	result(freelist_create(fd, ra, 8 * PAGE, 8, 0, &n) == EINVAL,
	       "FREELIST_CREATE count 0: EINVAL");
	result(freelist_create(fd, ra, 8 * PAGE, 8, ROF_FREELIST_BLOCKS_MAX + 1,
			       &n) == E2BIG, "FREELIST_CREATE count above max: E2BIG");
	result(freelist_create(fd, 999999, 0, 8, 1, &n) == ENOENT,
	       "FREELIST_CREATE unknown region: ENOENT");
	memset(&c, 0, sizeof(c));
	c.region = ra;
	c.offset = 8 * PAGE;
	c.block_size = 8;
	c.count = 1;
	c.flags = 1;
	expect(fd, ROF_IOC_FREELIST_CREATE, &c, EINVAL, "FREELIST_CREATE unknown flag");
	c.flags = 0;
	c.reserved = 1;
	expect(fd, ROF_IOC_FREELIST_CREATE, &c, EINVAL, "FREELIST_CREATE reserved set");
	/* Another region's lists neither overlap ra's nor go with them. */
	result(!region_create(fd, tb, "fl-other", PAGE, ROF_ACCESS_ALL, &other) &&
	       !freelist_create(fd, other, 0, 64, 16, &n),
	       "FREELIST_CREATE at ra's list's offset in another region: ok");
	result(!destroy(fd, ROF_IOC_REGION_DESTROY, other, 0),
	       "REGION_DESTROY of that region, its list with it");

	get_region(fd, ra, &ri);
	get_tenant(fd, ta, &ti);
	result(ri.freelists == 2 && ti.usage.freelists == 2,
	       "region and tenant count 2 free lists (%u, %u)", ri.freelists,
	       ti.usage.freelists);

	/* The in-region layout is the ISA's. */
	mfd = open_rof();
	mint(fd, ra, ROF_ACCESS_READ | ROF_ACCESS_WRITE, 0, tok);
	p = MAP_FAILED;
	if (!map_token(mfd, tok, &m))
		p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (p == MAP_FAILED) {
		result(0, "map ra to check the layout: %s", strerror(errno));
		close(mfd);
		return;
	}
	h = (struct rof_isa_freelist *)p;
	result(h->magic == ROF_FREELIST_MAGIC && h->head == 1 &&
	       h->block_size == 64 && h->first == sizeof(*h) && h->nblocks == 16,
	       "header: magic, head 1, block 64, first %llu, 16 blocks",
	       (unsigned long long)h->first);
	ok = 1;
	for (i = 1; i <= 16; i++) {
		blk = (uint64_t *)(p + h->first + (i - 1) * 64);
		ok &= *blk == (i < 16 ? i + 1 : 0);
	}
	result(ok, "blocks chained 1 -> 2 -> ... -> 16 -> 0");

	if (!list_all(fd, ROF_IOC_FREELIST_LIST, sizeof(*all), (void **)&all, &n)) {
		ok = 0;
		for (i = 0; i < n; i++)
			ok += all[i].id == fl && all[i].region == ra &&
			      all[i].tenant == ta && all[i].offset == 0 &&
			      all[i].block_size == 64 && all[i].count == 16 &&
			      all[i].free == 16 && !all[i].flags;
		free(all);
		result(ok == 1, "FREELIST_LIST: 16 of 16 free");
	} else {
		result(0, "FREELIST_LIST");
	}
	list_header_checks(fd, ROF_IOC_FREELIST_LIST, "FREELIST_LIST",
			   sizeof(*all), expect_list);
	list_paging_checks(fd, ROF_IOC_FREELIST_LIST, "FREELIST_LIST",
			   sizeof(*all), 1, freelist_id_of, expect_list,
			   result_list);
	/* An ALLOC as the executor does it, then a scribble. */
	h->head = (1ULL << 32) | 2;
	n = 0;
	if (!list_all(fd, ROF_IOC_FREELIST_LIST, sizeof(*all), (void **)&all, &i)) {
		while (i--)
			if (all[i].id == fl)
				n = all[i].free;
		free(all);
	}
	result(n == 15, "after one pop, 15 free (%u)", n);
	h->head = 99;
	ok = 0;
	if (!list_all(fd, ROF_IOC_FREELIST_LIST, sizeof(*all), (void **)&all, &i)) {
		while (i--)
			if (all[i].id == fl)
				ok = all[i].flags & ROF_FREELIST_CORRUPT;
		free(all);
	}
	result(ok, "a scribbled head is reported ROF_FREELIST_CORRUPT");

	result(destroy(fd, ROF_IOC_FREELIST_DESTROY, fl, 2) == EINVAL,
	       "FREELIST_DESTROY unknown flag: EINVAL");
	result(!destroy(fd, ROF_IOC_FREELIST_DESTROY, fl, 0), "FREELIST_DESTROY");
	result(h->magic == 0, "the destroyed list's magic is cleared");
	result(destroy(fd, ROF_IOC_FREELIST_DESTROY, fl, 0) == ENOENT,
	       "FREELIST_DESTROY again: ENOENT");
	munmap(p, 16 * PAGE);
	close(mfd);
}

/* --- ids ---------------------------------------------------------------- */

/*
 * Ids the module assigns are not reused soon: a prepared session holds
 * only its regions' ids, a program's bindings name free lists, audit
 * records name tenants.
 */
static void test_ids(int fd)
{
	uint32_t a = 0, b = 0;

	int err;

	region_create(fd, ta, "id1", PAGE, ROF_ACCESS_READ, &a);
	destroy(fd, ROF_IOC_REGION_DESTROY, a, 0);
	err = region_create(fd, ta, "id2", PAGE, ROF_ACCESS_READ, &b);
	result(!err && b != a,
	       "a new region does not get a destroyed one's id (%u, then %u)", a, b);
	destroy(fd, ROF_IOC_REGION_DESTROY, b, 0);

	a = b = 0;
	freelist_create(fd, ra, 12 * PAGE, 64, 4, &a);
	destroy(fd, ROF_IOC_FREELIST_DESTROY, a, 0);
	err = freelist_create(fd, ra, 12 * PAGE, 64, 4, &b);
	result(!err && b != a,
	       "a new free list does not get a destroyed one's id (%u, then %u)", a, b);
	destroy(fd, ROF_IOC_FREELIST_DESTROY, b, 0);

	a = b = 0;
	tenant_create(fd, "kobj-id1", &a);
	destroy(fd, ROF_IOC_TENANT_DESTROY, a, 0);
	err = tenant_create(fd, "kobj-id2", &b);
	result(!err && b != a,
	       "a new tenant does not get a destroyed one's id (%u, then %u)", a, b);
	destroy(fd, ROF_IOC_TENANT_DESTROY, b, 0);
}

/* --- audit --------------------------------------------------------------- */

static void test_audit(int fd)
{
	struct rof_audit_record rec[4];
	struct rof_audit_stats st;
	struct rof_audit_open o;
	struct pollfd pfd;
	uint32_t t, r;
	uint64_t seq;
	ssize_t len;
	int afd, got;

	memset(&st, 0, sizeof(st));
	expect(fd, ROF_IOC_AUDIT_STATS, &st, 0, "AUDIT_STATS");
	result(st.ring_size >= 64 && !(st.ring_size & (st.ring_size - 1)) &&
	       st.next_seq >= 1, "ring of %u records, next seq %llu", st.ring_size,
	       (unsigned long long)st.next_seq);
	result(st.reserve == st.ring_size / 4 && st.pending < st.ring_size,
	       "a reserve of %u records that INVOKE records cannot take", st.reserve);
	st.flags = 1;
	expect(fd, ROF_IOC_AUDIT_STATS, &st, EINVAL, "AUDIT_STATS unknown flag");
	st.flags = 0;
	st.reserved2 = 1;
	expect(fd, ROF_IOC_AUDIT_STATS, &st, EINVAL, "AUDIT_STATS reserved2 set");

	memset(&o, 0, sizeof(o));
	o.flags = 2;
	expect(fd, ROF_IOC_AUDIT_OPEN, &o, EINVAL, "AUDIT_OPEN unknown flag");
	o.flags = 0;
	o.reserved = 1;
	expect(fd, ROF_IOC_AUDIT_OPEN, &o, EINVAL, "AUDIT_OPEN reserved set");
	o.reserved = 0;
	o.flags = ROF_AUDIT_NONBLOCK;
	expect(fd, ROF_IOC_AUDIT_OPEN, &o, 0, "AUDIT_OPEN");
	afd = o.fd;
	expect(fd, ROF_IOC_AUDIT_OPEN, &o, EBUSY, "AUDIT_OPEN second reader: EBUSY");
	result(fcntl(afd, F_GETFD) & FD_CLOEXEC, "the audit fd is close-on-exec");
	result(read(afd, rec, sizeof(rec[0]) - 1) < 0 && errno == EINVAL,
	       "read shorter than a record: EINVAL");
	while (read(afd, rec, sizeof(rec)) > 0)
		;	/* drain what earlier tests left */
	result(read(afd, rec, sizeof(rec)) < 0 && errno == EAGAIN,
	       "empty ring, non-blocking read: EAGAIN");
	pfd.fd = afd;
	pfd.events = POLLIN;
	result(poll(&pfd, 1, 0) == 0, "poll on an empty ring: nothing");

	/* A forced destroy of a busy tenant is audited, with its region. */
	tenant_create(fd, "kobj-audit", &t);
	region_create(fd, t, "r", PAGE, ROF_ACCESS_READ, &r);
	result(destroy(fd, ROF_IOC_TENANT_DESTROY, t, 0) == ENOTEMPTY,
	       "TENANT_DESTROY without force: ENOTEMPTY");
	memset(&st, 0, sizeof(st));
	ioc(fd, ROF_IOC_AUDIT_STATS, &st);
	seq = st.next_seq;
	result(!destroy(fd, ROF_IOC_TENANT_DESTROY, t, ROF_DESTROY_FORCE),
	       "TENANT_DESTROY with force");
	result(poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN),
	       "poll reports POLLIN");
	len = read(afd, rec, sizeof(rec));
	got = len > 0 ? (int)(len / sizeof(rec[0])) : 0;
	result(len == 2 * (ssize_t)sizeof(rec[0]), "read returns 2 whole records (%zd bytes)",
	       len);
	result(got == 2 && rec[0].seq == seq && rec[1].seq == seq + 1 &&
	       rec[0].time_ns && rec[1].time_ns >= rec[0].time_ns,
	       "consecutive seq %llu, %llu and times",
	       (unsigned long long)rec[0].seq, (unsigned long long)rec[1].seq);
	result(got == 2 && rec[0].kind == ROF_AUDIT_TENANT_DESTROY &&
	       rec[0].tenant == t && rec[0].reason == ROF_DESTROY_ADMIN,
	       "record 1: TENANT_DESTROY of %u, reason ADMIN", t);
	result(got == 2 && rec[1].kind == ROF_AUDIT_REGION_DESTROY &&
	       rec[1].tenant == t && rec[1].object == r &&
	       rec[1].reason == ROF_DESTROY_TENANT && rec[1].bytes == PAGE,
	       "record 2: REGION_DESTROY of %u, reason TENANT, %llu bytes", r,
	       (unsigned long long)rec[1].bytes);
	result(get_tenant(fd, t, &(struct rof_tenant_info){ 0 }) == ENOENT,
	       "the tenant is gone");
	close(afd);
	memset(&o, 0, sizeof(o));
	result(!ioc(fd, ROF_IOC_AUDIT_OPEN, &o), "AUDIT_OPEN after the reader closed");
	close(o.fd);
}

/* Fill the ring past its size: the oldest records are counted lost. */
static void test_audit_overrun(int fd)
{
	struct rof_audit_stats st0, st;
	struct rof_audit_record rec;
	struct rof_audit_open o;
	uint32_t i, t, extra = 5, bad = 0;
	ssize_t len;

	memset(&o, 0, sizeof(o));
	o.flags = ROF_AUDIT_NONBLOCK;
	if (ioc(fd, ROF_IOC_AUDIT_OPEN, &o)) {
		result(0, "AUDIT_OPEN: %s", strerror(errno));
		return;
	}
	while (read(o.fd, &rec, sizeof(rec)) > 0)
		;
	memset(&st0, 0, sizeof(st0));
	ioc(fd, ROF_IOC_AUDIT_STATS, &st0);
	for (i = 0; i < st0.ring_size + extra; i++)
		bad += tenant_create(fd, "kobj-overrun", &t) ||
		       destroy(fd, ROF_IOC_TENANT_DESTROY, t, ROF_DESTROY_FORCE);
	memset(&st, 0, sizeof(st));
	ioc(fd, ROF_IOC_AUDIT_STATS, &st);
	result(!bad && st.overruns == st0.overruns + extra &&
	       st.pending == st.ring_size,
	       "%u records into a ring of %u: %llu overruns, %u pending",
	       st0.ring_size + extra, st.ring_size,
	       (unsigned long long)(st.overruns - st0.overruns), st.pending);
	len = read(o.fd, &rec, sizeof(rec));
	result(len == sizeof(rec) && rec.seq == st0.next_seq + extra,
	       "the oldest record left has seq %llu (a gap of %u)",
	       (unsigned long long)rec.seq, extra);
	close(o.fd);
}

/* --- without CAP_SYS_ADMIN ---------------------------------------------- */

static int child_unprivileged(void *arg)
{
	static const struct { unsigned long cmd; const char *name; } cmds[] = {
		{ ROF_IOC_TENANT_CREATE, "TENANT_CREATE" },
		{ ROF_IOC_TENANT_DESTROY, "TENANT_DESTROY" },
		{ ROF_IOC_TENANT_SET_QUOTA, "TENANT_SET_QUOTA" },
		{ ROF_IOC_TENANT_GET, "TENANT_GET" },
		{ ROF_IOC_TENANT_LIST, "TENANT_LIST" },
		{ ROF_IOC_REGION_CREATE, "REGION_CREATE" },
		{ ROF_IOC_REGION_DESTROY, "REGION_DESTROY" },
		{ ROF_IOC_REGION_GET, "REGION_GET" },
		{ ROF_IOC_REGION_LIST, "REGION_LIST" },
		{ ROF_IOC_REGION_TOKEN, "REGION_TOKEN" },
		{ ROF_IOC_FREELIST_CREATE, "FREELIST_CREATE" },
		{ ROF_IOC_FREELIST_DESTROY, "FREELIST_DESTROY" },
		{ ROF_IOC_FREELIST_LIST, "FREELIST_LIST" },
		{ ROF_IOC_AUDIT_OPEN, "AUDIT_OPEN" },
		{ ROF_IOC_AUDIT_STATS, "AUDIT_STATS" },
		{ ROF_IOC_TENANT_DRAIN, "TENANT_DRAIN" },
	};
	union {
		struct rof_tenant_info ti;
		struct rof_region_create rc;
		struct rof_drain d;
		char raw[512];
	} u;
	int fd = open_rof(), fails = 0;
	const char *who = arg;
	size_t i;

	quiet = 0;
	if (!strcmp(who, "nobody") ? become_nobody() : drop_sys_admin()) {
		result(0, "drop privileges (%s): %s", who, strerror(errno));
		return 1;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		memset(&u, 0, sizeof(u));
		strcpy(u.rc.name, "evil");
		u.rc.tenant = ta;
		u.rc.size = PAGE;
		if (ioc(fd, cmds[i].cmd, &u) != EPERM) {
			printf("# %s as %s: not EPERM\n", cmds[i].name, who);
			fails++;
		}
	}
	return fails;
}

static void test_unprivileged(void)
{
	int rc;

	rc = in_child(child_unprivileged, "root-without-CAP_SYS_ADMIN");
	result(rc == 0, "uid 0 without CAP_SYS_ADMIN: every control ioctl EPERM (%d failed)",
	       rc);
	rc = in_child(child_unprivileged, "nobody");
	result(rc == 0, "nobody: every control ioctl EPERM (%d failed)", rc);
}

/* --- races (selftests/tests/kobj-races) ---------------------------------- */

#define FAULT_DELAY	"/sys/module/rof/parameters/fault_delay_ms"
#define RACE_DELAY_MS	300

/* The kernel log from the moment fault_delay() turned the injection on. */
static int kmsg_fd = -1;

/*
 * The module's fault injection: creates sleep @ms in their race windows,
 * each logging "fault injection: WHAT ID delayed" first (fault_wait).
 */
static int fault_delay(unsigned int ms)
{
	FILE *f = fopen(FAULT_DELAY, "w");
	int bad;

	if (kmsg_fd >= 0)
		close(kmsg_fd);
	kmsg_fd = -1;
	if (ms) {
		kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
		if (kmsg_fd >= 0)
			lseek(kmsg_fd, 0, SEEK_END);
	}
	if (!f)
		return -1;
	bad = fprintf(f, "%u\n", ms) < 0;
	return fclose(f) || bad ? -1 : 0;
}

/*
 * Wait until the module logs that it holds "@what" in its window: the
 * event itself, not a guess at how long a thread takes to get there.
 * Bounded (60 s) only so that a broken module fails the test.
 */
static int fault_wait(const char *what)
{
	char want[128], rec[1024];
	struct pollfd p = { .fd = kmsg_fd, .events = POLLIN };
	int waited = 0;
	ssize_t n;

	if (kmsg_fd < 0)
		return -1;
	snprintf(want, sizeof(want), "fault injection: %s ", what);
	while (waited < 60000) {
		n = read(kmsg_fd, rec, sizeof(rec) - 1);
		if (n > 0) {
			rec[n] = 0;
			if (strstr(rec, want))
				return 0;
			continue;
		}
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: read on */
		if (poll(&p, 1, 100) == 0)
			waited += 100;
	}
	return -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A copy of @arg in a read-only page: read in fine, written back EFAULT. */
static void *ro_copy(const void *arg, size_t len)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, arg, len);
	if (mprotect(p, PAGE, PROT_READ)) {
		munmap(p, PAGE);
		return NULL;
	}
	return p;
}

/* The id of region @name of tenant @t, or 0. */
static uint32_t find_region(int fd, uint32_t t, const char *name)
{
	struct rof_region_info *all;
	uint32_t n, i, id = 0;

	if (list_all(fd, ROF_IOC_REGION_LIST, sizeof(*all), (void **)&all, &n))
		return 0;
	for (i = 0; i < n; i++)
		if (all[i].tenant == t && (!name || !strcmp(all[i].name, name)))
			id = all[i].id;
	free(all);
	return id;
}

/* Force-destroys tenant @t's regions (named @name, or all); counts them. */
static uint32_t reap_regions(int fd, uint32_t t, const char *name)
{
	uint32_t id, n = 0;

	while ((id = find_region(fd, t, name)) && n < 1000) {
		destroy(fd, ROF_IOC_REGION_DESTROY, id, ROF_DESTROY_FORCE);
		n++;
	}
	return n;
}

static uint32_t find_tenant(int fd, const char *name)
{
	struct rof_tenant_info *all;
	uint32_t n, i, id = 0;

	if (list_all(fd, ROF_IOC_TENANT_LIST, sizeof(*all), (void **)&all, &n))
		return 0;
	for (i = 0; i < n; i++)
		if (!strcmp(all[i].name, name))
			id = all[i].id;
	free(all);
	return id;
}

/* One ioctl, or a run of region creates, in a thread of its own. */
struct racer {
	pthread_t th;
	int fd;
	unsigned long cmd;
	void *arg;
	uint32_t tenant;	/* region_creator: creates here ... */
	int max;		/* ... at most this many regions */
	int n;
	int err;
	int done;
};

static void *ioctl_thread(void *v)
{
	struct racer *r = v;

	r->err = ioc(r->fd, r->cmd, r->arg);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *region_creator(void *v)
{
	struct racer *r = v;
	char name[32];
	uint32_t id;

	for (r->n = 0; r->n < r->max; r->n++) {
		snprintf(name, sizeof(name), "s%d", r->n);
		r->err = region_create(r->fd, r->tenant, name, 256 * PAGE,
				       ROF_ACCESS_ALL, &id);
		if (r->err)
			break;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int racer_start(struct racer *r, void *(*fn)(void *))
{
	r->done = 0;
	return pthread_create(&r->th, NULL, fn, r);
}

/*
 * Run ioctl @cmd(@arg) on a thread with the module's fault injection on,
 * and return once the module logs that it holds the command at @point
 * (0), or -1 if it never does.  race_release() lets it finish.
 */
static int race_hold(struct racer *r, int fd, unsigned long cmd, void *arg,
		     const char *point)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->cmd = cmd;
	r->arg = arg;
	fault_delay(RACE_DELAY_MS);
	racer_start(r, ioctl_thread);
	return fault_wait(point);
}

static void race_release(struct racer *r)
{
	pthread_join(r->th, NULL);
	fault_delay(0);
}

/* Wait up to @ms for @r to finish; returns whether it did. */
static int racer_wait(struct racer *r, int ms)
{
	uint64_t end = now_ms() + ms;

	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		if (now_ms() >= end)
			return 0;
		usleep(1000);
	}
	return 1;
}

/*
 * Item 4: a region create that charged its tenant before a forced destroy
 * of that tenant must not insert the region afterwards (an orphan the
 * module would WARN about at unload).  First without help, many times;
 * then with the create held in its window by fault_delay_ms.
 */
static void race_create_vs_tenant_destroy(int fd, int iters)
{
	struct rof_region_create c;
	uint32_t t, orphans = 0, bad = 0;
	struct racer r;
	int i;

	for (i = 0; i < iters; i++) {
		if (tenant_create(fd, "kobj-race", &t)) {
			bad++;
			continue;
		}
		memset(&r, 0, sizeof(r));
		r.fd = fd;
		r.tenant = t;
		r.max = 64;
		if (racer_start(&r, region_creator)) {
			bad++;
			break;
		}
		usleep(rand() % 3000);
		bad += destroy(fd, ROF_IOC_TENANT_DESTROY, t, ROF_DESTROY_FORCE) != 0;
		pthread_join(r.th, NULL);
		bad += r.err != ENOENT;
		orphans += reap_regions(fd, t, NULL);
	}
	result(!bad && !orphans,
	       "%d runs of region creates racing a forced destroy of their tenant: %u orphaned regions, %u errors",
	       iters, orphans, bad);

	for (i = 0; i < 3; i++) {
		if (tenant_create(fd, "kobj-race", &t))
			break;
		memset(&c, 0, sizeof(c));
		strcpy(c.name, "late");
		c.tenant = t;
		c.size = PAGE;
		bad = !!race_hold(&r, fd, ROF_IOC_REGION_CREATE, &c,
				  "region create (charged) of tenant");
		bad += destroy(fd, ROF_IOC_TENANT_DESTROY, t, ROF_DESTROY_FORCE);
		race_release(&r);
		orphans = reap_regions(fd, t, NULL);
		result(!bad && r.err == ENOENT && !orphans,
		       "a create held in its window while the tenant is force-destroyed: %s, %u orphaned",
		       r.err ? strerror(r.err) : "created", orphans);
	}
}

/*
 * Item 3: a create must not touch its object after publishing it without
 * a reference: a destroy by id (ids are easy to guess) can free it first.
 * The create is held between publishing and returning by fault_delay_ms,
 * the object is found by LIST and destroyed meanwhile.  The create must
 * return the id it published; with a read-only argument (EFAULT on the
 * write-back) it must undo only its own object.
 */
static void race_region_publish(int fd, uint32_t t, int efault)
{
	struct rof_region_create c, *arg = &c;
	struct racer r;
	uint32_t id = 0;
	int derr = -1;

	memset(&c, 0, sizeof(c));
	strcpy(c.name, "pub");
	c.tenant = t;
	c.size = PAGE;
	if (efault)
		arg = ro_copy(&c, sizeof(c));
	if (!arg) {
		result(0, "read-only argument: %s", strerror(errno));
		return;
	}
	if (!race_hold(&r, fd, ROF_IOC_REGION_CREATE, arg,
		       "region create (published)"))
		id = find_region(fd, t, "pub");
	if (id)
		derr = destroy(fd, ROF_IOC_REGION_DESTROY, id, 0);
	race_release(&r);
	if (efault) {
		result(id && !derr && r.err == EFAULT && !reap_regions(fd, t, "pub"),
		       "REGION_CREATE, EFAULT on return, its region destroyed by id meanwhile: %s, nothing left",
		       strerror(r.err));
		munmap(arg, PAGE);
	} else {
		result(id && !derr && !r.err && c.id == id,
		       "REGION_CREATE returns the id it published (%u) though a destroy by id came first (%u)",
		       c.id, id);
		reap_regions(fd, t, "pub");
	}
}

static void race_tenant_publish(int fd, int rounds)
{
	struct rof_tenant_create c, *arg;
	struct rof_tenant_info ti;
	uint32_t x, y, bad = 0, lost = 0;
	struct racer r;
	int i;

	for (i = 0; i < rounds; i++) {
		memset(&c, 0, sizeof(c));
		strcpy(c.name, "kobj-race-efault");
		arg = ro_copy(&c, sizeof(c));
		if (!arg) {
			bad++;
			break;
		}
		x = race_hold(&r, fd, ROF_IOC_TENANT_CREATE, arg, "tenant create") ?
		    0 : find_tenant(fd, "kobj-race-efault");
		bad += !x || destroy(fd, ROF_IOC_TENANT_DESTROY, x, ROF_DESTROY_FORCE);
		/* Freed after a grace period: an innocent tenant may reuse it. */
		usleep(RACE_DELAY_MS * 1000 / 3);
		y = 0;
		bad += !!tenant_create(fd, "kobj-race-innocent", &y);
		race_release(&r);
		bad += r.err != EFAULT;
		lost += get_tenant(fd, y, &ti) || strcmp(ti.name, "kobj-race-innocent");
		destroy(fd, ROF_IOC_TENANT_DESTROY, y, ROF_DESTROY_FORCE);
		munmap(arg, PAGE);
		x = find_tenant(fd, "kobj-race-efault");
		bad += !!x;
		if (x)
			destroy(fd, ROF_IOC_TENANT_DESTROY, x, ROF_DESTROY_FORCE);
	}
	result(!bad && !lost,
	       "%d x TENANT_CREATE, EFAULT on return, destroyed by id meanwhile and a new tenant created: the new one survives (%u lost, %u other errors)",
	       rounds, lost, bad);
}

/* A one-instruction program (EXIT @status), tagged. */
struct mini_image {
	struct rof_isa_hdr h;
	struct rof_insn insn;
};

static void mini_image(struct mini_image *im, int32_t status)
{
	memset(im, 0, sizeof(*im));
	im->h.magic = ROF_ISA_MAGIC;
	im->h.version = ROF_ISA_VERSION;
	im->h.hdr_size = sizeof(im->h);
	im->h.insn_cnt = 1;
	im->insn.op = ROF_OP_EXIT;
	im->insn.imm = status;
	im->h.tag = crc64_xz(im, sizeof(*im));
}

static void prog_req(struct rof_prog_load *l, const struct mini_image *im,
		     uint32_t t)
{
	memset(l, 0, sizeof(*l));
	l->image = (uintptr_t)im;
	l->image_len = sizeof(*im);
	l->tenant = t;
	l->budget = 1;
	l->byte_budget = 1;
	strcpy(l->name, "kobj-race");
}

static int prog_get(int fd, uint32_t t, uint64_t tag)
{
	struct rof_prog_info pi;

	memset(&pi, 0, sizeof(pi));
	pi.tenant = t;
	pi.tag = tag;
	return ioc(fd, ROF_IOC_PROG_GET, &pi);
}

static int prog_unload(int fd, uint32_t t, uint64_t tag)
{
	struct rof_prog_id id = { .tag = tag, .tenant = t };

	return ioc(fd, ROF_IOC_PROG_UNLOAD, &id);
}

static void race_prog_publish(int fd, uint32_t t, int efault)
{
	struct rof_prog_load l, *arg = &l;
	struct mini_image im;
	int found = 0, uerr = -1;
	struct racer r;

	mini_image(&im, 100 + efault);
	prog_req(&l, &im, t);
	if (efault)
		arg = ro_copy(&l, sizeof(l));
	if (!arg) {
		result(0, "read-only argument: %s", strerror(errno));
		return;
	}
	if (!race_hold(&r, fd, ROF_IOC_PROG_LOAD, arg, "program load of tenant"))
		found = !prog_get(fd, t, im.h.tag);
	if (found)
		uerr = prog_unload(fd, t, im.h.tag);
	race_release(&r);
	if (efault) {
		result(found && !uerr && r.err == EFAULT &&
		       prog_get(fd, t, im.h.tag) == ENOENT,
		       "PROG_LOAD, EFAULT on return, unloaded meanwhile: %s, nothing left",
		       strerror(r.err));
		munmap(arg, PAGE);
	} else {
		result(found && !uerr && !r.err && l.tag == im.h.tag,
		       "PROG_LOAD returns the tag it published (%016llx) though an unload came first",
		       (unsigned long long)l.tag);
	}
}

/*
 * Item 10: a LIST whose copy-out faults on a userfaultfd page must not
 * hold the lock its object type's other commands take.  The LIST waits
 * in the fault (the test resolves it only at the end); @other must
 * complete meanwhile.
 */
struct stall {
	int uffd;
	void *buf;
	size_t len;
};

static int stall_setup(struct stall *st, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	memset(st, 0, sizeof(*st));
	st->len = (len + PAGE - 1) & ~(PAGE - 1);
	st->buf = MAP_FAILED;
	st->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (st->uffd < 0 || ioctl(st->uffd, UFFDIO_API, &api))
		return -1;
	st->buf = mmap(NULL, st->len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (st->buf == MAP_FAILED)
		return -1;
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)st->buf;
	reg.range.len = st->len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	return ioctl(st->uffd, UFFDIO_REGISTER, &reg);
}

static int stall_faulted(struct stall *st, int ms)
{
	struct pollfd pfd = { .fd = st->uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	return read(st->uffd, &msg, sizeof(msg)) == sizeof(msg) &&
	       msg.event == UFFD_EVENT_PAGEFAULT;
}

static void stall_end(struct stall *st)
{
	struct uffdio_copy cp;
	void *zero = calloc(1, st->len);

	if (st->buf != MAP_FAILED && zero) {
		memset(&cp, 0, sizeof(cp));
		cp.dst = (uintptr_t)st->buf;
		cp.src = (uintptr_t)zero;
		cp.len = st->len;
		ioctl(st->uffd, UFFDIO_COPY, &cp);
	}
	free(zero);
}

static void stall_test(int fd, const char *what, unsigned long list_cmd,
		       size_t elem_size, unsigned long other_cmd, void *other_arg)
{
	struct racer lister, other;
	struct rof_list req;
	struct stall st;
	int faulted, done;

	if (stall_setup(&st, 4 * elem_size)) {
		result(0, "%s: userfaultfd: %s", what, strerror(errno));
		if (st.uffd >= 0)
			close(st.uffd);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.elem_size = elem_size;
	req.capacity = 4;
	req.elems = (uintptr_t)st.buf;
	memset(&lister, 0, sizeof(lister));
	lister.fd = fd;
	lister.cmd = list_cmd;
	lister.arg = &req;
	racer_start(&lister, ioctl_thread);
	faulted = stall_faulted(&st, 60000);

	memset(&other, 0, sizeof(other));
	other.fd = fd;
	other.cmd = other_cmd;
	other.arg = other_arg;
	racer_start(&other, ioctl_thread);
	/* Bounded only to tell "completes" from "blocked until released". */
	done = racer_wait(&other, 60000);
	stall_end(&st);
	pthread_join(other.th, NULL);
	pthread_join(lister.th, NULL);
	result(faulted && done && !other.err && !lister.err && req.count >= 1,
	       "%s completes while a LIST's copy-out waits in a page fault (faulted %d, LIST %s, %u listed)",
	       what, faulted, lister.err ? strerror(lister.err) : "ok", req.count);
	munmap(st.buf, st.len);
	close(st.uffd);
}

static int cmd_races(int fd, int iters)
{
	struct rof_region_info ri;
	struct rof_tenant_info ti;
	struct rof_list sizing;
	struct rof_prog_load l;
	struct mini_image im;
	uint32_t t, r, fl;

	srand(getpid());
	if (fault_delay(0)) {
		printf("Bail out! %s: %s\n", FAULT_DELAY, strerror(errno));
		return 1;
	}
	if (tenant_create(fd, "kobj-races", &t) ||
	    region_create(fd, t, "r", 16 * PAGE, ROF_ACCESS_ALL, &r) ||
	    freelist_create(fd, r, 0, 64, 4, &fl)) {
		printf("Bail out! set-up: %s\n", strerror(errno));
		return 1;
	}
	mini_image(&im, 7);
	prog_req(&l, &im, t);
	result(!ioc(fd, ROF_IOC_PROG_LOAD, &l), "PROG_LOAD a one-instruction program");

	race_create_vs_tenant_destroy(fd, iters);
	race_region_publish(fd, t, 0);
	race_prog_publish(fd, t, 0);
	race_tenant_publish(fd, 4);

	memset(&sizing, 0, sizeof(sizing));
	sizing.elem_size = sizeof(struct rof_device_info);
	if (ioc(fd, ROF_IOC_DEVICE_LIST, &sizing) || !sizing.total)
		printf("ok %d - DEVICE_LIST stall # SKIP no RDMA device\n", ++test_n);
	else
		stall_test(fd, "DEVICE_LIST", ROF_IOC_DEVICE_LIST,
			   sizeof(struct rof_device_info), ROF_IOC_DEVICE_LIST,
			   &sizing);
	memset(&ti, 0, sizeof(ti));
	ti.id = t;
	stall_test(fd, "TENANT_GET", ROF_IOC_TENANT_LIST, sizeof(ti),
		   ROF_IOC_TENANT_GET, &ti);
	memset(&ri, 0, sizeof(ri));
	ri.id = r;
	stall_test(fd, "REGION_GET", ROF_IOC_REGION_LIST, sizeof(ri),
		   ROF_IOC_REGION_GET, &ri);
	memset(&ri, 0, sizeof(ri));
	ri.id = r;
	stall_test(fd, "REGION_GET (during FREELIST_LIST)", ROF_IOC_FREELIST_LIST,
		   sizeof(struct rof_freelist_info), ROF_IOC_REGION_GET, &ri);
	memset(&sizing, 0, sizeof(sizing));
	sizing.elem_size = sizeof(struct rof_prog_info);
	stall_test(fd, "PROG_LIST", ROF_IOC_PROG_LIST,
		   sizeof(struct rof_prog_info), ROF_IOC_PROG_LIST, &sizing);

	/* Last: before the fix, these two corrupted freed memory. */
	race_region_publish(fd, t, 1);
	race_prog_publish(fd, t, 1);

	result(!destroy(fd, ROF_IOC_TENANT_DESTROY, t, ROF_DESTROY_FORCE) &&
	       !find_tenant(fd, "kobj-races"), "force-destroy the test tenant");
	printf("1..%d\n", test_n);
	return test_failed ? 1 : 0;
}

/* Item 6: see the usage comment at the top. */
static int cmd_revoke_wait(int fd, int argc, char **argv)
{
	struct rof_session_info si;
	uint32_t region = strtoul(argv[0], NULL, 0);
	unsigned int delay = strtoul(argv[1], NULL, 0);
	uint64_t t0, took;
	int i, err, bad = 0;

	if (fault_delay(delay)) {
		fprintf(stderr, "kobj-ioctl revoke-wait: %s: %s\n", FAULT_DELAY,
			strerror(errno));
		return 1;
	}
	t0 = now_ms();
	err = destroy(fd, ROF_IOC_REGION_DESTROY, region, ROF_DESTROY_FORCE);
	took = now_ms() - t0;
	/* Right after it returned: every session is closing or gone. */
	for (i = 2; i < argc; i++) {
		memset(&si, 0, sizeof(si));
		si.id = strtoul(argv[i], NULL, 0);
		if (!ioc(fd, ROF_IOC_SESSION_GET, &si) &&
		    si.state != ROF_SESSION_CLOSING) {
			printf("session %u is in state %u after the destroy returned\n",
			       si.id, si.state);
			bad++;
		}
	}
	fault_delay(0);
	if (err) {
		printf("REGION_DESTROY %u force: %s\n", region, strerror(err));
		return 1;
	}
	printf("REGION_DESTROY force took %llu ms (sessions detach %u ms late)\n",
	       (unsigned long long)took, delay);
	if (took < delay / 2) {
		printf("the destroy returned before its sessions detached\n");
		bad++;
	}
	return bad ? 1 : 0;
}

/* The wait of a forced destroy is killable, and the destroy happens anyway. */
static int cmd_revoke_kill(int fd, uint32_t region, unsigned int delay)
{
	struct rof_region_info ri;
	uint64_t killed, took;
	int status, bad = 0;
	pid_t pid;

	if (fault_delay(delay)) {
		fprintf(stderr, "kobj-ioctl revoke-kill: %s: %s\n", FAULT_DELAY,
			strerror(errno));
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(destroy(fd, ROF_IOC_REGION_DESTROY, region, ROF_DESTROY_FORCE));
	/* The session's detach is held: the destroy is in (or at) its wait. */
	if (fault_wait("detach from region")) {
		printf("the session never started to detach\n");
		bad++;
	}
	killed = now_ms();
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	took = now_ms() - killed;
	/* Not killable, it would die only after the held detach, @delay on. */
	if (!WIFSIGNALED(status) || took >= delay) {
		printf("the destroying child %s, %llu ms after SIGKILL\n",
		       WIFSIGNALED(status) ? "died" : "exited",
		       (unsigned long long)took);
		bad++;
	}
	if (get_region(fd, region, &ri) != ENOENT) {
		printf("region %u is still there after the killed destroy\n", region);
		bad++;
	}
	fault_delay(0);	/* the sessions finish detaching on their own */
	return bad ? 1 : 0;
}

/* --- subcommands --------------------------------------------------------- */

static int cmd_setup(int fd, const char *name)
{
	uint32_t t, r, fl;
	int err;

	err = tenant_create(fd, name, &t);
	if (!err)
		err = region_create(fd, t, "r0", 256 * PAGE, ROF_ACCESS_ALL, &r);
	if (!err)
		err = freelist_create(fd, r, 0, 256, 64, &fl);
	if (err) {
		fprintf(stderr, "kobj-ioctl setup %s: %s\n", name, strerror(err));
		return 1;
	}
	printf("%u\n", t);
	return 0;
}

static int cmd_count(int fd)
{
	struct rof_list req;
	unsigned long cmds[3] = { ROF_IOC_TENANT_LIST, ROF_IOC_REGION_LIST,
				  ROF_IOC_FREELIST_LIST };
	size_t sizes[3] = { sizeof(struct rof_tenant_info),
			    sizeof(struct rof_region_info),
			    sizeof(struct rof_freelist_info) };
	int i;

	for (i = 0; i < 3; i++) {
		memset(&req, 0, sizeof(req));
		req.elem_size = sizes[i];
		if (ioc(fd, cmds[i], &req)) {
			perror("kobj-ioctl count");
			return 1;
		}
		printf("%s%u", i ? " " : "", req.total);
	}
	putchar('\n');
	return 0;
}

static int cmd_drain(int fd, int force)
{
	struct rof_drain d = { .flags = force ? ROF_DESTROY_FORCE : 0 };
	int err = ioc(fd, ROF_IOC_TENANT_DRAIN, &d);

	printf("%u %u\n", d.tenants, d.remaining);
	if (err)
		fprintf(stderr, "kobj-ioctl drain: %s\n", strerror(err));
	return err ? 1 : 0;
}

/* 4 MiB per cycle: 20 leaked regions would show in MemFree. */
#define CYCLE_PAGES	1024

/* One cycle of every object type; failures are reported as TAP. */
static void one_cycle(int fd, int i)
{
	struct rof_region_map m;
	struct rof_audit_open o;
	uint64_t tok[2];
	uint32_t t = 0, r = 0, fl = 0;
	char name[32];
	int mfd;
	void *p;

	snprintf(name, sizeof(name), "kobj-cycle-%d", i);
	result(!tenant_create(fd, name, &t), "cycle %d: tenant", i);
	result(!region_create(fd, t, "r", CYCLE_PAGES * PAGE, ROF_ACCESS_ALL, &r),
	       "cycle %d: region", i);
	result(!freelist_create(fd, r, 0, 64, 32, &fl), "cycle %d: free list", i);
	result(!mint(fd, r, ROF_ACCESS_READ | ROF_ACCESS_WRITE, 0, tok),
	       "cycle %d: token", i);
	mfd = open_rof();
	result(!map_token(mfd, tok, &m), "cycle %d: map", i);
	p = mmap(NULL, CYCLE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 mfd, 0);
	result(p != MAP_FAILED, "cycle %d: mmap", i);
	if (p != MAP_FAILED) {
		memset(p, i, CYCLE_PAGES * PAGE);
		munmap(p, CYCLE_PAGES * PAGE);
	}
	close(mfd);
	mint(fd, r, ROF_ACCESS_READ, 0, tok);	/* left unused: destroy purges it */
	memset(&o, 0, sizeof(o));
	result(!ioc(fd, ROF_IOC_AUDIT_OPEN, &o), "cycle %d: audit fd", i);
	close(o.fd);
	result(!destroy(fd, ROF_IOC_FREELIST_DESTROY, fl, 0), "cycle %d: free list destroy", i);
	result(!destroy(fd, ROF_IOC_REGION_DESTROY, r, 0), "cycle %d: region destroy", i);
	/* A busy tenant, force-destroyed, every other cycle. */
	if (i % 2)
		region_create(fd, t, "r2", PAGE, 0, &r);
	result(!destroy(fd, ROF_IOC_TENANT_DESTROY, t, i % 2 ? ROF_DESTROY_FORCE : 0),
	       "cycle %d: tenant destroy", i);
}

int main(int argc, char **argv)
{
	int fd = open_rof(), i, n;

	if (argc > 1 && !strcmp(argv[1], "setup") && argc == 3)
		return cmd_setup(fd, argv[2]);
	if (argc > 1 && !strcmp(argv[1], "count"))
		return cmd_count(fd);
	if (argc > 1 && !strcmp(argv[1], "drain"))
		return cmd_drain(fd, argc > 2 && !strcmp(argv[2], "force"));
	if (argc > 1 && !strcmp(argv[1], "cycles") && argc == 3) {
		n = atoi(argv[2]);
		quiet = 1;
		for (i = 0; i < n; i++)
			one_cycle(fd, i);
		return test_failed ? 1 : 0;
	}
	if (argc > 1 && !strcmp(argv[1], "races") && argc == 3)
		return cmd_races(fd, atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "revoke-wait") && argc >= 4)
		return cmd_revoke_wait(fd, argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "revoke-kill") && argc == 4)
		return cmd_revoke_kill(fd, strtoul(argv[2], NULL, 0),
				       strtoul(argv[3], NULL, 0));
	if (argc > 1) {
		fprintf(stderr,
			"usage: kobj-ioctl [setup NAME | count | drain [force] | cycles N | races N |\n"
			"                   revoke-wait REGION DELAY_MS SESSION... |\n"
			"                   revoke-kill REGION DELAY_MS]\n");
		return 2;
	}

	test_tenants(fd);
	test_regions(fd);
	test_region_freelists(fd);
	test_mappings(fd);
	test_mapping_destroyed(fd);
	test_freelists(fd);
	test_ids(fd);
	test_audit(fd);
	test_audit_overrun(fd);
	test_unprivileged();

	/* Leave nothing behind: the tenants go with their regions. */
	result(!destroy(fd, ROF_IOC_TENANT_DESTROY, ta, ROF_DESTROY_FORCE) &&
	       !destroy(fd, ROF_IOC_TENANT_DESTROY, tb, ROF_DESTROY_FORCE),
	       "force-destroy the test tenants");
	printf("1..%d\n", test_n);
	close(fd);
	return test_failed ? 1 : 0;
}
