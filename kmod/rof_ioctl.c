// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_ioctl.c - the /dev/rof ioctl dispatcher.
 *
 * Routes each command to the file of its object, which copies its
 * fixed-size argument in, checks every field (flags and reserved fields
 * included) and copies the result out; the few commands with no object
 * (VERSION) are served here.  Unknown commands get -ENOTTY.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
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

long rof_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case ROF_IOC_VERSION:
		return rof_ioc_version(uarg);
	case ROF_IOC_LIST_DEVICES:
		return rof_device_list(uarg);
	case ROF_IOC_TENANT_CREATE:
	case ROF_IOC_TENANT_DESTROY:
	case ROF_IOC_TENANT_SET_QUOTA:
	case ROF_IOC_GET_TENANT:
	case ROF_IOC_LIST_TENANTS:
	case ROF_IOC_DRAIN:
		return rof_tenant_ioctl(cmd, uarg);
	case ROF_IOC_REGION_CREATE:
	case ROF_IOC_REGION_DESTROY:
	case ROF_IOC_GET_REGION:
	case ROF_IOC_LIST_REGIONS:
	case ROF_IOC_REGION_TOKEN:
	case ROF_IOC_REGION_MAP:
	case ROF_IOC_FREELIST_CREATE:
	case ROF_IOC_FREELIST_DESTROY:
	case ROF_IOC_LIST_FREELISTS:
		return rof_region_ioctl(file, cmd, uarg);
	case ROF_IOC_AUDIT_OPEN:
	case ROF_IOC_AUDIT_STATS:
		return rof_audit_ioctl(cmd, uarg);
	case ROF_IOC_SET_TICKET_KEY:
	case ROF_IOC_SESSION_PREPARE:
	case ROF_IOC_LIST_SESSIONS:
	case ROF_IOC_GET_SESSION:
	case ROF_IOC_SESSION_CLOSE:
	case ROF_IOC_TENANT_SET_RATE:
		return rof_session_ioctl(cmd, uarg);
	case ROF_IOC_PROG_LOAD:
	case ROF_IOC_PROG_UNLOAD:
	case ROF_IOC_GET_PROG:
	case ROF_IOC_LIST_PROGS:
	case ROF_IOC_PROG_REPLACE:
		return rof_prog_ioctl(cmd, uarg);
	default:
		return -ENOTTY;
	}
}
