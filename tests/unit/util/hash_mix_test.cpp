// frame_content_hash: one hash for a Frame and its FrameView, so the stack table, the run-wide
// frame table and the agent writer bucket a frame alike.
#include "util/hash_mix.h"

#include <gtest/gtest.h>

#include "util/shared_stacks.h"

namespace hangscan {
namespace {

Frame frame() {
  Frame f;
  f.kind = FrameKind::python;
  f.function = "step";
  f.file = "/t/train.py";
  f.line = 42;
  f.module = "/usr/bin/python3.11";
  f.pc = 0x401000;
  f.offset = 0x10;
  f.build_id = "ab12";
  f.locals = {{"i", "3"}};
  f.column = 7;
  return f;
}

FrameView view_of(const Frame& f) {
  FrameView v;
  v.kind = f.kind;
  v.function = f.function;
  if (f.file) v.file = *f.file;
  v.line = f.line;
  v.module = f.module;
  v.pc = f.pc;
  v.offset = f.offset;
  v.build_id = f.build_id;
  for (const Local& l : f.locals) v.locals.emplace_back(l.name, l.value);
  v.column = f.column;
  return v;
}

TEST(FrameContentHash, AFrameAndItsViewHashAlike) {
  const Frame f = frame();
  EXPECT_EQ(frame_content_hash(f), frame_content_hash(view_of(f)));
  Frame no_file = f;
  no_file.file.reset();
  EXPECT_EQ(frame_content_hash(no_file), frame_content_hash(view_of(no_file)));
}

TEST(FrameContentHash, ChangesWithTheFieldsItCovers) {
  const Frame f = frame();
  Frame other = f;
  other.line = 43;
  EXPECT_NE(frame_content_hash(f), frame_content_hash(other));
  other = f;
  other.build_id = "cd34";
  EXPECT_NE(frame_content_hash(f), frame_content_hash(other));
  other = f;
  other.locals[0].value = "4";  // locals' text is left to equality: same hash
  EXPECT_EQ(frame_content_hash(f), frame_content_hash(other));
}

}  // namespace
}  // namespace hangscan
