// The registry of watch report formats: name, file extension and renderer of each.
//
// Why: a watch window's report (one machine's or a Slurm job's merged one) is written to
// stdout (--format, --json), beside it (--html FILE) and into the watchdog's bundle
// (timeline.EXT); each place takes its formats from here, so a new one is one entry in
// watch_writers() with no CLI edit, as report/report_writers.h is for captures.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hangscan {

// A window's report as data (watch_json, or merge_node_watches' document) and in words
// (watch_text, or cluster_watch_text: the two reports read differently).
struct WatchDocument {
  nlohmann::json json;
  std::string text;
};

struct WatchWriter {
  std::string name;       // --format NAME
  std::string extension;  // the bundle's timeline.EXTENSION
  std::function<std::string(const WatchDocument&)> render;
};

// Every format, text first.
std::vector<WatchWriter> watch_writers();

// The names, in registry order (for --format's choices).
std::vector<std::string> watch_format_names();

// The writer called `name`; nullopt for an unknown name.
std::optional<WatchWriter> find_watch_writer(const std::string& name);

}  // namespace hangscan
