// SPDX-License-Identifier: MIT
// rofctl's one output path.  Every command prints a protobuf message (or,
// for results no RPC returns, a tree built with the same spelling): the
// message becomes an nlohmann::ordered_json tree through protobuf
// reflection, and text output is rendered from that same tree, with the
// message's descriptor to say what each value is (text.cpp).  There is no
// second code path per command.
//
// The JSON spelling (rofctl(8), "JSON OUTPUT") is protobuf's canonical JSON
// mapping, as google::protobuf::util::MessageToJsonString prints it (and
// Python's json_format, grpcurl and other gRPC tools), with two options:
// the proto field names as keys (preserve_proto_field_names) and every
// field with no presence printed, proto3 defaults included
// (always_print_primitive_fields).  So:
//   - keys are the proto field names exactly ("node_guid", not "nodeGuid");
//   - an unset `optional` field, an unset member of a oneof and an unset
//     message field are left out;
//   - enum values are their full names, "PORT_STATE_ACTIVE"; a number the
//     enum does not know prints as the number;
//   - int64, uint64 and fixed64 (program tags, node GUIDs) are decimal
//     strings, "16045690984833335023"; 32-bit integers JSON numbers;
//   - bytes are base64 (RFC 4648, padded);
//   - google.protobuf.Timestamp is an RFC 3339 string in UTC,
//     google.protobuf.Duration seconds with an "s", "1.500s".
// A tree a command builds itself (no RPC returns it: `prog test`, `prog
// run`, `stats`, `top`, `batch`, `policy check`) is spelled the same way:
// a program tag a decimal string, bytes base64.  The text form
// (render_text) reads these spellings back: tags and GUIDs "0x" and 16 hex
// digits, enum values without their prefix, bytes hex.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rofctl {

using Json = nlohmann::ordered_json;

// The tree of @msg, spelled as above.  Throws std::runtime_error if
// protobuf cannot print it.
Json to_json(const google::protobuf::Message& msg);

// "ACTIVE" for PORT_STATE_ACTIVE of enum PortState.
std::string enum_value_name(const google::protobuf::EnumValueDescriptor& v);
// "0x" and 16 lowercase hex digits (the text form of a tag).
std::string hex64(std::uint64_t v);
// Lowercase hex, two digits a byte (the text form of bytes).
std::string hex_bytes(std::string_view bytes);
// Base64 with padding (RFC 4648 section 4), as the JSON spells bytes.
std::string base64(std::string_view bytes);
// Its inverse (the URL-safe alphabet accepted too); nullopt if not base64.
std::optional<std::string> unbase64(std::string_view text);

// The text rendering of a tree, for people (text.cpp).  With @type, the
// message the tree is of (or a subset of its fields):
//   - a List*Response is a table, one row per element: the columns that
//     matter, or every column with @wide; a column empty in every row is
//     left out, an empty cell is "-";
//   - any other message is a block of "key: value" lines: keys are the
//     field names (a *_ms or *_ns one without its unit), a nested message
//     on one line of named values ("quota: memory 64 MiB, regions 8, ...")
//     or as an indented block, a list of messages as an indented table, a
//     list of lines one a line, a multi-line string on indented lines of
//     its own; an empty string or unset timestamp is left out;
//   - sizes are in B/KiB/MiB/GiB ("20.1 MiB"), durations "300ms", "5s",
//     "3m12s", access "rwa", unlimited limits "unlimited".
// Without @type (a tree built by a command), the same with every value as
// it is, and an object whose one member is a list of objects a table.
std::string render_text(const Json& tree, const google::protobuf::Descriptor* type = nullptr,
                        bool wide = false);

// What in text.cpp's tables names no message or field: empty when all is
// well (print_test checks it).
std::vector<std::string> text_spec_errors();

// "512 B", "64 KiB", "20.1 MiB": binary units, one decimal unless exact.
std::string human_size(std::uint64_t bytes);
// "850ns", "944.8us", "1.5ms", "5s", "3m12s", "1d2h3m4s".
std::string human_duration_ns(double ns);

// What a command printed, kept instead of written: `rofctl -j batch` puts
// it in the command's record (batch.h).
struct Captured {
    Json output = Json::array();  // each print() and record(), in order
    std::string error, code;      // error(), if called
};

class Printer {
  public:
    Printer(std::ostream& out, std::ostream& err, bool json, bool pretty);
    // JSON mode, every tree and the error kept in @into, nothing written.
    explicit Printer(Captured& into);

    bool json() const noexcept { return json_; }
    // Text mode: lists with every column (-o wide).
    void set_wide(bool wide) noexcept { wide_ = wide; }

    void print(const google::protobuf::Message& msg) { print(to_json(msg), msg.GetDescriptor()); }
    // Text mode: render_text() of the tree, of message @type if given;
    // JSON mode: the tree, on one line unless pretty.  Flushes.
    void print(const Json& tree, const google::protobuf::Descriptor* type = nullptr);
    // A streaming record: in JSON mode always one object per line (even
    // with --pretty), in text mode the rendered block then a blank line.
    // Flushes, so a reader sees each record as it arrives.
    void record(const google::protobuf::Message& msg) { record(to_json(msg), msg.GetDescriptor()); }
    void record(const Json& tree, const google::protobuf::Descriptor* type = nullptr);
    // Text mode only: a line as is (a literal with no JSON counterpart,
    // e.g. `policy check`'s "ok" per file).  Ignored in JSON mode.
    void text(std::string_view line);

    // A failed command: "rofctl: MSG" on stderr, or
    // {"error": MSG, "code": CODE} on stdout in JSON mode.
    void error(std::string_view msg, std::string_view code);

  private:
    std::string dump(const Json& tree, bool pretty) const;

    std::ostream* out_ = nullptr;
    std::ostream* err_ = nullptr;
    Captured* captured_ = nullptr;
    bool json_;
    bool pretty_;
    bool wide_ = false;
};

}  // namespace rofctl
