// SPDX-License-Identifier: GPL-2.0-or-later
/* Token buckets for peer-triggered log lines: see ratelimit.h. */
#include "ratelimit.h"

#include <string.h>

#include <glib.h>

#define NSEC_PER_SEC 1000000000ull

void vt_ratelimit_init(struct vt_ratelimit *rl, uint32_t burst, uint32_t per_sec,
		       uint64_t now_ns)
{
	uint64_t cost = NSEC_PER_SEC / (per_sec ? per_sec : 1);

	*rl = (struct vt_ratelimit){
		.cost_ns = cost ? cost : 1,
		.max_credit_ns = (uint64_t)(burst ? burst : 1) * (cost ? cost : 1),
		.last_ns = now_ns,
	};
	rl->credit_ns = rl->max_credit_ns;
}

/* Credit earned up to @now_ns (a clock going back earns nothing). */
static void refill(struct vt_ratelimit *rl, uint64_t now_ns)
{
	if (now_ns > rl->last_ns) {
		uint64_t room = rl->max_credit_ns - rl->credit_ns;

		rl->credit_ns += MIN(now_ns - rl->last_ns, room);
		rl->last_ns = now_ns;
	}
}

bool vt_ratelimit_take(struct vt_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed)
{
	refill(rl, now_ns);
	if (rl->credit_ns < rl->cost_ns) {
		rl->suppressed++;
		return false;
	}
	rl->credit_ns -= rl->cost_ns;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}

/* Full again and nothing held back: forgetting it changes nothing. */
static bool idle(struct vt_ratelimit *rl, uint64_t now_ns)
{
	refill(rl, now_ns);
	return rl->credit_ns == rl->max_credit_ns && !rl->suppressed;
}

struct key {
	const void *site;
	char *subject;		/* "" for none */
	struct vt_ratelimit rl;
};

struct vt_ratelimits {
	GMutex lock;
	GHashTable *keys;	/* struct key * (key and value) */
	struct vt_ratelimit shared;	/* new keys while every slot is busy */
	uint32_t burst, per_sec;
	unsigned int max_keys;
	uint64_t swept_ns;	/* the last look for idle keys: one a second at most */
};

static guint key_hash(gconstpointer p)
{
	const struct key *k = p;

	return g_direct_hash(k->site) * 31 + g_str_hash(k->subject);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct key *x = a, *y = b;

	return x->site == y->site && strcmp(x->subject, y->subject) == 0;
}

static void key_free(gpointer p)
{
	struct key *k = p;

	g_free(k->subject);
	g_free(k);
}

struct vt_ratelimits *vt_ratelimits_new(uint32_t burst, uint32_t per_sec, unsigned int max_keys)
{
	struct vt_ratelimits *s = g_new0(struct vt_ratelimits, 1);

	g_mutex_init(&s->lock);
	s->keys = g_hash_table_new_full(key_hash, key_equal, key_free, NULL);
	s->burst = burst ? burst : 10;
	s->per_sec = per_sec ? per_sec : 1;
	s->max_keys = max_keys ? max_keys : 1024;
	vt_ratelimit_init(&s->shared, s->burst, s->per_sec, 0);
	return s;
}

void vt_ratelimits_free(struct vt_ratelimits *s)
{
	if (!s)
		return;
	g_hash_table_destroy(s->keys);
	g_mutex_clear(&s->lock);
	g_free(s);
}

static gboolean drop_idle(gpointer key, gpointer value, gpointer now)
{
	(void)value;
	return idle(&((struct key *)key)->rl, *(const uint64_t *)now);
}

bool vt_ratelimits_take(struct vt_ratelimits *s, const void *site, const char *subject,
			uint64_t now_ns, uint64_t *suppressed)
{
	struct key probe = { .site = site, .subject = (char *)(subject ? subject : "") };
	struct vt_ratelimit *rl;
	struct key *k;
	bool ok;

	g_mutex_lock(&s->lock);
	k = g_hash_table_lookup(s->keys, &probe);
	if (!k && g_hash_table_size(s->keys) >= s->max_keys &&
	    (now_ns - s->swept_ns >= NSEC_PER_SEC || now_ns < s->swept_ns)) {
		s->swept_ns = now_ns;
		g_hash_table_foreach_remove(s->keys, drop_idle, &now_ns);
	}
	if (!k && g_hash_table_size(s->keys) < s->max_keys) {
		k = g_new0(struct key, 1);
		k->site = site;
		k->subject = g_strdup(probe.subject);
		vt_ratelimit_init(&k->rl, s->burst, s->per_sec, now_ns);
		g_hash_table_add(s->keys, k);
	}
	rl = k ? &k->rl : &s->shared;
	ok = vt_ratelimit_take(rl, now_ns, suppressed);
	g_mutex_unlock(&s->lock);
	return ok;
}
