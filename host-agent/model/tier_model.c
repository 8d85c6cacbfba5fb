// SPDX-License-Identifier: GPL-2.0-or-later
/* The tier model: price, latency and compression ratio of each of a VM's tiers. */
#include <string.h>

#include "tier_model.h"

/*
 * Priors, until a tier has VT_MODEL_MIN_FAULTS faults or VT_MODEL_MIN_BYTES
 * in it (docs/tco.md): ratios as docs/ctier.md measured on guest pages (lz4
 * ~1.8:1), zbud never beyond 2:1; latencies from the store fault p50 on this
 * host (9.7-11.8 us, docs/vtierd.md), slower codecs and the file medium more.
 */
double vt_tier_model_prior_ratio(const struct vt_ctier_spec *spec)
{
	double r = spec->codec == VT_CODEC_LZ4 ? 1.8 : 2.5;

	/* a remote tier keeps two copies: a stored GiB takes twice the servers' bytes
	 * (copies = 1 with a local copy: vt_tier_model_build() counts one) */
	if (spec->medium == VT_MEDIUM_REMOTE)
		return r / 2;
	return spec->pool == VT_POOL_ZBUD ? MIN(r, 2.0) : r;
}

double vt_tier_model_prior_latency_ns(const struct vt_ctier_spec *spec)
{
	double ns = spec->codec == VT_CODEC_LZ4 ? 10000 : spec->codec == VT_CODEC_ZSTD ? 20000 : 40000;

	/* a remote fetch: a round trip on a UDP socket across veth, p50 ~ 50-150 us (docs/remote.md) */
	return spec->medium == VT_MEDIUM_FILE || spec->medium == VT_MEDIUM_REMOTE ? ns + 100000 : ns;
}

static double medium_price(const struct vt_tiers *numa, const struct vt_ctier_spec *spec)
{
	int t;

	if (spec->medium == VT_MEDIUM_FILE)
		return VT_PRICE_FILE_USD_GIB;
	/* a memory server's DRAM, per copy (the ratio counts the copies): as this host's fastest */
	t = spec->medium == VT_MEDIUM_REMOTE ? 0 : vt_tiers_of_node(numa, spec->node);
	/* a node in no tier: priced as the fastest (the dearest) tier, never as free memory */
	return numa->tier[t >= 0 ? t : 0].price_usd_gib;
}

/* Guest bytes over the bytes they take, once enough is stored; else @prior. */
static double ratio_of(uint64_t stored, uint64_t taken, double prior, const char **from)
{
	if (stored < VT_MODEL_MIN_BYTES) {
		*from = "prior";
		return prior;
	}
	*from = "measured";
	/* all zero or same-filled pages take no pool space: cap what that means */
	return taken ? CLAMP((double)stored / (double)taken, 1.0, 64.0) : 64.0;
}

static double ctier_medium_price(const struct vt_tiers *numa, const struct vt_ctier_spec *specs,
				 const double *ctier_price, unsigned int i)
{
	return ctier_price && ctier_price[i] >= 0 ? ctier_price[i] : medium_price(numa, &specs[i]);
}

void vt_tier_model_build(struct vt_tier_model *m, const struct vt_tiers *numa,
			 const struct vt_ctier_spec *specs, const double *ctier_price,
			 const int *local_copy, unsigned int nr_ctier,
			 const struct vt_ctier_measured *meas, bool zswap)
{
	memset(m, 0, sizeof(*m));
	for (unsigned int i = 0; i < numa->nr && m->nr < VT_MAX_TIERS; i++) {
		struct vt_tier_model_entry *e = &m->t[m->nr++];

		g_strlcpy(e->name, numa->tier[i].name, sizeof(e->name));
		e->medium_usd_per_gib = e->usd_per_gib = numa->tier[i].price_usd_gib;
		e->ratio = 1;
		e->ratio_from = "none";
		e->latency_ns = MAX(numa->tier[i].latency_ns, 1u);
		e->latency_from = strcmp(numa->tier[i].source, "config") == 0 ? "config" :
				  "hmat-or-slit";
	}
	m->nr_numa = m->nr;
	if (zswap && m->nr < VT_MAX_TIERS) {
		struct vt_tier_model_entry *e = &m->t[m->nr++];
		struct vt_ctier_spec lz = { .codec = VT_CODEC_LZ4, .pool = VT_POOL_ZSMALLOC };

		/* the kernel's pool: in DRAM, its ratio and faults are not ours to see */
		g_strlcpy(e->name, "zswap", sizeof(e->name));
		e->compressed = true;
		e->medium_usd_per_gib = numa->nr ? numa->tier[0].price_usd_gib : 0;
		e->ratio = vt_tier_model_prior_ratio(&lz);
		e->ratio_from = "prior";
		e->latency_ns = vt_tier_model_prior_latency_ns(&lz);
		e->latency_from = "prior";
		e->usd_per_gib = e->medium_usd_per_gib / e->ratio;
		return;
	}
	for (unsigned int i = 0; i < nr_ctier && m->nr < VT_MAX_TIERS; i++) {
		struct vt_tier_model_entry *e = &m->t[m->nr++];
		const struct vt_ctier_measured *x = meas ? &meas[i] : NULL;
		int lc = local_copy && specs[i].medium == VT_MEDIUM_REMOTE ? local_copy[i] : -1;
		/* copies = 1: one copy on the servers (the prior counts two) */
		double prior = vt_tier_model_prior_ratio(&specs[i]) *
			       (lc >= 0 && (unsigned int)lc < nr_ctier ? 2 : 1);
		const char *lc_from;

		g_strlcpy(e->name, specs[i].name, sizeof(e->name));
		e->compressed = true;
		e->medium_usd_per_gib = ctier_medium_price(numa, specs, ctier_price, i);
		e->ratio = ratio_of(x ? x->stored_bytes : 0, x ? x->compressed_bytes : 0, prior,
				    &e->ratio_from);
		if (x && x->faults >= VT_MODEL_MIN_FAULTS && x->fault_p50_ns) {
			e->latency_ns = (double)x->fault_p50_ns;
			e->latency_from = "measured";
		} else {
			e->latency_ns = vt_tier_model_prior_latency_ns(&specs[i]);
			e->latency_from = "prior";
		}
		e->usd_per_gib = e->medium_usd_per_gib / e->ratio;
		if (lc >= 0 && (unsigned int)lc < nr_ctier) {
			/* the local copy: its tier's medium over its own ratio */
			e->local_copy_ratio = ratio_of(x ? x->stored_bytes : 0,
						       x ? x->local_copy_bytes : 0,
						       vt_tier_model_prior_ratio(&specs[lc]), &lc_from);
			e->local_copy_usd_per_gib = ctier_medium_price(numa, specs, ctier_price,
								       (unsigned int)lc) /
						    e->local_copy_ratio;
			e->usd_per_gib += e->local_copy_usd_per_gib;
		}
		e->stored_bytes = x ? x->stored_bytes : 0;
		e->faults = x ? x->faults : 0;
	}
}
