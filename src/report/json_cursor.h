// JsonCursor: a strict pull tokenizer over the bytes of one JSON document.
//
// Why: the front end reads one agent document per node (10,000 of them for a large job); a
// generic parser that builds a DOM or hands every value over as an owned string spends most of
// that time allocating. The cursor lets a reader walk the document in the order it was written
// and take each value straight into the model: strings are views into the document unless they
// hold escapes (then decoded into a scratch buffer), numbers are parsed with std::from_chars.
// It accepts exactly RFC 8259 JSON (strict UTF-8, no comments, no BOM, nothing after the value)
// and stops with JsonCursor::Stop at the first byte it does not accept or at the depth limit:
// the caller then falls back to the reader that words the error (json_reader.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hangscan {

class JsonCursor {
 public:
  // Thrown on malformed or truncated input, and past the depth limit.
  struct Stop {};

  enum class Kind { object, array, string, number, boolean, null };

  // A number as JSON wrote it: `unsigned_int` has no sign, `integer` a minus sign, `floating` a
  // fraction or exponent (the same three kinds nlohmann distinguishes). Integers that do not fit
  // 64 bits and floats that overflow stop the cursor.
  struct Number {
    enum class Type { unsigned_int, integer, floating } type = Type::unsigned_int;
    std::uint64_t u = 0;
    std::int64_t i = 0;
    double d = 0;
    double as_double() const;
  };

  JsonCursor(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  // The kind of the next value (whitespace skipped); Stop when no value can start there.
  Kind peek();
  // Consumes '{' / '['.
  void begin_object();
  void begin_array();
  // The next member of the innermost open object: true with its key (the cursor then stands at
  // its value), or false after consuming the closing '}'. The key view lives until the next
  // string or key is read.
  bool next_member(std::string_view& key);
  // The next element of the innermost open array: true when one follows, false after ']'.
  bool next_element();

  // Values. A string view lives until the next string or key is read when `stable()` was false
  // for it (it held escapes); otherwise it points into the document.
  std::string_view string();
  bool last_string_stable() const { return stable_; }
  Number number();
  // An integer token (either sign) in [lo, hi]; an unsigned one (no minus sign). Stop otherwise.
  std::int64_t integer(std::int64_t lo, std::int64_t hi);
  std::uint64_t unsigned_int();
  bool boolean();
  void null();
  // Skips one value of any kind, checking its syntax and depth.
  void skip();
  // Only whitespace left.
  void finish();

  std::size_t offset() const { return pos_; }

 private:
  void skip_space();
  char next_byte();
  void expect(char c);
  void open(char c);
  bool next_item(char close);
  void literal(std::string_view word);
  std::string_view scan_string();
  void decode_escape();
  void check_utf8();

  std::string_view text_;
  std::size_t pos_ = 0;
  int max_depth_;
  int depth_ = 0;
  bool first_ = false;  // the innermost container has had no member or element yet
  bool stable_ = true;
  std::string scratch_;
};

}  // namespace hangscan
