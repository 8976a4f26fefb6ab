// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_device.c - the RDMA devices rof serves.
 *
 * An ib_client tracks devices as the RDMA core adds and removes them
 * (including "rdma link add/delete" for soft-RoCE).  The list is the
 * source of truth for ROF_IOC_DEVICE_LIST and, later, for the objects
 * (protection domains, sessions) that live on a device.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rof_core.h"

static LIST_HEAD(rof_devices);	/* by ->ibdev->index, for LIST paging */
static DEFINE_MUTEX(rof_devices_lock);

static struct ib_client rof_ib_client;

static void rof_device_release(struct kref *ref)
{
	kfree(container_of(ref, struct rof_device, ref));
}

void rof_device_put(struct rof_device *dev)
{
	kref_put(&dev->ref, rof_device_release);
}

static int rof_add_one(struct ib_device *ibdev)
{
	struct list_head *at = &rof_devices;
	struct rof_device *dev, *next;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->ref);
	dev->ibdev = ibdev;

	mutex_lock(&rof_devices_lock);
	list_for_each_entry(next, &rof_devices, node)
		if (next->ibdev->index > ibdev->index) {
			at = &next->node;
			break;
		}
	list_add_tail(&dev->node, at);
	mutex_unlock(&rof_devices_lock);

	ib_set_client_data(ibdev, &rof_ib_client, dev);
	pr_info("device %s added\n", dev_name(&ibdev->dev));
	return 0;
}

static void rof_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct rof_device *dev = client_data;

	rof_session_device_removed(dev);
	mutex_lock(&rof_devices_lock);
	list_del(&dev->node);
	dev->removed = true;
	dev->ibdev = NULL;
	mutex_unlock(&rof_devices_lock);

	pr_info("device %s removed\n", dev_name(&ibdev->dev));
	/*
	 * The RDMA core clears the client data only after this returns, and
	 * the cm clients (removed after rof) still deliver connect requests
	 * until then: rof_device_get_ib must not look at the client data.
	 */
	rof_device_put(dev);
}

static struct ib_client rof_ib_client = {
	.name	= "rof",
	.add	= rof_add_one,
	.remove	= rof_remove_one,
};

/*
 * Looked up on rof_devices, not through ib_get_client_data(): the client
 * data outlives the rof_device, which rof_remove_one frees before the
 * RDMA core clears it.  A device is on the list until it is removed.
 */
struct rof_device *rof_device_get_ib(struct ib_device *ibdev)
{
	struct rof_device *dev, *found = NULL;

	mutex_lock(&rof_devices_lock);
	list_for_each_entry(dev, &rof_devices, node) {
		if (dev->ibdev == ibdev) {
			kref_get(&dev->ref);
			found = dev;
			break;
		}
	}
	mutex_unlock(&rof_devices_lock);
	return found;
}

static void rof_fill_info(struct rof_device *dev, struct rof_device_info *info)
{
	struct ib_device *ibdev = dev->ibdev;
	u32 port;

	memset(info, 0, sizeof(*info));
	strscpy(info->name, dev_name(&ibdev->dev), sizeof(info->name));
	info->node_guid = be64_to_cpu(ibdev->node_guid);
	info->index = ibdev->index;
	info->num_ports = rdma_end_port(ibdev) - rdma_start_port(ibdev) + 1;
	if (info->num_ports > ROF_MAX_PORTS)
		info->flags |= ROF_DEVICE_PORTS_TRUNCATED;

	rdma_for_each_port(ibdev, port) {
		struct rof_port_info *pi;
		struct ib_port_attr attr;
		u32 i = port - rdma_start_port(ibdev);

		if (i >= ROF_MAX_PORTS)
			break;
		pi = &info->ports[i];
		pi->port_num = port;
		if (ib_query_port(ibdev, port, &attr))
			continue;	/* reported as ROF_PORT_NOP, mtu 0 */
		pi->state = attr.state;
		pi->active_mtu = ib_mtu_enum_to_int(attr.active_mtu);
		if ((int)pi->active_mtu < 0)
			pi->active_mtu = 0;
	}
}

/* ib_query_port sleeps: fine under the mutex, which keeps ->ibdev valid. */
static u32 rof_device_snap(void *buf, u32 cap, u32 *pos, void *arg)
{
	struct rof_device_info *info = buf;
	struct rof_device *dev;
	u32 n = 0, start = *pos;

	mutex_lock(&rof_devices_lock);
	list_for_each_entry(dev, &rof_devices, node) {
		if (dev->ibdev->index < start)
			continue;
		if (n++ < cap) {
			rof_fill_info(dev, &info[n - 1]);
			*pos = dev->ibdev->index + 1;
		}
	}
	mutex_unlock(&rof_devices_lock);
	return n;
}

/*
 * No capability needed: the copy to user space happens after the lock is
 * dropped (rof_list_ioctl), so a slow user buffer cannot stall device
 * add/remove or the session connects that look devices up.
 */
long rof_device_list(void __user *uarg)
{
	return rof_list_ioctl(uarg, sizeof(struct rof_device_info),
			      rof_device_snap, NULL);
}

int rof_device_init(void)
{
	return ib_register_client(&rof_ib_client);
}

void rof_device_exit(void)
{
	/* Calls rof_remove_one for every device still present. */
	ib_unregister_client(&rof_ib_client);
	WARN_ON(!list_empty(&rof_devices));
}
