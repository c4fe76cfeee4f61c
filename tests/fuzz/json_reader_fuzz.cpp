// libFuzzer entry for the JSON / agent document reader, and everything downstream of it.
//
// Why: in multi-node mode the front end parses whatever any node sends. Whatever the bytes,
// read_job_json must return (a snapshot or an Error), and a snapshot it accepts must survive
// analysis and every writer, and round-trip through both JSON formats unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "group/analysis.h"
#include "report/agent_format.h"
#include "report/graph_writers.h"
#include "report/json_reader.h"
#include "report/json_writer.h"
#include "report/text_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hangscan;
  ReadLimits limits;
  limits.max_bytes = 1u << 20;
  limits.max_total_frames = 1u << 16;
  limits.max_processes = 1u << 12;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto job = read_job_json(text, limits);
  if (!job.ok()) return 0;
  Analysis a = analyze(*job, GroupOptions{});
  std::string json = write_json(*job, &a, -1);
  (void)write_text(*job, &a, TextOptions{});
  (void)write_dot(*job, a);
  (void)write_folded(*job, GroupOptions{});
  // Accepted input must round-trip through both formats without loss.
  std::string plain = write_json(*job, nullptr, -1);
  auto again = read_job_json(plain, limits);
  if (!again.ok() || write_json(*again, nullptr, -1) != plain) std::abort();
  auto agent = read_job_json(write_agent_json(*job), limits);
  if (!agent.ok() || write_json(*agent, nullptr, -1) != plain) std::abort();
  return 0;
}
