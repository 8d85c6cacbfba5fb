/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vtierd's figures in Prometheus' text exposition format (version 0.0.4;
 * docs/libvirt.md, "Metrics"): names vtier_*, base units (bytes, seconds,
 * ratios), _total counters, every VM's samples labelled {domain, uuid} as
 * libvirt-exporter does (domain: the libvirt domain's name, or vtierd's VM
 * name; uuid: "" for a VM that is not a libvirt domain). The figures are
 * the control socket's (stats and report objects, docs/abi-control.md): one
 * source for vtierctl and Prometheus.
 */
#ifndef VTIER_CORE_METRICS_H
#define VTIER_CORE_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <json-glib/json-glib.h>

#include "metrics_host.h"
#include "metrics_text.h"

struct vt_daemon;

struct vt_metrics_daemon {
	bool libvirt;		/* attach by domain is on ... */
	bool libvirt_connected;	/* ... and connected */
	const struct vt_metrics_host *host;	/* the vtier_host_* families; NULL: none */
};

/* The exposition text (g_free it). Families in a fixed order, VMs in @vms' order. */
char *vt_metrics_write(const struct vt_metrics_daemon *dm, const struct vt_metrics_vm *vms,
		       unsigned int n);
/* On the main loop: every attached VM's figures, sorted by name, as text. */
char *vt_metrics_collect(struct vt_daemon *d);

#endif
