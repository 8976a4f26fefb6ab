// SPDX-License-Identifier: MIT
#pragma once

#include "print.h"
#include "status_model.h"

namespace rofctl {

// `rofctl status`: the module, the daemon, and a table of devices and ports.
void print_status(Printer& p, const rof::Status& s);

}  // namespace rofctl
