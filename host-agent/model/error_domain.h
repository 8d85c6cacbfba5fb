/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The GError domain of vtierd's libraries from model/ up (codes are errno values). */
#ifndef VTIER_MODEL_ERROR_DOMAIN_H
#define VTIER_MODEL_ERROR_DOMAIN_H

#include <glib.h>

#define VT_CORE_ERROR (vt_core_error_quark())
GQuark vt_core_error_quark(void);

#endif
