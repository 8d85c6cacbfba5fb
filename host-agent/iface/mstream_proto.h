/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration stream's wire format, version 1 (docs/reference/migration-stream.md):
 * the pages a source vtierd holds compressed travel to the destination vtierd as they
 * are, over a TCP connection of their own that the destination opens, authenticated
 * by a per-migration secret that rides in the migration profile.
 *
 * Pure functions over byte buffers: no sockets, no threads, no clock, no logging, no
 * file-scope mutable state; crypto through libsodium only. Every function returns 0
 * (or a count) or a negative errno with a one-line reason in @err (may be NULL) that
 * names the field, the value and what is accepted.
 *
 * A frame: a 24-byte header, the payload, a 16-byte tag (keyed BLAKE2b over header
 * and payload by the sending direction's key). A session (struct vt_ms_session) is
 * one side's view of one stream: it frames what its role may send in its state and
 * checks every frame it is given; after any refusal or an ABORT it is dead.
 */
#ifndef VTIER_IFACE_MSTREAM_PROTO_H
#define VTIER_IFACE_MSTREAM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_MS_MAGIC 0x534d5456u		/* "VTMS" as bytes on the wire */
#define VT_MS_VERSION 1
#define VT_MS_HDR_BYTES 24
#define VT_MS_TAG_BYTES 16
#define VT_MS_KEY_BYTES 32		/* the secret K and each derived key */
#define VT_MS_ID_BYTES 16		/* the stream id S */
#define VT_MS_PAYLOAD_MAX (1024u * 1024u + 64u * 1024u)
#define VT_MS_FRAME_MAX (VT_MS_HDR_BYTES + VT_MS_PAYLOAD_MAX + VT_MS_TAG_BYTES)
#define VT_MS_PAGE_SIZE 4096u		/* the only page size of version 1 */
#define VT_MS_PAGES_MAX 256u		/* records in one PAGES frame */
#define VT_MS_TIERS_MAX 16u		/* a record's tier: an index in the profile's tier table */
#define VT_MS_ERRNO_MAX 4095		/* ABORT and END_ACK errnos: -4095..-1 */
#define VT_MS_MSG_LEN 128		/* ABORT's message, NUL included */
#define VT_MS_ERR_LEN 256		/* room for every reason this library writes */

/* Fixed payload sizes; PAGES: an 8-byte head, then records of 24 bytes + data + padding. */
#define VT_MS_HELLO_BYTES 32
#define VT_MS_WELCOME_BYTES 32
#define VT_MS_ACK_BYTES 32
#define VT_MS_END_BYTES 16
#define VT_MS_END_ACK_BYTES 32
#define VT_MS_ABORT_BYTES (8 + VT_MS_MSG_LEN)
#define VT_MS_PAGES_HEAD_BYTES 8
#define VT_MS_REC_BYTES 24
/* The largest PAGES payload: 256 records of a raw page each. */
#define VT_MS_PAGES_BYTES_MAX (VT_MS_PAGES_HEAD_BYTES + \
			       VT_MS_PAGES_MAX * (VT_MS_REC_BYTES + VT_MS_PAGE_SIZE))

enum vt_ms_type {
	VT_MS_HELLO = 1,	/* dest -> source, its first frame */
	VT_MS_WELCOME = 2,	/* source -> dest, its first frame */
	VT_MS_PAGES = 3,	/* source -> dest */
	VT_MS_ACK = 4,		/* dest -> source */
	VT_MS_END = 5,		/* source -> dest, after its last PAGES */
	VT_MS_END_ACK = 6,	/* dest -> source, the stream's last frame */
	VT_MS_ABORT = 7,	/* either way, after the stream's first frame */
};

enum vt_ms_role {
	VT_MS_SOURCE = 0,
	VT_MS_DESTINATION = 1,
};

/* A page record's kind. */
enum vt_ms_kind {
	VT_MS_KIND_COMPRESSED = 0,	/* len 1..4096 bytes of a codec's output */
	VT_MS_KIND_SAME = 1,		/* 8 bytes: the page is them repeated 512 times */
	VT_MS_KIND_RAW = 2,		/* the page's 4096 bytes */
};

/* A compressed record's codec (0 for the other kinds). */
enum vt_ms_codec {
	VT_MS_CODEC_NONE = 0,
	VT_MS_CODEC_LZ4 = 1,
	VT_MS_CODEC_ZSTD = 2,
	VT_MS_CODEC_DEFLATE = 3,
};

/* The per-backend, per-migration secret, drawn by the source. */
struct vt_ms_secret {
	uint8_t key[VT_MS_KEY_BYTES];		/* K */
	uint8_t stream_id[VT_MS_ID_BYTES];	/* S */
};

/* What K gives: one tag key per direction. */
struct vt_ms_keys {
	uint8_t d2s[VT_MS_KEY_BYTES];	/* KDF subkey 1: frames the destination sends */
	uint8_t s2d[VT_MS_KEY_BYTES];	/* KDF subkey 2: frames the source sends */
};

/* A new K and S from randombytes_buf(); -EIO when libsodium cannot start. */
int vt_ms_secret_new(struct vt_ms_secret *secret);
/* crypto_kdf_derive_from_key(K, subkeys 1 and 2, context "vtiermst"); -EIO on failure. */
int vt_ms_keys_derive(const uint8_t key[VT_MS_KEY_BYTES], struct vt_ms_keys *keys);
/* sodium_memzero() of secrets, keys and sessions once done with. */
void vt_ms_wipe(void *p, size_t len);

/* The header in host order (vt_ms_hdr_read/write convert from and to the wire). */
struct vt_ms_hdr {
	uint32_t magic;		/* VT_MS_MAGIC */
	uint8_t version;	/* VT_MS_VERSION */
	uint8_t type;		/* enum vt_ms_type */
	uint16_t reserved0;	/* 0 */
	uint32_t length;	/* payload bytes */
	uint32_t reserved1;	/* 0 */
	uint64_t seq;		/* per direction: 0, 1, 2, ... */
};
void vt_ms_hdr_read(const uint8_t buf[VT_MS_HDR_BYTES], struct vt_ms_hdr *h);
void vt_ms_hdr_write(const struct vt_ms_hdr *h, uint8_t buf[VT_MS_HDR_BYTES]);

/*
 * Checks a header as read from the stream (magic, version, a known type, reserved
 * fields, a length within VT_MS_PAYLOAD_MAX and the type's size) and says in
 * *@frame_len how many bytes the whole frame has (header, payload, tag): what the
 * caller reads before vt_ms_session_recv(). -EPROTO or -EMSGSIZE with @err set.
 * Nothing here is authenticated yet: the tag is the session's to check.
 */
int vt_ms_frame_len(const uint8_t hdr[VT_MS_HDR_BYTES], size_t *frame_len,
		    char *err, size_t err_len);

/* ---- payloads ---- */

struct vt_ms_hello {
	uint8_t stream_id[VT_MS_ID_BYTES];
	uint64_t backend_size;		/* bytes */
	uint32_t page_size;		/* VT_MS_PAGE_SIZE */
};
struct vt_ms_welcome {
	uint8_t stream_id[VT_MS_ID_BYTES];
	uint64_t pages_hint;		/* pages the source expects to send */
};
/* ACK and END_ACK's counts, of pages in PAGES records. */
struct vt_ms_ack {
	uint64_t received, installed, dropped;
	uint64_t last_seq;		/* the last PAGES frame taken in; 0: none yet */
};
struct vt_ms_end {
	uint64_t pages, frames;		/* in all PAGES frames sent */
};
struct vt_ms_end_ack {
	uint64_t received, installed, dropped;
	int32_t status;			/* 0 or -errno */
};
struct vt_ms_abort {
	int32_t error;			/* -errno */
	char message[VT_MS_MSG_LEN];	/* NUL-terminated, printable */
};

/* A frame's contents: what vt_ms_session_recv() gives, what vt_ms_payload_encode() takes. */
struct vt_ms_msg {
	uint8_t type;			/* enum vt_ms_type */
	uint64_t seq;			/* recv: the frame's */
	const uint8_t *payload;		/* recv: inside the frame given to it */
	size_t len;			/* recv: the payload's bytes */
	union {
		struct vt_ms_hello hello;
		struct vt_ms_welcome welcome;
		uint32_t pages;		/* PAGES: its record count (vt_ms_pages_iter_init) */
		struct vt_ms_ack ack;
		struct vt_ms_end end;
		struct vt_ms_end_ack end_ack;
		struct vt_ms_abort abort;
	};
};

/*
 * Writes the payload of a fixed-size message (every type but PAGES, which the
 * builder below makes) into @out: *@len its size. Reserved fields are written 0;
 * ABORT's message is cut to 127 bytes, a byte outside 0x20..0x7e becomes '?', the
 * rest of the field NULs. Values are not judged here (the session's send does).
 * -EINVAL for PAGES or an unknown type, -ENOBUFS when @cap is short.
 */
int vt_ms_payload_encode(const struct vt_ms_msg *m, uint8_t *out, size_t cap, size_t *len);

/* ---- PAGES records ---- */

struct vt_ms_page {
	uint64_t index;			/* page number in the backend */
	uint8_t kind;			/* enum vt_ms_kind */
	uint8_t codec;			/* enum vt_ms_codec */
	uint8_t tier;			/* the source's tier, < VT_MS_TIERS_MAX */
	uint32_t len;			/* bytes of data */
	uint32_t crc;			/* crc32c of the uncompressed page; carried, not checked here */
	const uint8_t *data;		/* len bytes (iter: inside the payload) */
};

/*
 * A PAGES payload built in the caller's buffer (for no copy, in the frame itself at
 * frame + VT_MS_HDR_BYTES, which vt_ms_session_send() then takes in place).
 */
struct vt_ms_pages_builder {
	uint8_t *buf;
	size_t cap, len;
	uint32_t count;
	uint64_t index[VT_MS_PAGES_MAX];	/* the records' pages, for repeats */
};
/* -ENOSPC when @cap holds no record at all. */
int vt_ms_pages_begin(struct vt_ms_pages_builder *b, uint8_t *buf, size_t cap);
/*
 * Appends one record (its data copied, padded with zeros to 8 bytes). -ENOSPC when
 * the frame is full (VT_MS_PAGES_MAX records, or @cap; 256 records never pass
 * VT_MS_PAGES_BYTES_MAX): finish and send it, begin another; for a record the receiver would refuse, its refusal
 * (kind, codec, len, tier, a page already in this frame: as vt_ms_pages_next()).
 * Nothing is written on failure. The page's bound is the session's send to check.
 */
int vt_ms_pages_add(struct vt_ms_pages_builder *b, const struct vt_ms_page *p,
		    char *err, size_t err_len);
/* Writes the head; *@len is the payload's size. -ENODATA when no record was added. */
int vt_ms_pages_finish(struct vt_ms_pages_builder *b, size_t *len);

/* Walks a PAGES payload, checking each record before it is handed out. */
struct vt_ms_pages_iter {
	const uint8_t *payload;
	size_t len, off;
	uint32_t count, done;
	int error;			/* the refusal it stopped at, else 0 */
	uint64_t backend_pages;
	uint64_t index[VT_MS_PAGES_MAX];	/* the records' pages so far, for repeats */
};
/*
 * Checks the head (count 1..VT_MS_PAGES_MAX, reserved 0, room for that many records)
 * of a PAGES payload of @len bytes; records' pages must be < @backend_pages.
 */
int vt_ms_pages_iter_init(struct vt_ms_pages_iter *it, const uint8_t *payload, size_t len,
			  uint64_t backend_pages, char *err, size_t err_len);
/*
 * 1 and the next record in *@p (its data inside the payload), 0 when all the
 * head's records were read and they fill the payload exactly, or a refusal:
 * -EPROTO (kind, codec, reserved, padding, records and payload disagree),
 * -EMSGSIZE (len for its kind, a record past the end), -ERANGE (page index, tier),
 * -EEXIST (a page twice in the frame). After a refusal (of the head too) every call
 * returns that errno again.
 */
int vt_ms_pages_next(struct vt_ms_pages_iter *it, struct vt_ms_page *p,
		     char *err, size_t err_len);

/* ---- a session: one side of one stream ---- */

enum vt_ms_state {
	VT_MS_ST_START,		/* dest: HELLO not sent; source: HELLO not received */
	VT_MS_ST_HELLO,		/* HELLO passed: WELCOME due */
	VT_MS_ST_PAGES,		/* WELCOME passed: PAGES and ACKs, until END */
	VT_MS_ST_END,		/* END passed: END_ACK due (ACKs still allowed) */
	VT_MS_ST_DONE,		/* END_ACK passed: the stream is over */
};

/*
 * Plain data, no pointers: the caller allocates it, vt_ms_session_init() fills it,
 * the fields are for reading. Wipe it (vt_ms_wipe) when done: it holds the keys.
 */
struct vt_ms_session {
	enum vt_ms_role role;
	enum vt_ms_state state;
	bool failed;			/* a frame refused (sent or received) */
	bool aborted;			/* an ABORT sent or received */
	struct vt_ms_keys keys;
	uint8_t stream_id[VT_MS_ID_BYTES];
	uint64_t backend_size;
	uint32_t page_size;
	uint64_t send_seq, recv_seq;	/* the next frame's, each way */
	/* The stream's PAGES so far (the source's sent, the destination's received). */
	uint64_t pages, frames;
	uint64_t last_pages_seq;	/* the last PAGES frame's seq; 0: none yet */
	uint64_t pages_hint;		/* the WELCOME's */
	struct vt_ms_ack ack;		/* the last ACK (all 0 before one) */
	struct vt_ms_end_ack end_ack;	/* the END_ACK, once passed */
	struct vt_ms_abort abort;	/* the ABORT, once passed */
};

/*
 * A session of @role for the stream @stream_id of a backend of @backend_size bytes
 * (> 0, a multiple of @page_size, which must be VT_MS_PAGE_SIZE), the keys copied.
 * -EINVAL with @err set.
 */
int vt_ms_session_init(struct vt_ms_session *s, enum vt_ms_role role,
		       const struct vt_ms_keys *keys, const uint8_t stream_id[VT_MS_ID_BYTES],
		       uint64_t backend_size, uint32_t page_size, char *err, size_t err_len);

/*
 * Frames @len payload bytes of @type into @frame (@cap bytes; *@frame_len the
 * frame's size) with the next seq and this side's key, after the checks the peer
 * will make: the type this role may send in this state, the payload as the peer
 * decodes it (the stream id, sizes, a PAGES payload's every record, END's totals
 * equal to the session's, ACK counts that never go down nor pass what arrived,
 * END_ACK's that account for every page). @payload may be frame +
 * VT_MS_HDR_BYTES (a PAGES payload built in place). -ENOBUFS when @cap is short
 * (nothing changes); a refusal otherwise (the session is dead); -EPIPE on a dead
 * or finished session.
 */
int vt_ms_session_send(struct vt_ms_session *s, uint8_t type, const void *payload, size_t len,
		       uint8_t *frame, size_t cap, size_t *frame_len, char *err, size_t err_len);

/*
 * Takes one whole frame of @len bytes from the peer. Checks, in order: the header
 * (vt_ms_frame_len) and that @len is the frame's; the tag by the peer's key (before
 * any byte of the payload is read); seq (exactly the next: a lower one is a replay,
 * a higher one a gap); the type the peer's role may send in this state; the
 * payload (the fixed ones' fields, the stream id, sizes and counts against the
 * session; every record of a PAGES frame). 0 and @msg (its payload inside @frame),
 * a refusal (the session is dead: tell the peer with vt_ms_session_abort()), or
 * -EPIPE on a dead or finished session. A received ABORT is returned (0) and kills
 * the session too.
 */
int vt_ms_session_recv(struct vt_ms_session *s, const uint8_t *frame, size_t len,
		       struct vt_ms_msg *msg, char *err, size_t err_len);

/*
 * Frames an ABORT of @error (-4095..-1; anything else is sent as -EINVAL) and
 * @message (NULL: "") to tell the peer why this side stops: the one frame a session
 * killed by a refusal still makes. -EPIPE before the stream's first frame (the
 * destination has not sent HELLO, the source has not taken one: there is no one to
 * tell), after an ABORT either way, or once the stream is over; -ENOBUFS when @cap
 * is short. The session is dead afterwards.
 */
int vt_ms_session_abort(struct vt_ms_session *s, int error, const char *message,
			uint8_t *frame, size_t cap, size_t *frame_len, char *err, size_t err_len);

/* Is the session past END_ACK, or dead? */
bool vt_ms_session_done(const struct vt_ms_session *s);
bool vt_ms_session_dead(const struct vt_ms_session *s);

/* "HELLO", ..., "ABORT"; "unknown" otherwise. */
const char *vt_ms_type_name(uint8_t type);
/* "start", "hello", "pages", "end", "done". */
const char *vt_ms_state_name(enum vt_ms_state st);
/* "source", "destination". */
const char *vt_ms_role_name(enum vt_ms_role role);

#endif /* VTIER_IFACE_MSTREAM_PROTO_H */
