// The registry of report formats: name, file extension and renderer of each.
//
// Why: `--format`, `--json` and `--output DIR` must know every format, and a new one (say
// SARIF or HTML) should be its own file plus one entry in report_writers(), with no CLI edit:
// the CLI takes its choices, its file names and the renderer from here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/model.h"

namespace hangscan {

// How a report is shown; formats ignore what does not apply to them.
struct RenderOptions {
  bool color = false;       // text: ANSI colours
  bool all_threads = true;  // text: false shows each process's main thread only
  int width = 0;            // text: cut lines to this many columns; 0 never
};

struct ReportWriter {
  std::string name;       // --format NAME
  std::string extension;  // --output DIR writes report.EXTENSION
  std::function<std::string(const JobSnapshot&, const Analysis&, const RenderOptions&)> render;
  // A program the rendering is piped through to stdout (svg: Graphviz's dot); empty: none.
  // Such formats are not written to --output DIR.
  std::vector<std::string> filter;
  std::string filter_name;  // for the error when the program is missing: "Graphviz's 'dot'"
  std::string filter_hint;
};

// Every format, text first.
std::vector<ReportWriter> report_writers();

// The names, in registry order (for --format's choices).
std::vector<std::string> report_format_names();

// The writer called `name`; nullopt for an unknown name.
std::optional<ReportWriter> find_report_writer(const std::string& name);

}  // namespace hangscan
