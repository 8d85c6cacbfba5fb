/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Prometheus text format (0.0.4) as vtierd writes it, for the writers
 * of the VM families (metrics.c) and the host's (metrics_host.c): one sample
 * line with its labels escaped, and reading numbers and members out of the
 * control socket's JSON objects (absent: 0 or "", never an error).
 */
#ifndef VTIER_DAEMON_METRICS_TEXT_H
#define VTIER_DAEMON_METRICS_TEXT_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>
#include <json-glib/json-glib.h>

/* One VM's figures: its stats and report objects as vtierctl gets them (metrics.h). */
struct vt_metrics_vm {
	const char *vm;		/* vtierd's name */
	const char *domain;	/* libvirt's name, or @vm */
	const char *uuid;	/* the domain's uuid, or "" */
	uint64_t ram_bytes;	/* guest RAM, as discovery found it */
	JsonObject *stats;
	JsonObject *report;
};

/*
 * name{domain="",uuid=""[,key="value"]...} value: @v's labels when @v is not
 * NULL, then the key, value pairs of @..., NULL-ended.
 */
void vt_prom_sample(GString *out, const char *name, const struct vt_metrics_vm *v, double value,
		    ...) G_GNUC_NULL_TERMINATED;
/* A JSON number (integer or not) into @out; false when @n is none. */
bool vt_prom_number(JsonNode *n, double *out);
JsonArray *vt_prom_array(JsonObject *o, const char *name);
JsonObject *vt_prom_object(JsonObject *o, const char *name);
double vt_prom_num(JsonObject *o, const char *name);
const char *vt_prom_str(JsonObject *o, const char *name);

#endif
