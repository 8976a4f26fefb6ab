// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_main.c - module init/exit and the /dev/rof misc device.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "rof_core.h"

static struct dentry *rof_debugfs;

/*
 * Writing to /sys/kernel/debug/rof/quiesce returns once every free the
 * module has deferred (close works, region frees, RCU callbacks) has
 * run: a quiescent point for leak checks, instead of waiting and hoping.
 * The module's frees after a grace period are call_rcu callbacks of its
 * own (not kfree_rcu, whose batches rcu_barrier() does not wait for).
 */
static int rof_quiesce_set(void *data, u64 val)
{
	rof_session_flush();	/* close works: they put regions, tenants */
	rof_region_flush();	/* region frees: they call_rcu */
	rcu_barrier();
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(rof_quiesce_fops, NULL, rof_quiesce_set, "%llu\n");

static const struct file_operations rof_fops = {
	.owner		= THIS_MODULE,
	.open		= rof_region_fopen,
	.release	= rof_region_frelease,
	.mmap		= rof_region_mmap,
	.unlocked_ioctl	= rof_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice rof_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "rof",
	.fops	= &rof_fops,
	.mode	= 0660,	/* group: 60-rof.rules; control ioctls check CAP_SYS_ADMIN */
};

static int __init rof_init(void)
{
	int ret;

	ret = rof_audit_init();
	if (ret)
		return ret;
	ret = rof_tenant_init();
	if (ret)
		goto err_audit;
	ret = rof_region_init();
	if (ret)
		goto err_tenant;
	ret = rof_prog_init();
	if (ret)
		goto err_region;

	ret = rof_device_init();
	if (ret)
		goto err_prog;

	ret = rof_session_init();
	if (ret)
		goto err_device;

	ret = misc_register(&rof_misc);
	if (ret)
		goto err_session;
	/* Optional: debugfs failures are not the module's. */
	rof_debugfs = debugfs_create_dir("rof", NULL);
	debugfs_create_file_unsafe("quiesce", 0200, rof_debugfs, NULL,
				   &rof_quiesce_fops);
	rof_dp_debugfs(rof_debugfs);
	rof_poll_debugfs(rof_debugfs);

	pr_info("loaded, ABI %u.%u\n", ROF_ABI_MAJOR, ROF_ABI_MINOR);
	return 0;

err_session:
	rof_session_exit();
err_device:
	rof_device_exit();
err_prog:
	rof_prog_exit();
err_region:
	rof_region_exit();
err_tenant:
	rof_tenant_exit();
err_audit:
	rof_audit_exit();
	return ret;
}

static void __exit rof_exit(void)
{
	debugfs_remove(rof_debugfs);
	misc_deregister(&rof_misc);
	rof_session_exit();
	rof_device_exit();
	rof_prog_exit();
	rof_region_exit();
	rof_tenant_exit();
	rof_audit_exit();
	pr_info("unloaded\n");
}

module_init(rof_init);
module_exit(rof_exit);

MODULE_DESCRIPTION("rof: RDMA offload service, kernel owner of RDMA resources");
MODULE_LICENSE("GPL");
MODULE_VERSION(ROF_MODULE_VERSION);
