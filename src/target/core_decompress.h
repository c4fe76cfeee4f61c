// Transparent decompression of systemd-coredump's compressed cores.
//
// Why: systemd-coredump stores cores as .zst (Debian 12) or .lz4; users should be able to
// point hangscan at them directly. The core is unpacked once into an unlinked temporary
// file (sparse: runs of zero pages are not written), which is then mapped like any core.
#pragma once

#include <string>

#include "hangscan/result.h"

namespace hangscan {

// Looks at the first bytes of `fd`. Not compressed: returns -1 and leaves `fd` untouched.
// Compressed (zstd or lz4 frame, recognised by magic, not by file name): returns a new fd of
// an unlinked temporary file (in $TMPDIR, else /tmp) holding the decompressed core.
Result<int> decompress_if_needed(int fd, const std::string& path);

}  // namespace hangscan
