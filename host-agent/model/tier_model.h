/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tier model of one VM: for each of its tiers (NUMA tiers fastest first,
 * then its compressed tiers) what a GiB of guest data costs there, how long
 * an access takes, and for a compressed tier the ratio of the data really in
 * it. Prices come from the price table (model/tiers.c for nodes, the
 * [ctier.NAME] price_usd_per_gib or the medium's price for compressed
 * tiers); latencies from HMAT for nodes and, for compressed tiers, the fault
 * p50 the movers measured, with a prior until there are enough faults.
 * Built by the VM's worker from figures already gathered (docs/tco.md).
 */
#ifndef VTIER_CORE_TIER_MODEL_H
#define VTIER_CORE_TIER_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctier.h"
#include "tiers.h"

/* Measured a compressed tier's latency only after this many faults served from it. */
#define VT_MODEL_MIN_FAULTS 32
/* ... and its ratio only once this many guest bytes are in it. */
#define VT_MODEL_MIN_BYTES (1ULL << 20)
/* The default price of the file medium (an SSD), USD per GiB (docs/tco.md). */
#define VT_PRICE_FILE_USD_GIB 0.10

/* What the movers measured of one compressed tier, summed over the VM's backends. */
struct vt_ctier_measured {
	uint64_t stored_bytes;		/* guest bytes in it (pages x page size) */
	uint64_t compressed_bytes;	/* pool + metadata bytes they take */
	uint64_t faults;		/* store faults served from it */
	uint64_t fault_p50_ns;		/* 0: none */
	uint64_t local_copy_bytes;	/* a remote tier's local copies: pool + index bytes */
};

struct vt_tier_model_entry {
	char name[32];
	bool compressed;
	double medium_usd_per_gib;	/* the medium's price per GiB */
	double ratio;			/* guest bytes / bytes taken (1 for NUMA tiers) */
	double usd_per_gib;		/* per GiB of guest data: medium / ratio (+ local copy) */
	/* a remote tier with copies = 1: its local copy's share of usd_per_gib (0: none) */
	double local_copy_usd_per_gib;
	double local_copy_ratio;	/* guest bytes / the local copies' bytes */
	double latency_ns;		/* per access (NUMA), per fault (compressed) */
	const char *ratio_from;		/* "measured", "prior", "none" (NUMA) */
	const char *latency_from;	/* "hmat-or-slit" / "config", "measured", "prior" */
	uint64_t stored_bytes;		/* compressed: measured; NUMA: 0 (see the residency) */
	uint64_t faults;
};

struct vt_tier_model {
	unsigned int nr;
	unsigned int nr_numa;
	struct vt_tier_model_entry t[VT_MAX_TIERS];
};

/*
 * NUMA tiers from @numa; then @nr_ctier compressed tiers @specs with their
 * configured prices @ctier_price (< 0: the medium's: the NUMA tier of its
 * node, or VT_PRICE_FILE_USD_GIB for a file) and measurements @meas (NULL:
 * none yet). @zswap: one compressed tier, the host's zswap (pool in DRAM).
 * @local_copy (NULL: none): per compressed tier, the index in @specs of the
 * tier a remote tier keeps its local copies in (copies = 1), or -1: such a
 * tier's ratio counts one server copy, and the local copy is priced as that
 * tier's medium over its own ratio (measured from meas' local_copy_bytes,
 * or the local tier's prior), added to usd_per_gib.
 */
void vt_tier_model_build(struct vt_tier_model *m, const struct vt_tiers *numa,
			 const struct vt_ctier_spec *specs, const double *ctier_price,
			 const int *local_copy, unsigned int nr_ctier,
			 const struct vt_ctier_measured *meas, bool zswap);
/* The prior of a compressed tier before it has enough samples. */
double vt_tier_model_prior_ratio(const struct vt_ctier_spec *spec);
double vt_tier_model_prior_latency_ns(const struct vt_ctier_spec *spec);

#endif
