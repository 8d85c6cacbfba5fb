// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The remote tier's crypto over libsodium (remote_seal.h).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "errbuf.h"
#include "remote_seal.h"

_Static_assert(VT_SEAL_KEY_BYTES == crypto_kdf_KEYBYTES, "KDF key size");
_Static_assert(VT_SEAL_KEY_BYTES == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "AEAD key size");
_Static_assert(VT_SEAL_NONCE_BYTES == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce size");
_Static_assert(VT_SEAL_AEAD_BYTES == crypto_aead_xchacha20poly1305_ietf_ABYTES, "AEAD tag size");
_Static_assert(VT_SEAL_BOX_OVERHEAD == crypto_box_SEALBYTES, "sealed box overhead");
_Static_assert(VT_SEAL_PK_BYTES == crypto_box_PUBLICKEYBYTES, "public key size");
_Static_assert(VT_SEAL_SK_BYTES == crypto_box_SECRETKEYBYTES, "secret key size");
_Static_assert(VT_SEAL_TAG_BYTES >= crypto_generichash_BYTES_MIN, "tag size");
_Static_assert(VT_SEAL_KEY_BYTES >= crypto_generichash_KEYBYTES_MIN, "tag key size");

#define KDF_CONTEXT "vtierrmt"
_Static_assert(sizeof(KDF_CONTEXT) - 1 == crypto_kdf_CONTEXTBYTES, "KDF context size");

enum { SUBKEY_PAGE = 1, SUBKEY_ACCESS = 2, SUBKEY_NS = 3 };

int vt_seal_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

int vt_seal_derive(const uint8_t vm_key[VT_SEAL_KEY_BYTES], struct vt_seal_keys *out)
{
	uint8_t ns_key[crypto_kdf_BYTES_MIN];
	int ret = vt_seal_init();

	_Static_assert(sizeof(ns_key) >= VT_SEAL_NS_BYTES, "ns subkey size");
	if (ret)
		return ret;
	if (crypto_kdf_derive_from_key(out->page_key, sizeof(out->page_key), SUBKEY_PAGE,
				       KDF_CONTEXT, vm_key) ||
	    crypto_kdf_derive_from_key(out->access_key, sizeof(out->access_key), SUBKEY_ACCESS,
				       KDF_CONTEXT, vm_key) ||
	    crypto_kdf_derive_from_key(ns_key, sizeof(ns_key), SUBKEY_NS, KDF_CONTEXT, vm_key))
		return -EIO;
	memcpy(out->ns, ns_key, sizeof(out->ns));
	sodium_memzero(ns_key, sizeof(ns_key));
	return 0;
}

#define PAGE_AD_BYTES (VT_SEAL_NS_BYTES + 8 + 4)

static void page_ad(uint8_t ad[PAGE_AD_BYTES], const uint8_t ns[VT_SEAL_NS_BYTES],
		    uint64_t page_id, uint32_t version)
{
	uint64_t id = htole64(page_id);
	uint32_t ver = htole32(version);

	memcpy(ad, ns, VT_SEAL_NS_BYTES);
	memcpy(ad + VT_SEAL_NS_BYTES, &id, sizeof(id));
	memcpy(ad + VT_SEAL_NS_BYTES + sizeof(id), &ver, sizeof(ver));
}

int vt_seal_page(const uint8_t page_key[VT_SEAL_KEY_BYTES], const uint8_t ns[VT_SEAL_NS_BYTES],
		 uint64_t page_id, uint32_t version, const void *plain, size_t len,
		 uint8_t *blob, size_t blob_cap, size_t *blob_len)
{
	uint8_t ad[PAGE_AD_BYTES];
	unsigned long long clen;
	int ret = vt_seal_init();

	if (ret)
		return ret;
	if (blob_cap < VT_SEAL_PAGE_OVERHEAD || len > blob_cap - VT_SEAL_PAGE_OVERHEAD)
		return -ENOBUFS;
	page_ad(ad, ns, page_id, version);
	randombytes_buf(blob, VT_SEAL_NONCE_BYTES);
	if (crypto_aead_xchacha20poly1305_ietf_encrypt(blob + VT_SEAL_NONCE_BYTES, &clen,
						       plain, len, ad, sizeof(ad), NULL,
						       blob, page_key))
		return -EIO;
	*blob_len = VT_SEAL_NONCE_BYTES + (size_t)clen;
	return 0;
}

int vt_seal_page_open(const uint8_t page_key[VT_SEAL_KEY_BYTES], const uint8_t ns[VT_SEAL_NS_BYTES],
		      uint64_t page_id, uint32_t version, const uint8_t *blob, size_t blob_len,
		      void *plain, size_t plain_cap, size_t *plain_len)
{
	uint8_t ad[PAGE_AD_BYTES];
	unsigned long long mlen;
	int ret = vt_seal_init();

	if (ret)
		return ret;
	if (blob_len < VT_SEAL_PAGE_OVERHEAD)
		return -EBADMSG;
	if (plain_cap < blob_len - VT_SEAL_PAGE_OVERHEAD)
		return -ENOBUFS;
	page_ad(ad, ns, page_id, version);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &mlen, NULL,
						       blob + VT_SEAL_NONCE_BYTES,
						       blob_len - VT_SEAL_NONCE_BYTES,
						       ad, sizeof(ad), blob, page_key))
		return -EBADMSG;
	*plain_len = (size_t)mlen;
	return 0;
}

void vt_seal_tag(const uint8_t access_key[VT_SEAL_KEY_BYTES], const void *data, size_t len,
		 uint8_t tag[VT_SEAL_TAG_BYTES])
{
	/* crypto_generichash cannot fail with these sizes (static asserts above). */
	crypto_generichash(tag, VT_SEAL_TAG_BYTES, data, len, access_key, VT_SEAL_KEY_BYTES);
}

bool vt_seal_tag_ok(const uint8_t access_key[VT_SEAL_KEY_BYTES], const void *data, size_t len,
		    const uint8_t tag[VT_SEAL_TAG_BYTES])
{
	uint8_t want[VT_SEAL_TAG_BYTES];

	vt_seal_tag(access_key, data, len, want);
	return crypto_verify_16(want, tag) == 0;
}

int vt_seal_box(const uint8_t pk[VT_SEAL_PK_BYTES], const void *msg, size_t len,
		uint8_t *out, size_t cap)
{
	int ret = vt_seal_init();

	if (ret)
		return ret;
	if (cap < VT_SEAL_BOX_OVERHEAD || len > cap - VT_SEAL_BOX_OVERHEAD)
		return -ENOBUFS;
	return crypto_box_seal(out, msg, len, pk) ? -EINVAL : 0;
}

int vt_seal_box_open(const struct vt_seal_server_key *key, const uint8_t *box, size_t len,
		     uint8_t *out, size_t cap, size_t *out_len)
{
	int ret = vt_seal_init();

	if (ret)
		return ret;
	if (len < VT_SEAL_BOX_OVERHEAD)
		return -EBADMSG;
	if (cap < len - VT_SEAL_BOX_OVERHEAD)
		return -ENOBUFS;
	if (crypto_box_seal_open(out, box, len, key->pk, key->sk))
		return -EBADMSG;
	*out_len = len - VT_SEAL_BOX_OVERHEAD;
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int vt_seal_server_key_create(const char *path, struct vt_seal_server_key *key,
			      char *err, size_t err_len)
{
	uint8_t buf[VT_SEAL_KEYFILE_BYTES];
	int fd, ret = vt_seal_init();

	if (ret)
		return vt_err_set(ret, err, err_len, "libsodium did not start");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		return vt_err_set(ret, err, err_len, "server key %s: cannot create it (O_EXCL): %s",
				  path, strerror(-ret));
	}
	if (crypto_box_keypair(key->pk, key->sk)) {
		ret = vt_err_set(-EIO, err, err_len, "server key %s: crypto_box_keypair failed", path);
		goto fail;
	}
	memcpy(buf, key->pk, VT_SEAL_PK_BYTES);
	memcpy(buf + VT_SEAL_PK_BYTES, key->sk, VT_SEAL_SK_BYTES);
	ret = write_all(fd, buf, sizeof(buf));
	if (!ret && fsync(fd))
		ret = -errno;
	sodium_memzero(buf, sizeof(buf));
	if (ret) {
		vt_err_set(ret, err, err_len, "server key %s: cannot write it: %s", path, strerror(-ret));
		goto fail;
	}
	if (close(fd))
		return vt_err_set(-errno, err, err_len, "server key %s: close: %s", path,
				  strerror(errno));
	return 0;
fail:
	close(fd);
	unlink(path);
	sodium_memzero(key, sizeof(*key));
	return ret;
}

int vt_seal_server_key_load(const char *path, struct vt_seal_server_key *key,
			    char *err, size_t err_len)
{
	uint8_t buf[VT_SEAL_KEYFILE_BYTES + 1];
	uint8_t pk[VT_SEAL_PK_BYTES];
	struct stat st;
	size_t got = 0;
	int fd, ret = vt_seal_init();

	if (ret)
		return vt_err_set(ret, err, err_len, "libsodium did not start");
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		return vt_err_set(ret, err, err_len, "server key %s: cannot open it: %s", path,
				  strerror(-ret));
	}
	if (fstat(fd, &st)) {
		ret = vt_err_set(-errno, err, err_len, "server key %s: fstat: %s", path,
				 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = vt_err_set(-EINVAL, err, err_len,
				 "server key %s: not a regular file (accepted: a regular file of %u bytes)",
				 path, VT_SEAL_KEYFILE_BYTES);
		goto out;
	}
	if (st.st_mode & 077) {
		ret = vt_err_set(-EPERM, err, err_len,
				 "server key %s: mode %04o is readable by others (accepted: 0600 or narrower)",
				 path, (unsigned int)(st.st_mode & 07777));
		goto out;
	}
	if (st.st_size != VT_SEAL_KEYFILE_BYTES) {
		ret = vt_err_set(-EINVAL, err, err_len,
				 "server key %s: %lld bytes (accepted: exactly %u)", path,
				 (long long)st.st_size, VT_SEAL_KEYFILE_BYTES);
		goto out;
	}
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = vt_err_set(-errno, err, err_len, "server key %s: read: %s", path,
					 strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got != VT_SEAL_KEYFILE_BYTES) {
		ret = vt_err_set(-EINVAL, err, err_len,
				 "server key %s: read %zu bytes (accepted: exactly %u)", path, got,
				 VT_SEAL_KEYFILE_BYTES);
		goto out;
	}
	/* The public half must be the secret half's: a mixed-up file is refused. */
	if (crypto_scalarmult_base(pk, buf + VT_SEAL_PK_BYTES) ||
	    sodium_memcmp(pk, buf, VT_SEAL_PK_BYTES)) {
		ret = vt_err_set(-EINVAL, err, err_len,
				 "server key %s: the public key is not the secret key's (accepted: a pair written by vtier-memd)",
				 path);
		goto out;
	}
	memcpy(key->pk, buf, VT_SEAL_PK_BYTES);
	memcpy(key->sk, buf + VT_SEAL_PK_BYTES, VT_SEAL_SK_BYTES);
	ret = 0;
out:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return ret;
}

bool vt_seal_key_equal(const uint8_t a[VT_SEAL_KEY_BYTES], const uint8_t b[VT_SEAL_KEY_BYTES])
{
	return sodium_memcmp(a, b, VT_SEAL_KEY_BYTES) == 0;
}

_Static_assert(VT_SEAL_HASH_KEY_BYTES == crypto_shorthash_KEYBYTES, "shorthash key size");
_Static_assert(crypto_shorthash_BYTES == 8, "shorthash output size");

uint64_t vt_seal_hash(const uint8_t key[VT_SEAL_HASH_KEY_BYTES], const void *data, size_t len)
{
	uint8_t out[crypto_shorthash_BYTES];
	uint64_t v;

	crypto_shorthash(out, data, len, key);
	memcpy(&v, out, sizeof(v));
	return v;
}

int vt_seal_random(void *buf, size_t len)
{
	int ret = vt_seal_init();

	if (ret)
		return ret;
	randombytes_buf(buf, len);
	return 0;
}

void vt_seal_pk_hex(const uint8_t pk[VT_SEAL_PK_BYTES], char out[VT_SEAL_PK_HEX_LEN + 1])
{
	sodium_bin2hex(out, VT_SEAL_PK_HEX_LEN + 1, pk, VT_SEAL_PK_BYTES);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vt_seal_pk_parse(const char *hex, uint8_t pk[VT_SEAL_PK_BYTES])
{
	uint8_t out[VT_SEAL_PK_BYTES];

	if (!hex || strnlen(hex, VT_SEAL_PK_HEX_LEN + 1) != VT_SEAL_PK_HEX_LEN)
		return -EINVAL;
	for (size_t i = 0; i < VT_SEAL_PK_BYTES; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(pk, out, sizeof(out));
	return 0;
}
