// SPDX-License-Identifier: MIT
// rofctl batch FILE [--force]: each line a command, run as `rofctl LINE`
// would run it (rofctl.cpp's run_command), all on one channel to rofd.
// Under emulation or on a busy host most of a short command's time is the
// process start and the connection: a batch pays both once.
#include "batch.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "rofctl.h"

namespace rofctl {

SplitLine split_line(std::string_view s) {
    SplitLine r;
    std::string word;
    bool in_word = false;
    for (std::size_t i = 0; i < s.size(); i++) {
        const char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            if (in_word) {
                r.words.push_back(std::move(word));
                word.clear();
                in_word = false;
            }
            continue;
        }
        if (c == '#' && !in_word) {
            break;
        }
        in_word = true;
        if (c == '\\') {
            if (i + 1 == s.size()) {
                r.continued = true;
                break;
            }
            word += s[++i];
        } else if (c == '\'') {
            const auto end = s.find('\'', i + 1);
            if (end == std::string_view::npos) {
                r.error = "unterminated ' quote";
                return r;
            }
            word += s.substr(i + 1, end - i - 1);
            i = end;
        } else if (c == '"') {
            for (i++; i < s.size() && s[i] != '"'; i++) {
                if (s[i] == '\\' && i + 1 < s.size() &&
                    std::string_view("\"\\$`").find(s[i + 1]) != std::string_view::npos) {
                    i++;
                }
                word += s[i];
            }
            if (i >= s.size()) {
                r.error = "unterminated \" quote";
                return r;
            }
        } else {
            word += c;
        }
    }
    if (in_word) {
        r.words.push_back(std::move(word));
    }
    return r;
}

std::optional<BatchCommand> BatchReader::next() {
    std::string text;
    std::size_t first = 0;
    for (std::string line; std::getline(in_, line);) {
        line_++;
        if (first == 0) {
            first = line_;
        }
        text += line;
        SplitLine s = split_line(text);
        if (!s.error.empty()) {
            return BatchCommand{first, {}, s.error};
        }
        if (s.continued) {
            text.pop_back();  // the backslash; the newline was never kept
            continue;
        }
        if (!s.words.empty()) {
            return BatchCommand{first, std::move(s.words), {}};
        }
        text.clear();
        first = 0;
    }
    if (first != 0) {
        return BatchCommand{first, {}, "the last line ends with a backslash"};
    }
    return std::nullopt;
}

std::string quote_words(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words) {
        if (!out.empty()) {
            out += ' ';
        }
        const bool plain = !w.empty() && w.find_first_not_of(
                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789_-+=.,:/@%") == std::string::npos;
        if (plain) {
            out += w;
            continue;
        }
        out += '\'';
        for (const char c : w) {
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        out += '\'';
    }
    return out;
}

Json batch_record(const BatchCommand& cmd, int status, const Captured& captured,
                  const std::string& text) {
    Json r = Json::object();
    r["line"] = cmd.line;
    r["args"] = cmd.args;
    r["status"] = status;
    r["output"] = captured.output;
    if (!captured.code.empty()) {
        r["error"] = captured.error;
        r["code"] = captured.code;
    }
    if (!text.empty()) {
        r["text"] = text;
    }
    return r;
}

namespace {

struct BatchOpts {
    std::string file;
    bool force = false;
};

// One command of the batch; its exit status.
int run_one(Context& ctx, const BatchCommand& cmd) {
    if (ctx.printer.json()) {
        Captured captured;
        std::ostringstream out, err;
        int status = exit_usage;
        if (cmd.error.empty()) {
            const BatchLine line{ctx.connection, &captured};
            status = run_command(cmd.args, out, err, &line);
        } else {
            captured.error = cmd.error;
            captured.code = "USAGE";
        }
        ctx.printer.print(batch_record(cmd, status, captured, out.str() + err.str()));
        return status;
    }
    ctx.out << ">>> " << cmd.line << ": " << quote_words(cmd.args) << '\n' << std::flush;
    int status = exit_usage;
    if (cmd.error.empty()) {
        const BatchLine line{ctx.connection};
        status = run_command(cmd.args, ctx.out, ctx.err, &line);
    } else {
        ctx.printer.error(cmd.error, "USAGE");
    }
    if (status != exit_ok) {
        ctx.out << "<<< " << cmd.line << ": exit " << status << '\n' << std::flush;
    }
    return status;
}

int run_batch(Context& ctx, const BatchOpts& o) {
    if (ctx.in_batch) {
        throw UsageError("batch: not within a batch");
    }
    std::ifstream file;
    std::istream* in = &std::cin;
    const std::string name = o.file == "-" ? "<stdin>" : o.file;
    if (o.file != "-") {
        file.open(o.file);
        if (!file) {
            throw std::runtime_error(o.file + ": cannot read");
        }
        in = &file;
    }
    BatchReader reader(*in);
    int first_failure = exit_ok;
    std::size_t failed = 0;
    std::string failed_lines;
    while (const auto cmd = reader.next()) {
        const int status = run_one(ctx, *cmd);
        if (status == exit_ok) {
            continue;
        }
        failed++;
        failed_lines += (failed_lines.empty() ? "" : ", ") + std::to_string(cmd->line);
        if (first_failure == exit_ok) {
            first_failure = status;
        }
        if (!o.force) {
            if (!ctx.printer.json()) {
                ctx.err << "rofctl: " << name << ":" << cmd->line << ": exit " << status
                        << ", the batch stops here (--force runs every line)\n";
            }
            return status;
        }
    }
    if (failed > 0 && !ctx.printer.json()) {
        ctx.err << "rofctl: " << name << ": " << failed
                << (failed == 1 ? " command failed, at line " : " commands failed, at lines ")
                << failed_lines << '\n';
    }
    return first_failure;
}

}  // namespace

void add_batch_commands(CLI::App& app, Handler& selected) {
    auto o = std::make_shared<BatchOpts>();
    auto* b = app.add_subcommand(
        "batch",
        "run the commands of FILE, one a line, over one connection to rofd; stop at the first "
        "that fails unless --force");
    b->add_option("file", o->file, "the commands, without `rofctl`; - is stdin")->required();
    b->add_flag("-f,--force", o->force, "run every line, failed ones or not");
    b->callback([&selected, o] { selected = [o](Context& ctx) { return run_batch(ctx, *o); }; });
}

}  // namespace rofctl
