#include "report/report_writers.h"

#include "report/graph_writers.h"
#include "report/html_writer.h"
#include "report/json_writer.h"
#include "report/text_writer.h"

namespace hangscan {

namespace {

std::string render_text(const JobSnapshot& job, const Analysis& analysis, const RenderOptions& o) {
  TextOptions t;
  t.color = o.color;
  t.all_threads = o.all_threads;
  t.width = o.width;
  return write_text(job, &analysis, t);
}

std::string render_dot(const JobSnapshot& job, const Analysis& analysis, const RenderOptions&) {
  return write_dot(job, analysis);
}

}  // namespace

std::vector<ReportWriter> report_writers() {
  std::vector<ReportWriter> w;
  w.push_back({"text", "txt", render_text, {}, {}, {}});
  w.push_back({"json",
               "json",
               [](const JobSnapshot& job, const Analysis& a, const RenderOptions&) {
                 return write_json(job, &a);
               },
               {},
               {},
               {}});
  w.push_back({"dot", "dot", render_dot, {}, {}, {}});
  w.push_back({"svg",
               "svg",
               render_dot,
               {"dot", "-Tsvg"},
               "Graphviz's 'dot'",
               "apt-get install graphviz, or use --format dot and render it elsewhere"});
  w.push_back({"folded",
               "folded",
               [](const JobSnapshot& job, const Analysis& a, const RenderOptions&) {
                 return write_folded(job, a.options);
               },
               {},
               {},
               {}});
  w.push_back({"html",
               "html",
               [](const JobSnapshot& job, const Analysis& a, const RenderOptions&) {
                 return render_html(job, a);
               },
               {},
               {},
               {}});
  return w;
}

std::vector<std::string> report_format_names() {
  std::vector<std::string> names;
  for (const auto& w : report_writers()) names.push_back(w.name);
  return names;
}

std::optional<ReportWriter> find_report_writer(const std::string& name) {
  for (auto& w : report_writers()) {
    if (w.name == name) return w;
  }
  return std::nullopt;
}

}  // namespace hangscan
