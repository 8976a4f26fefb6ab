// SPDX-License-Identifier: MIT
// rofctl's one output path, after iproute2 rdma's print_* helpers: every
// command prints each value once, through these calls, and gets text or
// JSON from the same code.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rofctl {

// Where a value goes: both outputs, JSON only, or text only (iproute2's
// PRINT_ANY, PRINT_JSON, PRINT_FP).
enum class To { any, json, text };

class Printer {
  public:
    Printer(std::ostream& out, std::ostream& err, bool json, bool pretty);

    bool json() const noexcept { return json_; }

    // Containers exist in JSON only; @key is ignored inside arrays and for
    // the outermost object.
    void open_object(std::string_view key = {});
    void close_object();
    void open_array(std::string_view key);
    void close_array();

    // @text_fmt is the text output with "{}" standing for the value;
    // "{:<N}" and "{:>N}" pad it to N columns, left or right aligned.
    void string(To to, std::string_view key, std::string_view text_fmt, std::string_view value);
    void uint(To to, std::string_view key, std::string_view text_fmt, std::uint64_t value);

    // Text output only: a literal, and the end of a line.
    void text(std::string_view literal);
    void newline();

    // Ends the output: in JSON mode, writes the document.
    void finish();

    // A failed command: "rofctl: MSG" on stderr, or {"error": "MSG"} on
    // stdout in JSON mode (and nothing else there).
    void error(std::string_view msg);

  private:
    nlohmann::ordered_json* add(std::string_view key, nlohmann::ordered_json value);

    std::ostream& out_;
    std::ostream& err_;
    bool json_;
    bool pretty_;
    nlohmann::ordered_json root_;
    std::vector<nlohmann::ordered_json*> stack_;
};

// "{}" / "{:<N}" / "{:>N}" substitution used for the text output.
std::string format_text(std::string_view fmt, std::string_view value);

// "3d 4h 5m 6s", leading zero units left out; "0s" for zero.
std::string format_uptime(std::uint64_t seconds);

}  // namespace rofctl
