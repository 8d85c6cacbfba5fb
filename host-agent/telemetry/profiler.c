// SPDX-License-Identifier: GPL-2.0-or-later
/* The profiler registry: name -> ops, and the calls every caller makes. */
#include <errno.h>
#include <string.h>

#include "profiler.h"

G_DEFINE_QUARK(vt-profiler-error-quark, vt_profiler_error)

static const struct vt_profiler_ops *const registry[] = {
	&vt_telescope_bounded_ops,
	&vt_telescope_flex_ops,
	&vt_scan_ops,
	&vt_damon_like_ops,
	&vt_linear_ops,
};

void vt_profiler_attrs_default(struct vt_profiler_attrs *attrs)
{
	*attrs = (struct vt_profiler_attrs){
		.sample_us = 5000,
		.window_us = 200000,
		.min_regions = 10,
		.max_regions = 1000,
		.merge_threshold = 0.1,
		.seed = 1,
	};
	attrs->flex_error[VT_LEVEL_PUD] = 0.15;
	attrs->flex_error[VT_LEVEL_PMD] = 0.25;
}

const char *const *vt_profiler_names(void)
{
	static const char *names[G_N_ELEMENTS(registry) + 1];

	for (unsigned int i = 0; i < G_N_ELEMENTS(registry); i++)
		names[i] = registry[i]->name;
	return names;
}

const struct vt_profiler_ops *vt_profiler_lookup(const char *name)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(registry); i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

struct vt_profiler *vt_profiler_new(const char *name, struct vt_access_source *src,
				    const struct vt_profiler_attrs *attrs, GError **error)
{
	const struct vt_profiler_ops *ops = vt_profiler_lookup(name);
	struct vt_profiler *p;
	int ret;

	if (!ops) {
		g_autofree char *list = g_strjoinv(", ", (char **)vt_profiler_names());

		g_set_error(error, VT_PROFILER_ERROR, EINVAL, "unknown profiler '%s' (known: %s)",
			    name, list);
		return NULL;
	}
	if (!attrs->sample_us || attrs->window_us < attrs->sample_us ||
	    !attrs->min_regions || attrs->max_regions < attrs->min_regions) {
		g_set_error(error, VT_PROFILER_ERROR, EINVAL,
			    "%s: need 0 < sample_us <= window_us and 0 < min_regions <= max_regions",
			    name);
		return NULL;
	}
	p = g_new0(struct vt_profiler, 1);
	p->ops = ops;
	p->src = src;
	p->attrs = *attrs;
	p->rng = g_rand_new_with_seed(attrs->seed);
	ret = ops->init ? ops->init(p) : 0;
	if (ret < 0) {
		g_set_error(error, VT_PROFILER_ERROR, -ret, "%s: %s", name, g_strerror(-ret));
		vt_profiler_free(p);
		return NULL;
	}
	return p;
}

void vt_profiler_free(struct vt_profiler *p)
{
	if (!p)
		return;
	if (p->ops->destroy)
		p->ops->destroy(p);
	g_rand_free(p->rng);
	g_free(p);
}

int vt_profiler_start(struct vt_profiler *p)
{
	int n = vt_source_mapped(p->src, p->ranges, G_N_ELEMENTS(p->ranges));

	if (n < 0)
		return n;
	if ((size_t)n > G_N_ELEMENTS(p->ranges))
		return -E2BIG;
	p->nr_ranges = (size_t)n;
	return p->ops->start(p);
}

int vt_profiler_sample(struct vt_profiler *p)
{
	int ret = p->ops->sample ? p->ops->sample(p) : 0;

	p->samples++;
	return ret;
}

int vt_profiler_window(struct vt_profiler *p, struct vt_snapshot *snap)
{
	int ret;

	g_array_set_size(snap->regions, 0);
	snap->window = p->windows;
	ret = p->ops->window(p, snap);
	p->windows++;
	p->samples = 0;
	return ret;
}

void vt_snapshot_init(struct vt_snapshot *snap)
{
	snap->regions = g_array_new(FALSE, FALSE, sizeof(struct vt_snapshot_region));
	snap->window = 0;
}

void vt_snapshot_clear(struct vt_snapshot *snap)
{
	if (snap->regions)
		g_array_free(snap->regions, TRUE);
	snap->regions = NULL;
}
