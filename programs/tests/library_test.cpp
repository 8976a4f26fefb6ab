// Every program of the library: it assembles and verifies with the default
// limits (what rofd does before a load), it says what it is in a header
// comment, and its disassembly assembles back to the same image.
#include <filesystem>
#include <fstream>

#include "runner.h"

namespace fs = std::filesystem;
using rof::programs::test::load;

namespace library_test {
namespace {

std::vector<std::string> library() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(ROF_PROGRAMS_DIR))
        if (e.path().extension() == ".rofs")
            names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

class Library : public ::testing::TestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Library);

TEST_P(Library, AssemblesVerifiesAndRoundTrips) {
    const auto l = load(GetParam());
    EXPECT_GT(l.budget, 0u);
    const std::string text = rof::prog::disassemble(l.prog);
    auto again = rof::prog::assemble(text, "disassembly");
    ASSERT_TRUE(again.ok()) << again.error_text();
    EXPECT_EQ(again.program->encode(), l.prog.encode());
}

TEST_P(Library, StartsWithAHeaderComment) {
    std::ifstream in(std::string(ROF_PROGRAMS_DIR) + "/" + GetParam() + ".rofs");
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first.rfind("; ", 0), 0u) << GetParam() << ".rofs: first line: " << first;
}

INSTANTIATE_TEST_SUITE_P(Programs, Library, ::testing::ValuesIn(library()), [](const auto& info) {
    std::string n = info.param;
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
});

}  // namespace
}  // namespace library_test
