// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The tests' vtier_tdp.ko (fake_tdp.h): ioctl() wrapped (-Wl,--wrap=ioctl),
 * answering include/vtier/tdp.h's contract for one VM.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <sys/ioctl.h>
#include <vtier/tdp.h>

#include "fake_tdp.h"
#include "tdp_source.h"

bool fake_active;
bool fake_v1;
uint64_t fake_features;
uint32_t last_flags;
unsigned long last_req;
uint64_t fake_cookies[8];
unsigned int fake_calls;
unsigned int fake_flushes;

static uint64_t fake_cookie(void)
{
	unsigned int i = fake_calls < G_N_ELEMENTS(fake_cookies) ? fake_calls :
			 G_N_ELEMENTS(fake_cookies) - 1;

	fake_calls++;
	return fake_cookies[i];
}

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!fake_active)
		return __real_ioctl(fd, req, arg);
	last_req = req;
	if (fake_v1 && (req == VTIER_TDP_INFO || req == VTIER_TDP_SAMPLE || req == VTIER_TDP_SCAN)) {
		errno = ENOTTY;
		return -1;
	}
	if (!fake_v1 && (req == VTIER_TDP_INFO_V1 || req == VTIER_TDP_SAMPLE_V1 ||
			 req == VTIER_TDP_SCAN_V1)) {
		errno = ENOTTY;
		return -1;
	}
	if (fake_v1 && *(uint32_t *)arg != 1) {
		errno = EPROTO;
		return -1;
	}
	switch (req) {
	case VTIER_TDP_ATTACH:
		return 0;
	case VTIER_TDP_INFO:
	case VTIER_TDP_INFO_V1: {
		struct vtier_tdp_info *info = arg;

		info->format = VTIER_TDP_FORMAT_NPT;
		info->levels = 4;
		info->features = fake_features;
		info->leaves[0] = 476;
		info->leaves[1] = 172;
		return 0;
	}
	case VTIER_TDP_SAMPLE:
	case VTIER_TDP_SAMPLE_V1: {
		struct vtier_tdp_sample *s = arg;
		struct vtier_tdp_probe *p = (struct vtier_tdp_probe *)(uintptr_t)s->probes;
		bool tested = false;

		last_flags = s->flags;
		if (req == VTIER_TDP_SAMPLE) {
			s->root_cookie = fake_cookie();
			s->flush_ns = s->flags & VTIER_TDP_FLUSH_TLB ? 1000 : 0;
			fake_flushes += !!(s->flags & VTIER_TDP_FLUSH_TLB);
		}
		for (uint32_t i = 0; i < s->n; i++) {
			bool under = p[i].gpa >= HUGE_GPA && p[i].gpa < 2 * HUGE_GPA && p[i].level < 1;

			if (!under)
				p[i].result = p[i].gpa == 0x401000 ? VTIER_TDP_YOUNG : VTIER_TDP_OLD;
			else if (!(s->flags & VTIER_TDP_HUGE_LEAVES))
				p[i].result = VTIER_TDP_ABSENT;
			else
				p[i].result = VTIER_TDP_YOUNG;	/* one answer per call */
			if (under && (s->flags & VTIER_TDP_HUGE_LEAVES) && !tested) {
				s->checks[1]++;
				tested = true;
			}
		}
		return 0;
	}
	case VTIER_TDP_SCAN:
	case VTIER_TDP_SCAN_V1: {
		struct vtier_tdp_scan *s = arg;
		uint64_t *young = (uint64_t *)(uintptr_t)s->young;

		last_flags = s->flags;
		if (req == VTIER_TDP_SCAN) {
			s->root_cookie = fake_cookie();
			s->flush_ns = s->flags & VTIER_TDP_FLUSH_TLB ? 1000 : 0;
			fake_flushes += !!(s->flags & VTIER_TDP_FLUSH_TLB);
		}
		s->nr_young = 0;
		if ((s->flags & VTIER_TDP_HUGE_LEAVES) && s->level < 1 &&
		    s->start < 2 * HUGE_GPA && s->end > HUGE_GPA)
			young[s->nr_young++] = HUGE_GPA | 1;
		if (s->start <= 0x401000 && s->end > 0x401000)
			young[s->nr_young++] = 0x401000 | 0;
		s->next = s->end;
		return 0;
	}
	default:
		errno = ENOTTY;
		return -1;
	}
}

struct vt_access_source *fake_source(uint64_t features)
{
	g_autoptr(GError) error = NULL;
	struct vt_access_source *src;

	fake_calls = 0;
	fake_flushes = 0;
	fake_features = features;
	fake_active = true;
	/* the source opens this and sends its ioctls to the fake module */
	setenv("VTIER_TDP_DEVICE", "/dev/null", 1);
	src = vt_tdp_new(0, &error);
	unsetenv("VTIER_TDP_DEVICE");
	return src;
}
