/* crc-read: a consistent read of a record whose writer updates a CRC last
 * (StRoM 5-6, consistent retrieval; the assembly is crc-read.rofs): copy
 * the record, recompute the CRC of its payload, and retry while it does
 * not match.
 *
 * Region "records" (read), 65536 bytes: 1024 records of 64 bytes, a
 * payload and the CRC-64/XZ of the payload.  A writer writes the payload,
 * then the crc; a record never written (all zero) reads as TORN.
 * Args (8 bytes): the record's index (< 1024).
 * Response (64 bytes, OK only): the record as read, its crc matching.
 * Statuses: 0 OK; 1 TORN (8 copies in a row did not match: a writer is
 * still at it, or the record is corrupt); 2 BADARG (index >= 1024).
 */
#include <rof/offload.h>

#define NRECS 1024
#define TRIES 8

enum { OK, TORN, BADARG };

struct record {
	uint8_t payload[56];
	uint64_t crc;
};

ROF_ARGS(uint64_t, rec, 8, 8);
ROF_RESP(struct record, out, 64);
ROF_REGION(struct record, records, ROF_R, 65536);

ROF_PROGRAM int crc_read(uint64_t args_len)
{
	if (rec >= NRECS)
		return BADARG;
	for (int tries = 0; tries < TRIES; tries++) {
		rof_copy(&out, &records[rec], sizeof(out));
		if (rof_crc64(0, out.payload, sizeof(out.payload)) == out.crc)
			return OK;
	}
	return TORN;
}
