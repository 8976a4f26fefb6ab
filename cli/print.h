// SPDX-License-Identifier: MIT
// rofctl's one output path.  Every command prints a protobuf message (or,
// for results no RPC returns, a tree built with the same spelling): the
// message becomes an nlohmann::ordered_json tree through protobuf
// reflection, and text output is rendered from that same tree.  There is
// no second code path per command.
//
// The JSON spelling (rofctl(8), "JSON OUTPUT"):
//   - keys are the proto field names exactly, in field number order; every
//     field is printed, proto3 defaults included, except an unset
//     `optional` field or an unset member of a oneof;
//   - enum values are the generated name with the enum's prefix stripped:
//     PORT_STATE_ACTIVE -> "ACTIVE", ORIGIN_POLICY -> "POLICY"; an unknown
//     number prints as the number;
//   - google.protobuf.Timestamp is an RFC 3339 string in UTC,
//     google.protobuf.Duration a number of seconds (fractional);
//   - bytes are a lowercase hex string; fixed64 fields (program tags, node
//     GUIDs) are "0x" and 16 hex digits;
//   - other integers are JSON numbers, bools JSON booleans.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

namespace rofctl {

using Json = nlohmann::ordered_json;

// The tree of @msg, spelled as above.
Json to_json(const google::protobuf::Message& msg);

// "ACTIVE" for PORT_STATE_ACTIVE of enum PortState.
std::string enum_value_name(const google::protobuf::EnumValueDescriptor& v);
// "0x" and 16 lowercase hex digits.
std::string hex64(std::uint64_t v);
// Lowercase hex, two digits a byte.
std::string hex_bytes(std::string_view bytes);

// The text rendering of a tree:
//   - an object whose only member is an array of objects (a List*Response)
//     is a table: a header of the upper-cased keys, one row per element;
//   - any other object is a block of "key: value" lines, nested objects
//     indented under "key:", arrays of objects as indented tables;
//   - in a table cell, an array of scalars is joined with ",", an object or
//     array of objects is its scalars joined with "/" (ports: "1/ACTIVE/1024");
//   - a string with newlines (source, disassembly, log, Prometheus text) in
//     a block is printed after "key:" on lines of its own, indented.
std::string render_text(const Json& tree);

class Printer {
  public:
    Printer(std::ostream& out, std::ostream& err, bool json, bool pretty);

    bool json() const noexcept { return json_; }

    void print(const google::protobuf::Message& msg) { print(to_json(msg)); }
    // Text mode: render_text(); JSON mode: the tree, on one line unless
    // pretty.  Flushes.
    void print(const Json& tree);
    // A streaming record: in JSON mode always one object per line (even
    // with --pretty), in text mode the rendered block then a blank line.
    // Flushes, so a reader sees each record as it arrives.
    void record(const Json& tree);
    // Text mode only: a line as is (a literal with no JSON counterpart,
    // e.g. `policy check`'s "ok" per file).  Ignored in JSON mode.
    void text(std::string_view line);

    // A failed command: "rofctl: MSG" on stderr, or
    // {"error": MSG, "code": CODE} on stdout in JSON mode.
    void error(std::string_view msg, std::string_view code);

  private:
    std::string dump(const Json& tree, bool pretty) const;

    std::ostream& out_;
    std::ostream& err_;
    bool json_;
    bool pretty_;
};

}  // namespace rofctl
