// Writes the instruction slots of each corpus/*.rofs as a seed for the
// verifier and executor fuzzers (their input is raw slots, see
// fuzz_env.h).  Usage: rof_fuzz_seeds OUTDIR FILE.rofs...
#include <cstdio>
#include <fstream>
#include <sstream>

#include "fuzz_env.h"
#include "rof/prog/asm.h"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s OUTDIR FILE.rofs...\n", argv[0]);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        std::ifstream in(argv[i]);
        std::stringstream ss;
        ss << in.rdbuf();
        auto a = rof::prog::assemble(ss.str(), argv[i]);
        if (!a.ok()) {
            std::fprintf(stderr, "%s", a.error_text().c_str());
            return 1;
        }
        std::string name = argv[i];
        name = name.substr(name.rfind('/') + 1);
        std::ofstream out(std::string(argv[1]) + "/" + name + ".bin", std::ios::binary);
        out.write(reinterpret_cast<const char*>(a.program->insns.data()),
                  static_cast<std::streamsize>(a.program->insns.size() * 8));
    }
    return 0;
}
