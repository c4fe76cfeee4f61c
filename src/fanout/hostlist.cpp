#include "fanout/hostlist.h"
#include "util/parse_number.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>

namespace hangscan {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

constexpr const char* kHostHint =
    "name hosts as Slurm and pdsh print them, e.g. -w 'n[1-3],gpu7': letters, digits, '.', '-' "
    "and '_', numeric ranges in brackets";
constexpr const char* kJobIdHint =
    "give the job id as squeue prints it: --slurm-job 12345 (12345_7 for an array task, "
    "12345+1 for a het component)";

Error usage(std::string msg, const char* hint = kHostHint) {
  return Error(Errc::usage, std::move(msg), 0, hint);
}

// Shows a possibly hostile string in an error message: bounded and printable.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 80) out += "...";
  return out;
}

// Numbers inside brackets: at most 9 digits, so they fit an int without overflow checks.
constexpr std::size_t kMaxDigits = 9;

struct Range {
  long lo = 0;
  long hi = 0;
  int width = 0;  // zero padding, 0 = natural
};

Result<long> range_bound(std::string_view digits, std::string_view item) {
  if (digits.empty() || digits.size() > kMaxDigits ||
      !std::all_of(digits.begin(), digits.end(), is_digit)) {
    return usage(fmt::format("bad number '{}' in host list item '{}'", shown(digits), shown(item)));
  }
  auto v = parse_int<long>(digits);
  if (!v)
    return usage(fmt::format("bad number '{}' in host list item '{}'", shown(digits), shown(item)));
  return *v;
}

// "1-3,5,07-09" (the inside of one bracket group) -> ranges.
Result<std::vector<Range>> parse_bracket(std::string_view body, std::string_view item) {
  std::vector<Range> out;
  if (body.empty()) return usage(fmt::format("empty brackets in host list item '{}'", shown(item)));
  std::size_t pos = 0;
  while (pos <= body.size()) {
    std::size_t comma = body.find(',', pos);
    std::string_view part =
        body.substr(pos, comma == std::string_view::npos ? body.npos : comma - pos);
    std::size_t dash = part.find('-');
    std::string_view lo_text = part.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
    auto lo = range_bound(lo_text, item);
    if (!lo) return lo.error();
    auto hi = range_bound(hi_text, item);
    if (!hi) return hi.error();
    if (*hi < *lo) {
      return usage(
          fmt::format("reversed range '{}' in host list item '{}'", shown(part), shown(item)));
    }
    Range r{*lo, *hi, 0};
    if (lo_text.size() > 1 && lo_text[0] == '0') r.width = static_cast<int>(lo_text.size());
    out.push_back(r);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// One item ("rack[1-2]-n[01-03]") -> its names, appended to `out` (deduplicated via `seen`).
Status expand_item(std::string_view item, std::size_t max_hosts, std::vector<std::string>& out,
                   std::unordered_set<std::string>& seen) {
  // Segments alternate between literal text and bracket groups; the product is built
  // left to right.
  std::vector<std::string> partial{""};
  std::size_t pos = 0;
  while (pos < item.size()) {
    std::size_t open = item.find('[', pos);
    std::string_view literal =
        item.substr(pos, open == std::string_view::npos ? item.npos : open - pos);
    if (literal.find(']') != std::string_view::npos) {
      return usage(fmt::format("unbalanced ']' in host list item '{}'", shown(item)));
    }
    for (auto& p : partial) p.append(literal);
    if (open == std::string_view::npos) break;
    std::size_t close = item.find(']', open);
    if (close == std::string_view::npos) {
      return usage(fmt::format("unbalanced '[' in host list item '{}'", shown(item)));
    }
    std::string_view body = item.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string_view::npos) {
      return usage(fmt::format("nested '[' in host list item '{}'", shown(item)));
    }
    auto ranges = parse_bracket(body, item);
    if (!ranges) return ranges.error();
    std::size_t count = 0;
    for (const auto& r : *ranges) count += static_cast<std::size_t>(r.hi - r.lo + 1);
    if (count > max_hosts || partial.size() * count > max_hosts) {
      return usage(
          fmt::format("host list item '{}' names more than {} hosts", shown(item), max_hosts));
    }
    std::vector<std::string> next;
    next.reserve(partial.size() * count);
    for (const auto& p : partial) {
      for (const auto& r : *ranges) {
        for (long v = r.lo; v <= r.hi; ++v) next.push_back(fmt::format("{}{:0{}}", p, v, r.width));
      }
    }
    partial = std::move(next);
    pos = close + 1;
  }
  for (auto& name : partial) {
    if (auto st = validate_host_name(name); !st) {
      return st.error().with_context(fmt::format("host list item '{}'", shown(item)));
    }
    if (seen.insert(name).second) {
      if (out.size() >= max_hosts)
        return usage(fmt::format("host list names more than {} hosts", max_hosts));
      out.push_back(std::move(name));
    }
  }
  return Ok{};
}

}  // namespace

Status validate_host_name(std::string_view name) {
  if (name.empty()) return usage("empty host name");
  if (name.size() > kMaxHostNameLength) {
    return usage(fmt::format("host name '{}' is longer than {} characters", shown(name),
                             kMaxHostNameLength));
  }
  if (name[0] == '-' || name[0] == '.') {
    return usage(fmt::format("host name '{}' must not start with '{}'", shown(name), name[0]));
  }
  for (char c : name) {
    if (!is_name_char(c)) {
      return usage(fmt::format(
          "host name '{}' contains '{}': only letters, digits, '.', '-', '_' are allowed",
          shown(name), shown(std::string_view(&c, 1))));
    }
  }
  return Ok{};
}

Status validate_job_id(std::string_view id) {
  if (id.empty()) return usage("empty job id", kJobIdHint);
  if (id.size() > kMaxJobIdLength)
    return usage(fmt::format("job id '{}' is too long", shown(id)), kJobIdHint);
  std::size_t i = 0;
  while (i < id.size() && is_digit(id[i])) ++i;
  bool ok = i > 0;
  if (ok && i < id.size()) {
    ok = (id[i] == '_' || id[i] == '+') && i + 1 < id.size() &&
         std::all_of(id.begin() + static_cast<std::ptrdiff_t>(i) + 1, id.end(), is_digit);
  }
  if (!ok) {
    return usage(
        fmt::format("bad job id '{}': expected digits, '123_4' (array task) or '123+1' (het job)",
                    shown(id)),
        kJobIdHint);
  }
  return Ok{};
}

Result<std::vector<std::string>> parse_hostlist(std::string_view text, std::size_t max_hosts) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    bool end = i == text.size();
    char c = end ? ',' : text[i];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return usage(fmt::format("unbalanced ']' in host list '{}'", shown(text)));
    if (end && depth > 0)
      return usage(fmt::format("unbalanced '[' in host list '{}'", shown(text)));
    if (depth == 0 && (c == ',' || is_whitespace(c))) {
      std::string_view item = text.substr(start, i - start);
      start = i + 1;
      if (item.empty()) continue;
      if (auto st = expand_item(item, max_hosts, out, seen); !st) return st.error();
    }
  }
  if (out.empty()) return usage("empty host list");
  return out;
}

std::string compress_hostlist(const std::vector<std::string>& hosts) {
  // Key: prefix and padding width (0 = natural numbers); value: the numbers.
  struct Numbered {
    std::string prefix;
    int width = 0;
    std::vector<long> numbers;
  };
  std::vector<Numbered> numbered;
  std::map<std::pair<std::string, int>, std::size_t> index;
  std::vector<std::string> plain;                   // names without a trailing number, in order
  std::vector<std::pair<bool, std::size_t>> order;  // (is_group, index) by first appearance
  std::unordered_set<std::string> plain_seen;
  for (const auto& h : hosts) {
    std::size_t d = h.size();
    while (d > 0 && is_digit(h[d - 1])) --d;
    std::size_t ndigits = h.size() - d;
    if (ndigits == 0 || ndigits > kMaxDigits) {
      if (plain_seen.insert(h).second) {
        order.emplace_back(false, plain.size());
        plain.push_back(h);
      }
      continue;
    }
    int width = (ndigits > 1 && h[d] == '0') ? static_cast<int>(ndigits) : 0;
    auto key = std::make_pair(h.substr(0, d), width);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, numbered.size()).first;
      order.emplace_back(true, numbered.size());
      numbered.push_back(Numbered{key.first, width, {}});
    }
    numbered[it->second].numbers.push_back(parse_int<long>(h.substr(d)).value_or(0));
  }
  std::string out;
  for (auto [is_group, i] : order) {
    if (!out.empty()) out += ',';
    if (!is_group) {
      out += plain[i];
      continue;
    }
    Numbered& g = numbered[i];
    std::sort(g.numbers.begin(), g.numbers.end());
    g.numbers.erase(std::unique(g.numbers.begin(), g.numbers.end()), g.numbers.end());
    if (g.numbers.size() == 1) {
      out += fmt::format("{}{:0{}}", g.prefix, g.numbers[0], g.width);
      continue;
    }
    out += g.prefix;
    out += '[';
    for (std::size_t a = 0; a < g.numbers.size();) {
      std::size_t b = a;
      while (b + 1 < g.numbers.size() && g.numbers[b + 1] == g.numbers[b] + 1) ++b;
      if (a > 0) out += ',';
      out += fmt::format("{:0{}}", g.numbers[a], g.width);
      if (b > a) out += fmt::format("-{:0{}}", g.numbers[b], g.width);
      a = b + 1;
    }
    out += ']';
  }
  return out;
}

Result<std::vector<HostEntry>> parse_hostfile(std::string_view text, std::size_t max_hosts) {
  std::vector<HostEntry> out;
  std::unordered_set<std::string> seen;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> words;
    for (std::size_t i = 0; i < line.size();) {
      while (i < line.size() && is_whitespace(line[i])) ++i;
      std::size_t j = i;
      while (j < line.size() && !is_whitespace(line[j])) ++j;
      if (j > i) words.push_back(line.substr(i, j - i));
      i = j;
    }
    if (words.empty()) continue;
    auto where = [&] { return fmt::format("hostfile line {}", line_no); };
    std::optional<int> slots;
    for (std::size_t w = 1; w < words.size(); ++w) {
      std::size_t eq = words[w].find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return usage(fmt::format("{}: unexpected word '{}' (expected 'host' or 'host slots=N')",
                                 where(), shown(words[w])));
      }
      if (words[w].substr(0, eq) == "slots") {
        std::string_view v = words[w].substr(eq + 1);
        auto n = parse_int_in<int>(v, 1, std::numeric_limits<int>::max());
        if (!n || v != trim_space(v)) {
          return usage(fmt::format("{}: bad slots value '{}'", where(), shown(v)));
        }
        slots = *n;
      }
    }
    auto names = parse_hostlist(words[0], max_hosts);
    if (!names) return names.error().with_context(where());
    for (auto& n : *names) {
      if (!seen.insert(n).second) continue;
      if (out.size() >= max_hosts)
        return usage(fmt::format("hostfile names more than {} hosts", max_hosts));
      out.push_back(HostEntry{std::move(n), slots});
    }
  }
  if (out.empty()) return usage("hostfile names no host");
  return out;
}

}  // namespace hangscan
