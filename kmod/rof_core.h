/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rof_core.h - rof.ko internal interfaces, grouped by the file that
 * implements them.
 */
#ifndef ROF_CORE_H
#define ROF_CORE_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <rdma/ib_verbs.h>

#include "include/uapi/rof.h"

#define ROF_MODULE_VERSION	"0.1.0"

/* rof_device.c */

/*
 * struct rof_device - one RDMA device the module serves.
 *
 * Created by the ib_client add callback, unlinked and released by its
 * remove callback.  Every user outside rof_device.c holds a reference
 * (rof_device_get/put); the ib_device itself is only touched while the
 * device is linked (rof_devices_lock held, or ->removed false seen under it).
 */
struct rof_device {
	struct kref ref;
	struct list_head node;		/* on rof_devices, under rof_devices_lock */
	struct ib_device *ibdev;	/* valid until the remove callback returns */
	bool removed;
};

int rof_device_init(void);
void rof_device_exit(void);
void rof_device_put(struct rof_device *dev);
int rof_device_list(struct rof_list *req);

/* rof_ioctl.c */
long rof_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* ROF_CORE_H */
