/* crc-read of the program library (programs/crc-read.rofs) in C: a
 * consistent read of a 64-byte record whose writer updates its CRC last.
 * Statuses: 0 OK, 1 TORN (8 copies did not match), 2 BADARG (index >= 1024).
 * bpf_test.cpp runs it against the assembly version. */
#include <rof/offload.h>

struct record {
	uint8_t payload[56];
	uint64_t crc;
};

ROF_ARGS(uint64_t, rec, 8, 8);
ROF_RESP(struct record, out, 64);
ROF_REGION(struct record, records, ROF_R, 65536);

ROF_PROGRAM int crc_read(uint64_t args_len)
{
	if (rec >= 1024)
		return 2;
	for (int tries = 0; tries < 8; tries++) {
		rof_copy(&out, &records[rec], sizeof(out));
		if (rof_crc64(0, out.payload, sizeof(out.payload)) == out.crc)
			return 0;
	}
	return 1;
}
