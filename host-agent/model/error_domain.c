// SPDX-License-Identifier: GPL-2.0-or-later
#include "error_domain.h"

G_DEFINE_QUARK(vt-core-error-quark, vt_core_error)
