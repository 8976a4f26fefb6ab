// SPDX-License-Identifier: MIT
// Internal to librof: what the C API's opaque handles (rof.h) hold.
#pragma once

#include <string>
#include <vector>

#include "rof.h"
#include "rof/client.h"
#include "rof/session.h"

struct rof_client {
    rof::Client client;
};

struct rof_session {
    rof::Session session;
    // rof_poll()'s scratch: the C++ completions, and the messages of the
    // failed ones as C strings (rof_completion.error points into them
    // until the next poll).  Both keep their capacity: a poll allocates
    // nothing once they have grown, unless an operation failed.
    std::vector<rof::Completion> completions;
    std::vector<std::string> errors;
};
