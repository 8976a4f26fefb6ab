// The session ABI and wire format (rof.h) as docs/protocol.md states it:
// sizes and offsets are part of the contract with remote clients.
#include <gtest/gtest.h>

#include <cstddef>

#include "uapi/rof.h"

namespace
{

TEST(Wire, TicketFitsAnRcConnectRequest)
{
	// IB_CM_REQ_PRIVATE_DATA_SIZE (92) minus the rdma_cm header (36).
	EXPECT_LE(sizeof(rof_ticket), 56u);
	EXPECT_EQ(sizeof(rof_ticket), 48u);
	EXPECT_EQ(offsetof(rof_ticket, mac),
		  static_cast<size_t>(ROF_TICKET_MAC_OFFSET));
	EXPECT_EQ(offsetof(rof_ticket, tenant), 4u);
	EXPECT_EQ(offsetof(rof_ticket, session), 8u);
	EXPECT_EQ(offsetof(rof_ticket, expires_ns), 16u);
	EXPECT_EQ(offsetof(rof_ticket, nonce), 24u);
}

TEST(Wire, AcceptAndRejectFitTheirCmMessages)
{
	EXPECT_EQ(sizeof(rof_accept), 16u);
	EXPECT_LE(sizeof(rof_accept), 196u); // IB_CM_REP_PRIVATE_DATA_SIZE
	EXPECT_EQ(sizeof(rof_reject), 8u);
	EXPECT_LE(sizeof(rof_reject), 148u); // IB_CM_REJ_PRIVATE_DATA_SIZE
}

TEST(Wire, MessageHeaders)
{
	EXPECT_EQ(sizeof(rof_req_hdr), 16u);
	EXPECT_EQ(sizeof(rof_resp_hdr), 16u);
	EXPECT_EQ(sizeof(rof_invoke), 8u);
	EXPECT_EQ(sizeof(rof_wire_region), 32u);
	// The welcome message carries every granted region in one message.
	EXPECT_LE(sizeof(rof_resp_hdr) +
			  ROF_SESSION_MAX_REGIONS * sizeof(rof_wire_region),
		  static_cast<size_t>(ROF_MSG_SIZE));
}

TEST(Wire, IoctlStructsHaveNoHiddenPadding)
{
	EXPECT_EQ(sizeof(rof_ticket_key), 40u);
	EXPECT_EQ(sizeof(rof_session_grant), 8u);
	EXPECT_EQ(sizeof(rof_rate), 16u);
	EXPECT_EQ(sizeof(rof_session_prepare) % 8, 0u);
	EXPECT_EQ(sizeof(rof_session_prepare), 8 + ROF_SESSION_MAX_REGIONS * 8 +
						       16 + 8 + 16 +
						       sizeof(rof_ticket));
	EXPECT_EQ(sizeof(rof_session_info) % 8, 0u);
	EXPECT_EQ(sizeof(rof_session_close), 16u);
	EXPECT_EQ(sizeof(rof_tenant_rate), 24u);
}

/* ABI 0.2 added fields without moving any field of before. */
TEST(Wire, Abi02AdditionsKeepTheOldLayouts)
{
	EXPECT_EQ(sizeof(rof_tenant_counters), 96u);
	EXPECT_EQ(offsetof(rof_tenant_counters, audit_dropped), 64u);
	EXPECT_EQ(offsetof(rof_audit_stats, reserved), 28u);
	EXPECT_EQ(offsetof(rof_audit_stats, dropped), 32u);
	EXPECT_EQ(sizeof(rof_audit_stats), 48u);
	EXPECT_EQ(_IOC_NR(ROF_IOC_AUDIT_STATS), 0x29u);
	EXPECT_EQ(_IOC_SIZE(ROF_IOC_AUDIT_STATS), 48u);
}

TEST(Wire, IoctlNumbersAreInTheSessionRange)
{
	for (unsigned long cmd :
	     { ROF_IOC_TICKET_SET_KEY, ROF_IOC_SESSION_PREPARE,
	       ROF_IOC_SESSION_LIST, ROF_IOC_SESSION_GET, ROF_IOC_SESSION_CLOSE,
	       ROF_IOC_TENANT_SET_RATE }) {
		EXPECT_GE(_IOC_NR(cmd), 0x40u);
		EXPECT_LE(_IOC_NR(cmd), 0x6fu);
		EXPECT_EQ(_IOC_TYPE(cmd), static_cast<unsigned>(ROF_IOC_MAGIC));
	}
}

} // namespace
