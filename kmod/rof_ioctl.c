// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_ioctl.c - the /dev/rof ioctl dispatcher, and what every command
 * shares.
 *
 * Routes each command to the file of its object, which copies its
 * fixed-size argument in, checks every field (flags and reserved fields
 * included) and copies the result out; VERSION, which has no object, is
 * served here, and unknown commands get -ENOTTY.  The shapes every GET
 * and LIST command has (rof_get_ioctl, rof_list_ioctl), the name rule
 * (rof_name_check) and the race tests' fault injection (rof_fault_delay)
 * are here too, for each object's file to use.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rof_core.h"

static long rof_ioc_version(void __user *uarg)
{
	struct rof_version v;

	if (copy_from_user(&v, uarg, sizeof(v)))
		return -EFAULT;
	if (v.flags || v.reserved)
		return -EINVAL;

	memset(&v, 0, sizeof(v));
	v.abi_major = ROF_ABI_MAJOR;
	v.abi_minor = ROF_ABI_MINOR;
	strscpy(v.module_version, ROF_MODULE_VERSION, sizeof(v.module_version));

	if (copy_to_user(uarg, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

/*
 * Names: the rule of rof.h (rof_name_fault), NUL-terminated within
 * ROF_NAME_MAX bytes.  Not isalnum(): the kernel's takes Latin-1 letters
 * too, which no other checker does.
 */
int rof_name_check(const char *name)
{
	return rof_name_fault(name, strnlen(name, ROF_NAME_MAX)) ? -EINVAL : 0;
}

/*
 * Fault injection for the race tests (docs/kmod.md section 7.1): when
 * non-zero, create commands sleep this long inside their race windows.
 */
static uint fault_delay_ms;
module_param(fault_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_delay_ms, "testing only: ms (at most 1000) that creates sleep in their race windows; 0 (default) is off");

void rof_fault_delay(const char *what, u32 id)
{
	uint ms = min(READ_ONCE(fault_delay_ms), 1000U);

	if (likely(!ms))
		return;
	/* Logged first: a test can act while the command sleeps. */
	pr_info("fault injection: %s %u delayed %u ms\n", what, id, ms);
	msleep(ms);
}

/*
 * rof_get_ioctl - every GET command: the object's info struct in (its id
 * and flags), filled by @fill into a kernel copy, copied out after @fill
 * has dropped its locks (the rule of rof_list_ioctl).
 * @uarg:	the command's info struct, in and out
 * @size:	its size
 * @fill:	checks the struct's flags (-EINVAL), takes its lock, fills
 *		@buf from the object it names or returns -ENOENT, drops the
 *		lock; never touches user memory; may sleep
 *
 * Returns 0 or a negative errno; nothing is copied out on an error.
 */
long rof_get_ioctl(void __user *uarg, size_t size, int (*fill)(void *buf))
{
	void *buf;
	long ret;

	buf = kmalloc(size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, uarg, size))
		ret = -EFAULT;
	else
		ret = fill(buf);
	if (!ret && copy_to_user(uarg, buf, size))
		ret = -EFAULT;
	kfree(buf);
	return ret;
}

/* Validate the common LIST header (rof_list_ioctl). */
static int rof_list_check(const struct rof_list *req, size_t elem_size)
{
	if (req->flags & ~ROF_LIST_FROM)
		return -EINVAL;
	if (!(req->flags & ROF_LIST_FROM) && req->start)
		return -EINVAL;
	if (req->elem_size != elem_size)
		return -EINVAL;
	if (req->capacity > ROF_LIST_MAX)
		return -E2BIG;
	return 0;
}

/*
 * rof_list_ioctl - every LIST command: the header in, a snapshot taken
 * under the object type's lock, copied to user space after it is dropped
 * (so that a user array that faults slowly, FUSE or userfaultfd, stalls
 * only its own caller, never the lock), the header out.
 * @uarg:	the command's struct rof_list
 * @elem_size:	the size of one element
 * @snap:	takes its lock, fills at most @cap elements of @buf (zeroed;
 *		NULL when @cap is 0) with the objects whose id is at least
 *		*@pos, in increasing id order, sets *@pos one past the id of
 *		the last element filled (leaves it when it fills none), drops
 *		the lock and returns how many objects with an id of at least
 *		the *@pos it was given exist.  Never touches user memory; may
 *		sleep.
 * @arg:	passed to @snap
 *
 * Without ROF_LIST_FROM the listing starts at id 0.  Objects created
 * between the sizing pass and the snapshot get a bigger snapshot (twice
 * at most; past that, total > count tells the caller to retry, or to go
 * on from @start with ROF_LIST_FROM, as the ABI says).  Returns 0 or a
 * negative errno.
 */
long rof_list_ioctl(void __user *uarg, size_t elem_size,
		    u32 (*snap)(void *buf, u32 cap, u32 *pos, void *arg),
		    void *arg)
{
	struct rof_list req;
	u32 cap = 0, total, tries, pos;
	void *buf = NULL;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	ret = rof_list_check(&req, elem_size);
	if (ret)
		return ret;
	pos = req.start;
	total = snap(NULL, 0, &pos, arg);
	for (tries = 0; tries < 3 && cap < min(req.capacity, total); tries++) {
		cap = min(req.capacity, total);
		kvfree(buf);
		buf = kvcalloc(cap, elem_size, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		pos = req.start;
		total = snap(buf, cap, &pos, arg);
	}
	req.count = min(cap, total);
	req.total = total;
	if (req.flags & ROF_LIST_FROM)
		req.start = pos;
	if (req.count && copy_to_user(u64_to_user_ptr(req.elems), buf,
				      (size_t)req.count * elem_size))
		ret = -EFAULT;
	kvfree(buf);
	if (!ret && copy_to_user(uarg, &req, sizeof(req)))
		ret = -EFAULT;
	return ret;
}

long rof_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case ROF_IOC_VERSION:
		return rof_ioc_version(uarg);
	case ROF_IOC_DEVICE_LIST:
		return rof_device_list(uarg);
	case ROF_IOC_TENANT_CREATE:
	case ROF_IOC_TENANT_DESTROY:
	case ROF_IOC_TENANT_SET_QUOTA:
	case ROF_IOC_TENANT_GET:
	case ROF_IOC_TENANT_LIST:
	case ROF_IOC_TENANT_SET_RATE:
	case ROF_IOC_TENANT_DRAIN:
		return rof_tenant_ioctl(cmd, uarg);
	case ROF_IOC_REGION_CREATE:
	case ROF_IOC_REGION_DESTROY:
	case ROF_IOC_REGION_GET:
	case ROF_IOC_REGION_LIST:
	case ROF_IOC_REGION_TOKEN:
	case ROF_IOC_REGION_MAP:
	case ROF_IOC_FREELIST_CREATE:
	case ROF_IOC_FREELIST_DESTROY:
	case ROF_IOC_FREELIST_LIST:
		return rof_region_ioctl(file, cmd, uarg);
	case ROF_IOC_AUDIT_OPEN:
	case ROF_IOC_AUDIT_STATS:
		return rof_audit_ioctl(cmd, uarg);
	case ROF_IOC_TICKET_SET_KEY:
		return rof_ticket_set_key(uarg);
	case ROF_IOC_SESSION_PREPARE:
	case ROF_IOC_SESSION_LIST:
	case ROF_IOC_SESSION_GET:
	case ROF_IOC_SESSION_CLOSE:
		return rof_session_ioctl(cmd, uarg);
	case ROF_IOC_PROG_LOAD:
	case ROF_IOC_PROG_UNLOAD:
	case ROF_IOC_PROG_GET:
	case ROF_IOC_PROG_LIST:
	case ROF_IOC_PROG_REPLACE:
		return rof_prog_ioctl(cmd, uarg);
	default:
		return -ENOTTY;
	}
}
