// SPDX-License-Identifier: GPL-2.0-only
/*
 * rof_ticket.c - the ticket MAC key and ticket checks.
 *
 * A ticket (struct rof_ticket, rof.h) is what a client puts into its
 * rdma_cm connect private data.  Only rofd and the module know the key,
 * so a ticket with a good MAC was issued by rofd; the session it names
 * was prepared by rofd too.  The MAC is a truncated HMAC-SHA256: 128 bits
 * resist forgery as well as the full tag for an online attacker, and they
 * leave room in the 56 bytes a connect request carries.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/hash.h>
#include <crypto/algapi.h>
#include <crypto/sha2.h>
#include <linux/capability.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "rof_core.h"

static struct crypto_shash *rof_ticket_tfm;
/* Serialises setkey against digests: a shash's key is shared state. */
static DEFINE_MUTEX(rof_ticket_lock);
static bool rof_ticket_key_set;

static int rof_ticket_mac(const struct rof_ticket *t, u8 mac[ROF_TICKET_MAC_LEN])
{
	SHASH_DESC_ON_STACK(desc, rof_ticket_tfm);
	u8 full[SHA256_DIGEST_SIZE];
	int ret;

	lockdep_assert_held(&rof_ticket_lock);
	desc->tfm = rof_ticket_tfm;
	ret = crypto_shash_digest(desc, (const u8 *)t, ROF_TICKET_MAC_OFFSET, full);
	shash_desc_zero(desc);
	if (!ret)
		memcpy(mac, full, ROF_TICKET_MAC_LEN);
	memzero_explicit(full, sizeof(full));
	return ret;
}

long rof_ticket_set_key(void __user *uarg)
{
	struct rof_ticket_key k;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&k, uarg, sizeof(k)))
		return -EFAULT;
	if (k.flags || k.reserved) {
		ret = -EINVAL;
		goto out;
	}
	if (!memchr_inv(k.key, 0, sizeof(k.key))) {
		/* An all-zero key is what an uninitialised buffer looks like. */
		ret = -EINVAL;
		goto out;
	}
	mutex_lock(&rof_ticket_lock);
	ret = crypto_shash_setkey(rof_ticket_tfm, k.key, sizeof(k.key));
	if (!ret)
		rof_ticket_key_set = true;
	mutex_unlock(&rof_ticket_lock);
	if (!ret)
		pr_info("ticket key set\n");
out:
	memzero_explicit(&k, sizeof(k));
	return ret;
}

bool rof_ticket_have_key(void)
{
	bool have;

	mutex_lock(&rof_ticket_lock);
	have = rof_ticket_key_set;
	mutex_unlock(&rof_ticket_lock);
	return have;
}

int rof_ticket_sign(struct rof_ticket *t, u32 tenant, u32 session,
		    u64 expires_ns, __le64 nonce)
{
	int ret = -ENOKEY;

	memset(t, 0, sizeof(*t));
	t->version = ROF_TICKET_VERSION;
	t->tenant = cpu_to_le32(tenant);
	t->session = cpu_to_le32(session);
	t->expires_ns = cpu_to_le64(expires_ns);
	t->nonce = nonce;

	mutex_lock(&rof_ticket_lock);
	if (rof_ticket_key_set)
		ret = rof_ticket_mac(t, t->mac);
	mutex_unlock(&rof_ticket_lock);
	return ret;
}

int rof_ticket_check(const void *data, u8 len, struct rof_ticket *out)
{
	u8 mac[ROF_TICKET_MAC_LEN];
	bool have_key;
	int ret;

	if (!data || len < sizeof(*out))
		return ROF_REJECT_NO_TICKET;
	memcpy(out, data, sizeof(*out));
	if (out->version == 0)
		return ROF_REJECT_NO_TICKET;
	if (out->version != ROF_TICKET_VERSION ||
	    memchr_inv(out->reserved, 0, sizeof(out->reserved)) || out->reserved2)
		return ROF_REJECT_VERSION;

	mutex_lock(&rof_ticket_lock);
	have_key = rof_ticket_key_set;
	ret = have_key ? rof_ticket_mac(out, mac) : 0;
	mutex_unlock(&rof_ticket_lock);
	if (!have_key)
		return ROF_REJECT_NO_KEY;
	if (ret)
		return ROF_REJECT_RESOURCES;
	if (crypto_memneq(mac, out->mac, sizeof(mac)))
		return ROF_REJECT_BAD_MAC;
	/* Only a ticket rofd signed gets this far: its fields are trusted. */
	if (le64_to_cpu(out->expires_ns) <= ktime_get_real_ns())
		return ROF_REJECT_EXPIRED;
	return 0;
}

int rof_ticket_init(void)
{
	rof_ticket_tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(rof_ticket_tfm)) {
		int ret = PTR_ERR(rof_ticket_tfm);

		pr_err("hmac(sha256) unavailable: %d\n", ret);
		rof_ticket_tfm = NULL;
		return ret;
	}
	return 0;
}

void rof_ticket_exit(void)
{
	crypto_free_shash(rof_ticket_tfm);
	rof_ticket_tfm = NULL;
	rof_ticket_key_set = false;
}
