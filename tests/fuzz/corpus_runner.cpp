// Runs the fuzz entry over a fixed corpus with the normal compiler, so every ctest run covers
// the hostile inputs even where libFuzzer is not available.
//
// Why mutations: each corpus file is also fed truncated at many points and with single bytes
// flipped, which is what a node killed mid-write or a corrupted stream produces.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void feed(const std::string& s) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::size_t run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::size_t runs = 1;
  feed(doc);
  std::size_t step = doc.size() / 64 + 1;
  for (std::size_t cut = 0; cut < doc.size(); cut += step, ++runs) feed(doc.substr(0, cut));
  const char flips[] = {'"', '{', ']', '0', '\\', '\xff', ',', ':'};
  std::size_t k = 0;
  for (std::size_t pos = 0; pos < doc.size(); pos += step, ++runs) {
    std::string m = doc;
    m[pos] = flips[k++ % sizeof(flips)];
    feed(m);
  }
  return runs;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t files = 0, runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::vector<std::filesystem::path> paths;
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p)) paths.push_back(e.path());
    } else {
      paths.push_back(p);
    }
    for (const auto& f : paths) {
      runs += run_file(f);
      ++files;
    }
  }
  std::printf("hs_fuzz_corpus: %zu files, %zu inputs, no crash\n", files, runs);
  return files ? 0 : 1;
}
