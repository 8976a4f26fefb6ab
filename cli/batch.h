// SPDX-License-Identifier: MIT
// rofctl batch FILE: many commands over one channel to rofd, read one a
// line (rofctl(8), BATCH).  The line syntax and each command's record,
// apart from the command itself, so that they can be tested alone.
#pragma once

#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "print.h"

namespace rofctl {

// The words of one line, split as a POSIX shell splits them, without
// expansions: blanks separate words; 'single quotes' keep everything;
// "double quotes" keep everything but \" \\ \$ \`; a backslash outside
// quotes keeps the next character; # at the start of a word begins a
// comment.  No word is a blank or comment line.
struct SplitLine {
    std::vector<std::string> words;
    bool continued = false;  // ends with a backslash: the next line follows
    std::string error;       // not empty: an unterminated quote
};
SplitLine split_line(std::string_view line);

// One command of a batch: the number of its (first) line and its words, or
// why its line does not split.
struct BatchCommand {
    std::size_t line = 0;
    std::vector<std::string> args;
    std::string error;
};

// Reads the commands of @in as they come, so that each runs before the next
// line is read (a pipe from a script works).  Blank and comment lines are
// skipped; a line ending in a backslash goes on on the next.
class BatchReader {
  public:
    explicit BatchReader(std::istream& in) : in_(in) {}
    // The next command, or none at the end of the input.
    std::optional<BatchCommand> next();

  private:
    std::istream& in_;
    std::size_t line_ = 0;
};

// @words as a line of a batch file, quoted where needed:
// {"show", "a b"} -> "show 'a b'".
std::string quote_words(const std::vector<std::string>& words);

// A command's record in `rofctl -j batch`: {"line", "args", "status",
// "output": [what `rofctl -j` prints, each object], and if it failed with
// an error "error" and "code"; "text": what it printed that is not JSON
// (--help)}.
Json batch_record(const BatchCommand& cmd, int status, const Captured& captured,
                  const std::string& text);

}  // namespace rofctl
