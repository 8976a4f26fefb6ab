// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_ioctl.c - the /dev/rof ioctl dispatcher.
 *
 * Each command copies its fixed-size argument in, validates every field,
 * calls the object's file, and copies the result out.  Unknown commands
 * get -ENOTTY.
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

static long rof_ioc_list_devices(void __user *uarg)
{
	struct rof_list req;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	ret = rof_device_list(&req);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &req, sizeof(req)))
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
		return rof_ioc_list_devices(uarg);
	default:
		return -ENOTTY;
	}
}
