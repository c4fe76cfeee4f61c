// What the CLI says of the watchdog's bundles (watchdog/stall_bundle.h writes them).
//
// Why here: the library never prints; both watchdogs (watch --stall on one machine and across
// a Slurm job's nodes) say a bundle and a refused OUTPUT_DIR the same way.
#pragma once

#include <string>

namespace hangscan::cli {

// The one line that says a bundle was written (scripts and tests look for it).
void print_stall(const std::string& reason, const std::string& dir);

// True when OUTPUT_DIR can hold bundles (util/safe_output.h: opened, made when missing, not
// another user's); else prints why with a hint. Checked when the watch starts, so a refused
// directory is a usage error before anything is watched.
bool output_dir_usable(const std::string& output_dir);

}  // namespace hangscan::cli
