// SPDX-License-Identifier: MIT
#include "print.h"

#include <charconv>
#include <stdexcept>

namespace rofctl {
namespace {

std::string dump(const nlohmann::ordered_json& doc, bool pretty) {
    // Names come from the kernel and messages from the daemon: never let a
    // stray byte that is not UTF-8 turn into an exception here.
    return doc.dump(pretty ? 2 : -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

std::string format_text(std::string_view fmt, std::string_view value) {
    const auto open = fmt.find('{');
    const auto close = open == std::string_view::npos ? open : fmt.find('}', open);

    if (close == std::string_view::npos) {
        return std::string(fmt);
    }

    const std::string_view spec = fmt.substr(open + 1, close - open - 1);
    std::string field(value);
    if (spec.size() > 2 && spec[0] == ':' && (spec[1] == '<' || spec[1] == '>')) {
        std::size_t width = 0;
        const auto digits = spec.substr(2);
        std::from_chars(digits.data(), digits.data() + digits.size(), width);
        if (field.size() < width) {
            const std::string pad(width - field.size(), ' ');
            field = spec[1] == '<' ? field + pad : pad + field;
        }
    }
    return std::string(fmt.substr(0, open)) + field + std::string(fmt.substr(close + 1));
}

std::string format_uptime(std::uint64_t s) {
    const std::uint64_t parts[] = {s / 86400, s / 3600 % 24, s / 60 % 60, s % 60};
    const char units[] = {'d', 'h', 'm', 's'};
    std::string out;

    for (int i = 0; i < 4; i++) {
        if (out.empty() && parts[i] == 0 && i < 3) {
            continue;
        }
        if (!out.empty()) {
            out += ' ';
        }
        out += std::to_string(parts[i]) + units[i];
    }
    return out;
}

Printer::Printer(std::ostream& out, std::ostream& err, bool json, bool pretty)
    : out_(out),
      err_(err),
      json_(json || pretty),
      pretty_(pretty),
      root_(nlohmann::ordered_json::object()) {
    stack_.push_back(&root_);
}

nlohmann::ordered_json* Printer::add(std::string_view key, nlohmann::ordered_json value) {
    nlohmann::ordered_json& top = *stack_.back();

    if (top.is_array()) {
        top.push_back(std::move(value));
        return &top.back();
    }
    if (key.empty()) {
        throw std::logic_error("print: value without a key inside a JSON object");
    }
    auto& slot = top[std::string(key)];
    slot = std::move(value);
    return &slot;
}

void Printer::open_object(std::string_view key) {
    if (!json_) {
        return;
    }
    // The outermost object is the document itself.
    if (key.empty() && stack_.size() == 1 && !stack_.back()->is_array() && root_.empty()) {
        return;
    }
    stack_.push_back(add(key, nlohmann::ordered_json::object()));
}

void Printer::close_object() {
    if (json_ && stack_.size() > 1) {
        stack_.pop_back();
    }
}

void Printer::open_array(std::string_view key) {
    if (json_) {
        stack_.push_back(add(key, nlohmann::ordered_json::array()));
    }
}

void Printer::close_array() {
    close_object();
}

void Printer::string(To to, std::string_view key, std::string_view text_fmt,
                     std::string_view value) {
    if (json_ && to != To::text) {
        add(key, std::string(value));
    } else if (!json_ && to != To::json) {
        out_ << format_text(text_fmt, value);
    }
}

void Printer::uint(To to, std::string_view key, std::string_view text_fmt, std::uint64_t value) {
    if (json_ && to != To::text) {
        add(key, value);
    } else if (!json_ && to != To::json) {
        out_ << format_text(text_fmt, std::to_string(value));
    }
}

void Printer::text(std::string_view literal) {
    if (!json_) {
        out_ << literal;
    }
}

void Printer::newline() {
    text("\n");
}

void Printer::finish() {
    if (json_) {
        out_ << dump(root_, pretty_) << '\n';
    }
    out_.flush();
}

void Printer::error(std::string_view msg) {
    if (json_) {
        const nlohmann::ordered_json doc = {{"error", std::string(msg)}};
        out_ << dump(doc, pretty_) << '\n';
        out_.flush();
        return;
    }
    err_ << "rofctl: " << msg << '\n';
}

}  // namespace rofctl
