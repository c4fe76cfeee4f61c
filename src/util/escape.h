#pragma once

#include <string>
#include <string_view>

namespace hangscan {

// Why: names a target controls (functions, files, threads, command lines) reach terminals and
// text files. A raw ESC or BEL retitles or clears a terminal; a raw newline forges a report line
// ("SUSPECT rank 9 ..."). Text output shows such bytes in a visible form instead; JSON carries
// the exact bytes (JSON escaping) and never goes through this.
//
// The rule (docs/security.md, "Names from targets"):
//   newline, CR, tab       -> \n  \r  \t
//   other bytes < 0x20, DEL -> \xNN (two lowercase hex digits): ESC is \x1b, BEL \x07
//   a byte that is not part of valid UTF-8 (stray, truncated, overlong, surrogate) -> \xNN
//   C1 controls U+0080-U+009F, line/paragraph separators U+2028/U+2029 and the bidi controls
//   U+200E/U+200F, U+202A-U+202E, U+2066-U+2069 -> \uXXXX
//   a backslash stays as is, unless what follows it would read as an escape (one of \ x u n r t,
//   or an escaped byte): then it is written \\ .
// So every escaped form is unambiguous, and ordinary names (printable ASCII, valid UTF-8,
// Windows-style paths such as C:\data) come out byte for byte unchanged.

// `kept`: for text whose backslashes already are escapes of its own (a Python repr that
// hangscan rendered, `'a\nb'`): its backslashes stay as they are, the rest of the rule applies.
enum class Backslashes { doubled_when_ambiguous, kept };

// Whether `s` would be written unchanged. A fast path: one pass over printable ASCII.
bool is_plain_text(std::string_view s);

// The visible form of `s` by the rule above; `s` itself when nothing needs escaping.
std::string escape_for_text(std::string_view s,
                            Backslashes backslashes = Backslashes::doubled_when_ambiguous);

// Appends the visible form of `s` to `out` (no copy of `s` when nothing needs escaping).
void append_escaped(std::string& out, std::string_view s,
                    Backslashes backslashes = Backslashes::doubled_when_ambiguous);

}  // namespace hangscan
