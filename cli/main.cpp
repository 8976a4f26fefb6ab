// SPDX-License-Identifier: MIT
// rofctl: administer the rof RDMA offload service.
#include <iostream>

#include "rofctl.h"

int main(int argc, char** argv) {
    return rofctl::run(argc, argv, std::cout, std::cerr);
}
