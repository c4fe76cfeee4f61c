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

Result<OutputDir> open_run_output_dir(const std::string& path) {
  auto dir = OutputDir::open(path);
  if (!dir) {
    Error e = dir.error();
    e.code = Errc::usage;
    return e;
  }
  return dir;
}

RunOutputWritten write_cluster_output_files(const OutputDir& dir, const FanoutResult& result,
                                            const JobSnapshot& merged, const Analysis& analysis,
                                            const GroupOptions& groups,
                                            const RunOutputRequest& request) {
  RunOutputWritten out;
  cluster_output_files(result, merged, analysis, groups, request.text, request.chosen,
                       request.chosen_options, [&](const OutputFile& f) {
                         auto st = dir.write_file(f.name, f.text);
                         if (st) out.written.push_back(f.name);
                         else out.failed.push_back(st.error());
                       });
  return out;
}

}  // namespace hangscan
