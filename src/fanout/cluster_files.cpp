#include "fanout/cluster_files.h"

#include <fmt/core.h>

namespace hangscan {

namespace {

OutputFile file(std::string name, std::string text) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return OutputFile{std::move(name), std::move(text)};
}

}  // namespace

void cluster_output_files(const FanoutResult& result, const JobSnapshot& merged,
                          const Analysis& analysis, const GroupOptions& groups,
                          const RenderOptions& text, const ReportWriter& chosen,
                          const RenderOptions& chosen_options,
                          const std::function<void(const OutputFile&)>& take) {
  const ReportWriter text_writer = *find_report_writer("text");
  const ReportWriter html_writer = *find_report_writer("html");
  for (const auto& [node, snap] : result.nodes) {
    Analysis a = analyze(snap, groups);
    take(file(node + ".txt", text_writer.render(snap, a, text)));
  }
  for (const auto& u : result.unreachable) {
    take(file(u.host + ".txt", fmt::format("node {} unreachable: {}\n", u.host, u.reason)));
  }
  take(file("report.txt", text_writer.render(merged, analysis, text)));
  take(file("report.html", html_writer.render(merged, analysis, text)));
  if (chosen.filter.empty() && !chosen.extension.empty() && chosen.extension != "txt" &&
      chosen.extension != "html") {
    take(file("report." + chosen.extension, chosen.render(merged, analysis, chosen_options)));
  }
}

}  // namespace hangscan
