// OutputDir: a directory hangscan writes into, opened once, and files created in it that a
// planted link cannot redirect.
//
// Why: hangscan often runs as root and writes where a user tells it (`--output DIR`, the
// watchdog's bundles, `--gcore-dir`, `gcore -o`). A user who can write that directory could
// plant `report.txt -> /etc/passwd`; an ofstream with truncate would then overwrite the link's
// target as root. So every output file is made here: the directory is walked and opened once
// (a symbolic link on the way is followed only when root or the caller owns it), refused when
// someone other than root or the caller owns it or may write it (unless sticky, like /tmp), and
// every file is created new (O_CREAT|O_EXCL|O_NOFOLLOW) relative to that one open directory.
// A NAME below is a plain file name: one with '/', or "." or "..", is refused (EINVAL).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "hangscan/result.h"

namespace hangscan {

struct OutputDirOptions {
  std::string option = "--output";  // the flag that named the directory, for messages
  bool create = true;               // make missing directories (as `mkdir -p`)
  mode_t mode = 0755;               // of the directories made
};

class OutputDir {
 public:
  // Walks `path` and opens it. Errc::permission with a hint when the directory (or a symbolic
  // link on the way) belongs to another user, or others may write it; Errc::io when it cannot
  // be opened or made.
  static Result<OutputDir> open(const std::string& path, const OutputDirOptions& options = {});

  OutputDir(OutputDir&& other) noexcept;
  OutputDir& operator=(OutputDir&& other) noexcept;
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  ~OutputDir();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // "DIR/NAME", for messages.
  std::string path_of(std::string_view name) const;

  // Writes `text` to NAME whole or not at all: a new temporary file (O_EXCL|O_NOFOLLOW) is
  // written, then renamed to NAME, which replaces a file of a previous run (or a link planted
  // there: the link itself, never what it points to). On failure (a full disk) the temporary
  // file is removed, NAME is left as it was, and the error has a hint.
  Status write_file(std::string_view name, std::string_view text, mode_t mode = 0644) const;

  // Creates NAME new (O_CREAT|O_EXCL|O_NOFOLLOW, `mode` whatever the umask); returns its fd,
  // which the caller closes. EEXIST when anything (also a link) has that name.
  Result<int> create_new(std::string_view name, mode_t mode) const;

  // Gives the complete file `from` the name `to`, never replacing anything there (EEXIST).
  Status publish(std::string_view from, std::string_view to) const;

  // Makes a new subdirectory NAME (fails with EEXIST when the name is taken) and opens it.
  Result<OutputDir> make_subdir(std::string_view name, mode_t mode = 0755) const;

  // True when NAME exists (a link counts, it is not followed).
  bool has(std::string_view name) const;
  // Removes the file NAME; quiet when it is not there.
  void remove(std::string_view name) const;

 private:
  OutputDir(int fd, std::string path, std::string option);
  Error write_error(std::string_view name, int err) const;

  int fd_ = -1;
  std::string path_;
  std::string option_;
};

}  // namespace hangscan
