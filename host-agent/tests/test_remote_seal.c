// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the remote tier's crypto (host-agent/remote/remote_seal.c):
 * the KDF, the page AEAD against every kind of tampering, the datagram tag
 * against every flipped bit, the HELLO box, the server's key file refusals
 * and the public key's hex form.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "remote_seal.h"

static void vm_key(uint8_t k[VT_SEAL_KEY_BYTES], uint8_t seed)
{
	for (int i = 0; i < VT_SEAL_KEY_BYTES; i++)
		k[i] = (uint8_t)(seed * 31 + i);
}

static void test_kdf(void **state)
{
	uint8_t k1[VT_SEAL_KEY_BYTES], k2[VT_SEAL_KEY_BYTES];
	struct vt_seal_keys a, b, c;

	(void)state;
	vm_key(k1, 1);
	vm_key(k2, 2);
	assert_int_equal(vt_seal_derive(k1, &a), 0);
	assert_int_equal(vt_seal_derive(k1, &b), 0);
	assert_int_equal(vt_seal_derive(k2, &c), 0);
	/* Deterministic per VM key. */
	assert_memory_equal(&a, &b, sizeof(a));
	/* Distinct per subkey and per VM key. */
	assert_memory_not_equal(a.page_key, a.access_key, VT_SEAL_KEY_BYTES);
	assert_memory_not_equal(a.page_key, a.ns, VT_SEAL_NS_BYTES);
	assert_memory_not_equal(a.access_key, a.ns, VT_SEAL_NS_BYTES);
	assert_memory_not_equal(a.page_key, c.page_key, VT_SEAL_KEY_BYTES);
	assert_memory_not_equal(a.access_key, c.access_key, VT_SEAL_KEY_BYTES);
	assert_memory_not_equal(a.ns, c.ns, VT_SEAL_NS_BYTES);
	/* None of them is the VM key itself. */
	assert_memory_not_equal(a.page_key, k1, VT_SEAL_KEY_BYTES);
	assert_memory_not_equal(a.access_key, k1, VT_SEAL_KEY_BYTES);
}

#define PAGE 4096

static void test_page(void **state)
{
	uint8_t key[VT_SEAL_KEY_BYTES], plain[PAGE], out[PAGE];
	uint8_t blob[PAGE + VT_SEAL_PAGE_OVERHEAD], blob2[sizeof(blob)];
	struct vt_seal_keys k, other;
	size_t blen, blen2, olen;

	(void)state;
	vm_key(key, 3);
	assert_int_equal(vt_seal_derive(key, &k), 0);
	vm_key(key, 4);
	assert_int_equal(vt_seal_derive(key, &other), 0);
	for (int i = 0; i < PAGE; i++)
		plain[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(vt_seal_page(k.page_key, k.ns, 42, 7, plain, PAGE, blob, sizeof(blob),
				      &blen), 0);
	assert_int_equal(blen, PAGE + VT_SEAL_PAGE_OVERHEAD);
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 7, blob, blen, out, sizeof(out),
					   &olen), 0);
	assert_int_equal(olen, PAGE);
	assert_memory_equal(out, plain, PAGE);
	/* A fresh nonce each time: the same page seals differently. */
	assert_int_equal(vt_seal_page(k.page_key, k.ns, 42, 7, plain, PAGE, blob2, sizeof(blob2),
				      &blen2), 0);
	assert_memory_not_equal(blob, blob2, blen);
	/* Wrong page id, version, namespace, key. */
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 43, 7, blob, blen, out, sizeof(out),
					   &olen), -EBADMSG);
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 6, blob, blen, out, sizeof(out),
					   &olen), -EBADMSG);
	assert_int_equal(vt_seal_page_open(k.page_key, other.ns, 42, 7, blob, blen, out,
					   sizeof(out), &olen), -EBADMSG);
	assert_int_equal(vt_seal_page_open(other.page_key, k.ns, 42, 7, blob, blen, out,
					   sizeof(out), &olen), -EBADMSG);
	/* A flipped bit anywhere in the blob: nonce, ciphertext, tag. */
	for (size_t bit = 0; bit < blen * 8; bit++) {
		blob[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 7, blob, blen, out,
						   sizeof(out), &olen), -EBADMSG);
		blob[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* Truncated, and too short to hold the overhead. */
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 7, blob, blen - 1, out,
					   sizeof(out), &olen), -EBADMSG);
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 7, blob, VT_SEAL_PAGE_OVERHEAD - 1,
					   out, sizeof(out), &olen), -EBADMSG);
	/* Buffers too small. */
	assert_int_equal(vt_seal_page(k.page_key, k.ns, 42, 7, plain, PAGE, blob, PAGE, &blen2),
			 -ENOBUFS);
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 7, blob, blen, out, PAGE - 1,
					   &olen), -ENOBUFS);
	/* Still opens after all that. */
	assert_int_equal(vt_seal_page_open(k.page_key, k.ns, 42, 7, blob, blen, out, sizeof(out),
					   &olen), 0);
	assert_memory_equal(out, plain, PAGE);
}

static void test_tag(void **state)
{
	uint8_t key[VT_SEAL_KEY_BYTES], key2[VT_SEAL_KEY_BYTES], msg[200], tag[VT_SEAL_TAG_BYTES];

	(void)state;
	vm_key(key, 5);
	vm_key(key2, 6);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	vt_seal_tag(key, msg, sizeof(msg), tag);
	assert_true(vt_seal_tag_ok(key, msg, sizeof(msg), tag));
	assert_false(vt_seal_tag_ok(key2, msg, sizeof(msg), tag));
	assert_false(vt_seal_tag_ok(key, msg, sizeof(msg) - 1, tag));
	for (size_t bit = 0; bit < sizeof(msg) * 8; bit++) {
		msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_false(vt_seal_tag_ok(key, msg, sizeof(msg), tag));
		msg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	for (size_t bit = 0; bit < VT_SEAL_TAG_BYTES * 8; bit++) {
		tag[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_false(vt_seal_tag_ok(key, msg, sizeof(msg), tag));
		tag[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	assert_true(vt_seal_tag_ok(key, msg, sizeof(msg), tag));
}

static void test_box(void **state)
{
	struct vt_seal_server_key srv, other;
	uint8_t msg[52], box[52 + VT_SEAL_BOX_OVERHEAD], out[52];
	size_t olen;

	(void)state;
	assert_int_equal(vt_seal_init(), 0);
	/* Two key pairs made through the key file path below would do too; this is direct. */
	{
		g_autofree char *dir = g_dir_make_tmp("remote-seal-XXXXXX", NULL);
		g_autofree char *p1 = g_build_filename(dir, "k1", NULL);
		g_autofree char *p2 = g_build_filename(dir, "k2", NULL);

		assert_int_equal(vt_seal_server_key_create(p1, &srv, NULL, 0), 0);
		assert_int_equal(vt_seal_server_key_create(p2, &other, NULL, 0), 0);
		unlink(p1);
		unlink(p2);
		rmdir(dir);
	}
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(vt_seal_box(srv.pk, msg, sizeof(msg), box, sizeof(box)), 0);
	assert_int_equal(vt_seal_box_open(&srv, box, sizeof(box), out, sizeof(out), &olen), 0);
	assert_int_equal(olen, sizeof(msg));
	assert_memory_equal(out, msg, sizeof(msg));
	/* Another server's key, a flipped bit, truncation, too small a buffer. */
	assert_int_equal(vt_seal_box_open(&other, box, sizeof(box), out, sizeof(out), &olen),
			 -EBADMSG);
	for (size_t bit = 0; bit < sizeof(box) * 8; bit += 7) {
		box[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_equal(vt_seal_box_open(&srv, box, sizeof(box), out, sizeof(out), &olen),
				 -EBADMSG);
		box[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	assert_int_equal(vt_seal_box_open(&srv, box, sizeof(box) - 1, out, sizeof(out), &olen),
			 -EBADMSG);
	assert_int_equal(vt_seal_box_open(&srv, box, VT_SEAL_BOX_OVERHEAD - 1, out, sizeof(out),
					  &olen), -EBADMSG);
	assert_int_equal(vt_seal_box_open(&srv, box, sizeof(box), out, sizeof(out) - 1, &olen),
			 -ENOBUFS);
	assert_int_equal(vt_seal_box(srv.pk, msg, sizeof(msg), box, sizeof(box) - 1), -ENOBUFS);
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	unlink(path);
	assert_true(g_file_set_contents(path, data, (gssize)len, NULL));
	assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file(void **state)
{
	g_autofree char *dir = g_dir_make_tmp("remote-seal-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "server.key", NULL);
	g_autofree char *other = g_build_filename(dir, "other.key", NULL);
	g_autofree char *link = g_build_filename(dir, "link.key", NULL);
	struct vt_seal_server_key k, l, o;
	g_autofree char *data = NULL;
	char err[256];
	struct stat st;
	gsize len;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(vt_seal_server_key_create(path, &k, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, VT_SEAL_KEYFILE_BYTES);
	/* Never over an existing file. */
	assert_int_equal(vt_seal_server_key_create(path, &o, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, path));
	assert_int_equal(vt_seal_server_key_load(path, &l, err, sizeof(err)), 0);
	assert_memory_equal(&k, &l, sizeof(k));
	assert_true(g_file_get_contents(path, &data, &len, NULL));

	/* Mode wider than 0600. */
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(vt_seal_server_key_load(path, &l, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "0640"));
	assert_non_null(strstr(err, "0600"));
	assert_int_equal(chmod(path, 0604), 0);
	assert_int_equal(vt_seal_server_key_load(path, &l, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(vt_seal_server_key_load(path, &l, err, sizeof(err)), 0);

	/* Wrong sizes. */
	write_file(other, data, len - 1, 0600);
	assert_int_equal(vt_seal_server_key_load(other, &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, other));
	assert_non_null(strstr(err, "63 bytes"));
	assert_non_null(strstr(err, "exactly 64"));
	{
		char big[VT_SEAL_KEYFILE_BYTES + 1] = { 0 };

		memcpy(big, data, len);
		write_file(other, big, sizeof(big), 0600);
		assert_int_equal(vt_seal_server_key_load(other, &l, err, sizeof(err)), -EINVAL);
		write_file(other, big, 0, 0600);
		assert_int_equal(vt_seal_server_key_load(other, &l, err, sizeof(err)), -EINVAL);
	}
	/* Halves that do not belong together. */
	{
		char mixed[VT_SEAL_KEYFILE_BYTES];

		memcpy(mixed, data, sizeof(mixed));
		mixed[0] ^= 1;
		write_file(other, mixed, sizeof(mixed), 0600);
		assert_int_equal(vt_seal_server_key_load(other, &l, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "not the secret key's"));
	}
	/* A symlink, a directory, a missing file. */
	assert_int_equal(symlink(path, link), 0);
	assert_true(vt_seal_server_key_load(link, &l, err, sizeof(err)) < 0);
	assert_int_equal(vt_seal_server_key_load(dir, &l, err, sizeof(err)), -EINVAL);
	unlink(other);
	assert_int_equal(vt_seal_server_key_load(other, &l, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, other));

	unlink(link);
	unlink(path);
	rmdir(dir);
}

static void test_hex(void **state)
{
	uint8_t pk[VT_SEAL_PK_BYTES], back[VT_SEAL_PK_BYTES];
	char hex[VT_SEAL_PK_HEX_LEN + 1], bad[VT_SEAL_PK_HEX_LEN + 2];

	(void)state;
	for (int i = 0; i < VT_SEAL_PK_BYTES; i++)
		pk[i] = (uint8_t)(i * 9 + 0xf0);
	vt_seal_pk_hex(pk, hex);
	assert_int_equal(strlen(hex), VT_SEAL_PK_HEX_LEN);
	assert_int_equal(vt_seal_pk_parse(hex, back), 0);
	assert_memory_equal(pk, back, sizeof(pk));
	/* Upper case is the same key. */
	for (char *c = hex; *c; c++)
		*c = (char)g_ascii_toupper(*c);
	assert_int_equal(vt_seal_pk_parse(hex, back), 0);
	assert_memory_equal(pk, back, sizeof(pk));
	/* Short, long, a non-hex digit anywhere, empty, NULL; nothing written. */
	memset(back, 0x55, sizeof(back));
	hex[63] = '\0';
	assert_int_equal(vt_seal_pk_parse(hex, back), -EINVAL);
	vt_seal_pk_hex(pk, hex);
	snprintf(bad, sizeof(bad), "%s0", hex);
	assert_int_equal(vt_seal_pk_parse(bad, back), -EINVAL);
	for (int i = 0; i < VT_SEAL_PK_HEX_LEN; i++) {
		snprintf(bad, sizeof(bad), "%s", hex);
		bad[i] = i % 2 ? 'g' : ' ';
		assert_int_equal(vt_seal_pk_parse(bad, back), -EINVAL);
	}
	assert_int_equal(vt_seal_pk_parse("", back), -EINVAL);
	assert_int_equal(vt_seal_pk_parse(NULL, back), -EINVAL);
	for (int i = 0; i < VT_SEAL_PK_BYTES; i++)
		assert_int_equal(back[i], 0x55);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kdf),
		cmocka_unit_test(test_page),
		cmocka_unit_test(test_tag),
		cmocka_unit_test(test_box),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_hex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
