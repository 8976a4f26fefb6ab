// SPDX-License-Identifier: MIT
#include "print.h"

#include <fmt/format.h>
#include <google/protobuf/util/time_util.h>

#include <cctype>

namespace rofctl {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

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

Json scalar(const pb::Message& msg, const pb::Reflection& r, const FD& f, int index) {
    const bool rep = f.is_repeated();
    switch (f.cpp_type()) {
        case FD::CPPTYPE_INT32:
            return rep ? r.GetRepeatedInt32(msg, &f, index) : r.GetInt32(msg, &f);
        case FD::CPPTYPE_INT64:
            return rep ? r.GetRepeatedInt64(msg, &f, index) : r.GetInt64(msg, &f);
        case FD::CPPTYPE_UINT32:
            return rep ? r.GetRepeatedUInt32(msg, &f, index) : r.GetUInt32(msg, &f);
        case FD::CPPTYPE_UINT64: {
            const std::uint64_t v =
                rep ? r.GetRepeatedUInt64(msg, &f, index) : r.GetUInt64(msg, &f);
            if (f.type() == FD::TYPE_FIXED64) {
                return hex64(v);
            }
            return v;
        }
        case FD::CPPTYPE_DOUBLE:
            return rep ? r.GetRepeatedDouble(msg, &f, index) : r.GetDouble(msg, &f);
        case FD::CPPTYPE_FLOAT:
            return rep ? r.GetRepeatedFloat(msg, &f, index) : r.GetFloat(msg, &f);
        case FD::CPPTYPE_BOOL:
            return rep ? r.GetRepeatedBool(msg, &f, index) : r.GetBool(msg, &f);
        case FD::CPPTYPE_ENUM: {
            const int v = rep ? r.GetRepeatedEnumValue(msg, &f, index) : r.GetEnumValue(msg, &f);
            const pb::EnumValueDescriptor* d = f.enum_type()->FindValueByNumber(v);
            if (d == nullptr) {
                return v;
            }
            return enum_value_name(*d);
        }
        case FD::CPPTYPE_STRING: {
            std::string scratch;
            const std::string& s = rep ? r.GetRepeatedStringReference(msg, &f, index, &scratch)
                                       : r.GetStringReference(msg, &f, &scratch);
            if (f.type() == FD::TYPE_BYTES) {
                return hex_bytes(s);
            }
            return s;
        }
        case FD::CPPTYPE_MESSAGE:
            return to_json(rep ? r.GetRepeatedMessage(msg, &f, index) : r.GetMessage(msg, &f));
    }
    return nullptr;
}

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

Json to_json(const pb::Message& msg) {
    const pb::Descriptor& d = *msg.GetDescriptor();
    const pb::Reflection& r = *msg.GetReflection();

    if (d.full_name() == "google.protobuf.Timestamp") {
        const auto& ts = static_cast<const pb::Timestamp&>(msg);
        return pb::util::TimeUtil::ToString(ts);
    }
    if (d.full_name() == "google.protobuf.Duration") {
        const auto& du = static_cast<const pb::Duration&>(msg);
        if (du.nanos() == 0) {
            return du.seconds();
        }
        return static_cast<double>(du.seconds()) + du.nanos() / 1e9;
    }

    Json out = Json::object();
    for (int i = 0; i < d.field_count(); i++) {
        const FD& f = *d.field(i);
        if (f.is_repeated()) {
            Json arr = Json::array();
            for (int k = 0; k < r.FieldSize(msg, &f); k++) {
                arr.push_back(scalar(msg, r, f, k));
            }
            out[f.name()] = std::move(arr);
            continue;
        }
        if (f.has_presence() && f.cpp_type() != FD::CPPTYPE_MESSAGE && !r.HasField(msg, &f)) {
            continue;  // an unset `optional` or oneof member
        }
        if (f.containing_oneof() != nullptr && !r.HasField(msg, &f)) {
            continue;
        }
        out[f.name()] = scalar(msg, r, f, 0);
    }
    return out;
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
