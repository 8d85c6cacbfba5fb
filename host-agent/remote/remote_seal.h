/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The remote tier's crypto, libsodium only (docs/reference/remote-protocol.md,
 * "Keys"): the VM key's derived keys, the page AEAD, the datagram tag, the
 * HELLO sealed box and the memory server's key pair. Nothing hand-written;
 * every function returns 0 or a negative errno and logs nothing.
 */
#ifndef VTIER_REMOTE_SEAL_H
#define VTIER_REMOTE_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_SEAL_KEY_BYTES 32		/* VM key, page key, access key */
#define VT_SEAL_NS_BYTES 16		/* namespace id */
#define VT_SEAL_TAG_BYTES 16		/* datagram tag (keyed BLAKE2b) */
#define VT_SEAL_NONCE_BYTES 24		/* XChaCha20-Poly1305 nonce */
#define VT_SEAL_AEAD_BYTES 16		/* Poly1305 tag */
/* A sealed page: nonce || ciphertext || tag. */
#define VT_SEAL_PAGE_OVERHEAD (VT_SEAL_NONCE_BYTES + VT_SEAL_AEAD_BYTES)
#define VT_SEAL_BOX_OVERHEAD 48		/* crypto_box_SEALBYTES */
#define VT_SEAL_PK_BYTES 32
#define VT_SEAL_SK_BYTES 32
#define VT_SEAL_PK_HEX_LEN 64		/* without the NUL */
/* The server's key file: public key then secret key, nothing else. */
#define VT_SEAL_KEYFILE_BYTES (VT_SEAL_PK_BYTES + VT_SEAL_SK_BYTES)

/* What a VM key gives: the server learns access_key and ns, never page_key. */
struct vt_seal_keys {
	uint8_t page_key[VT_SEAL_KEY_BYTES];	/* subkey 1: the page AEAD */
	uint8_t access_key[VT_SEAL_KEY_BYTES];	/* subkey 2: datagram tags */
	uint8_t ns[VT_SEAL_NS_BYTES];		/* subkey 3, first 16 bytes */
};

struct vt_seal_server_key {
	uint8_t pk[VT_SEAL_PK_BYTES];
	uint8_t sk[VT_SEAL_SK_BYTES];
};

/*
 * sodium_init(), which is itself idempotent and thread-safe (libsodium
 * serialises it); called by every entry point below that needs it, so no
 * caller has to remember. -EIO when libsodium cannot start.
 */
int vt_seal_init(void);

/* KDF (crypto_kdf_derive_from_key, context "vtierrmt") of a VM key. */
int vt_seal_derive(const uint8_t vm_key[VT_SEAL_KEY_BYTES], struct vt_seal_keys *out);

/*
 * The page AEAD (XChaCha20-Poly1305 IETF, random nonce), additional data
 * ns || page_id (u64 LE) || version (u32 LE). seal: -ENOBUFS when @blob_cap
 * < len + VT_SEAL_PAGE_OVERHEAD. open: -EBADMSG when the blob does not
 * authenticate for this ns, page and version (or is shorter than the
 * overhead), -ENOBUFS when @plain_cap is too small.
 */
int vt_seal_page(const uint8_t page_key[VT_SEAL_KEY_BYTES], const uint8_t ns[VT_SEAL_NS_BYTES],
		 uint64_t page_id, uint32_t version, const void *plain, size_t len,
		 uint8_t *blob, size_t blob_cap, size_t *blob_len);
int vt_seal_page_open(const uint8_t page_key[VT_SEAL_KEY_BYTES], const uint8_t ns[VT_SEAL_NS_BYTES],
		      uint64_t page_id, uint32_t version, const uint8_t *blob, size_t blob_len,
		      void *plain, size_t plain_cap, size_t *plain_len);

/* Datagram tag: keyed BLAKE2b, 16 bytes; verify compares in constant time. */
void vt_seal_tag(const uint8_t access_key[VT_SEAL_KEY_BYTES], const void *data, size_t len,
		 uint8_t tag[VT_SEAL_TAG_BYTES]);
bool vt_seal_tag_ok(const uint8_t access_key[VT_SEAL_KEY_BYTES], const void *data, size_t len,
		    const uint8_t tag[VT_SEAL_TAG_BYTES]);

/*
 * HELLO box (crypto_box_seal to the server's public key). seal: -ENOBUFS
 * when @cap < len + VT_SEAL_BOX_OVERHEAD. open: -EBADMSG when it does not
 * open with this key pair, -ENOBUFS when @cap is too small.
 */
int vt_seal_box(const uint8_t pk[VT_SEAL_PK_BYTES], const void *msg, size_t len,
		uint8_t *out, size_t cap);
int vt_seal_box_open(const struct vt_seal_server_key *key, const uint8_t *box, size_t len,
		     uint8_t *out, size_t cap, size_t *out_len);

/*
 * The server's key pair in a file of VT_SEAL_KEYFILE_BYTES bytes, mode 0600.
 * create: a new pair, the file created O_EXCL (-EEXIST when it is there).
 * load: refuses (-EINVAL, -EPERM) a file that is not regular, of another
 * size, with a mode wider than 0600 or whose halves do not match; @err
 * (may be NULL) names the path, the value and what is accepted.
 */
int vt_seal_server_key_create(const char *path, struct vt_seal_server_key *key,
			      char *err, size_t err_len);
int vt_seal_server_key_load(const char *path, struct vt_seal_server_key *key,
			    char *err, size_t err_len);

/* Constant-time comparison of two 32-byte keys. */
bool vt_seal_key_equal(const uint8_t a[VT_SEAL_KEY_BYTES], const uint8_t b[VT_SEAL_KEY_BYTES]);

/*
 * Keyed SipHash-2-4 (crypto_shorthash) for hash tables whose keys a peer
 * chooses (namespace and page ids): with a key of vt_seal_random() bytes
 * it cannot aim collisions at one bucket.
 */
#define VT_SEAL_HASH_KEY_BYTES 16
uint64_t vt_seal_hash(const uint8_t key[VT_SEAL_HASH_KEY_BYTES], const void *data, size_t len);
/* Random bytes (randombytes_buf); -EIO when libsodium cannot start. */
int vt_seal_random(void *buf, size_t len);

/* A public key as 64 lowercase hex digits; parse takes exactly 64 hex digits. */
void vt_seal_pk_hex(const uint8_t pk[VT_SEAL_PK_BYTES], char out[VT_SEAL_PK_HEX_LEN + 1]);
int vt_seal_pk_parse(const char *hex, uint8_t pk[VT_SEAL_PK_BYTES]);

#endif /* VTIER_REMOTE_SEAL_H */
