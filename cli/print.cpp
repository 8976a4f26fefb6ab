// SPDX-License-Identifier: MIT
#include "print.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

namespace rofctl {
namespace {

namespace pb = google::protobuf;

// "PortState" -> "PORT_STATE_".
std::string enum_prefix(const pb::EnumDescriptor& e) {
    std::string out;
    const std::string& name = e.name();
    for (std::size_t i = 0; i < name.size(); i++) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (i > 0 && std::isupper(c) && !std::isupper(static_cast<unsigned char>(name[i - 1]))) {
            out += '_';
        }
        out += static_cast<char>(std::toupper(c));
    }
    return out + "_";
}

constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string enum_value_name(const pb::EnumValueDescriptor& v) {
    const std::string prefix = enum_prefix(*v.type());
    const std::string& name = v.name();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
        return name.substr(prefix.size());
    }
    return name;
}

std::string hex64(std::uint64_t v) {
    return fmt::format("{:#018x}", v);
}

std::string hex_bytes(std::string_view bytes) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    return fmt::format("{:02x}", fmt::join(b, b + bytes.size(), ""));
}

std::string base64(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        std::uint32_t w = static_cast<unsigned char>(bytes[i]) << 16;
        const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
        if (n > 1) {
            w |= static_cast<unsigned char>(bytes[i + 1]) << 8;
        }
        if (n > 2) {
            w |= static_cast<unsigned char>(bytes[i + 2]);
        }
        for (std::size_t k = 0; k < 4; k++) {
            out += k <= n ? kBase64[(w >> (18 - 6 * k)) & 63] : '=';
        }
    }
    return out;
}

std::optional<std::string> unbase64(std::string_view text) {
    std::string out;
    std::uint32_t w = 0;
    int bits = 0;
    for (const char c : text) {
        if (c == '=') {
            break;
        }
        // The URL-safe alphabet too, as protobuf's parser accepts it.
        const char d = c == '-' ? '+' : c == '_' ? '/' : c;
        const auto at = kBase64.find(d);
        if (at == std::string_view::npos) {
            return std::nullopt;
        }
        w = (w << 6) | static_cast<std::uint32_t>(at);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((w >> bits) & 0xff);
        }
    }
    return out;
}

Json to_json(const pb::Message& msg) {
    pb::util::JsonPrintOptions o;
    o.preserve_proto_field_names = true;
    o.always_print_primitive_fields = true;
    std::string text;
    const auto st = pb::util::MessageToJsonString(msg, &text, o);
    if (!st.ok()) {
        throw std::runtime_error(fmt::format("{}: not printable as JSON: {}",
                                             msg.GetDescriptor()->full_name(), st.ToString()));
    }
    // protobuf's printer writes UTF-8 only (3.21 drops a stray byte of a
    // name from the kernel), so this parses.
    return Json::parse(text, nullptr, true, false);
}

Printer::Printer(std::ostream& out, std::ostream& err, bool json, bool pretty)
    : out_(&out), err_(&err), json_(json || pretty), pretty_(pretty) {}

Printer::Printer(Captured& into) : captured_(&into), json_(true), pretty_(false) {}

std::string Printer::dump(const Json& tree, bool pretty) const {
    // Names come from the kernel and messages from the daemon: never let a
    // stray byte that is not UTF-8 turn into an exception here.
    return tree.dump(pretty ? 2 : -1, ' ', false, Json::error_handler_t::replace);
}

void Printer::print(const Json& tree, const pb::Descriptor* type) {
    if (captured_ != nullptr) {
        captured_->output.push_back(tree);
        return;
    }
    if (json_) {
        *out_ << dump(tree, pretty_) << '\n';
    } else {
        *out_ << render_text(tree, type, wide_);
    }
    out_->flush();
}

void Printer::record(const Json& tree, const pb::Descriptor* type) {
    if (captured_ != nullptr) {
        captured_->output.push_back(tree);
        return;
    }
    if (json_) {
        *out_ << dump(tree, false) << '\n';
    } else {
        *out_ << render_text(tree, type, wide_) << '\n';
    }
    out_->flush();
}

void Printer::text(std::string_view line) {
    if (!json_) {
        *out_ << line << '\n';
        out_->flush();
    }
}

void Printer::error(std::string_view msg, std::string_view code) {
    if (captured_ != nullptr) {
        if (captured_->code.empty()) {
            captured_->error = msg;
            captured_->code = code;
        }
        return;
    }
    if (json_) {
        const Json doc = {{"error", std::string(msg)}, {"code", std::string(code)}};
        *out_ << dump(doc, pretty_) << '\n';
        out_->flush();
        return;
    }
    *err_ << "rofctl: " << msg << '\n';
}

}  // namespace rofctl
