// FrameStack: shared frames, copied on the first write.
#include "hangscan/model.h"

namespace hangscan {

namespace {
const std::vector<Frame>& empty_frames() {
  static const std::vector<Frame> kEmpty;
  return kEmpty;
}
}  // namespace

FrameStack::FrameStack(std::vector<Frame> frames) {
  if (!frames.empty()) data_ = std::make_shared<const std::vector<Frame>>(std::move(frames));
}

FrameStack::FrameStack(std::initializer_list<Frame> frames)
    : FrameStack(std::vector<Frame>(frames)) {}

FrameStack& FrameStack::operator=(std::vector<Frame> frames) {
  *this = FrameStack(std::move(frames));
  return *this;
}

FrameStack& FrameStack::operator=(std::initializer_list<Frame> frames) {
  *this = FrameStack(std::vector<Frame>(frames));
  return *this;
}

const std::vector<Frame>& FrameStack::frames() const { return data_ ? *data_ : empty_frames(); }

// The only place the shared vector is written: a private copy when anyone else holds it.
std::vector<Frame>& FrameStack::edit() {
  if (!data_ || data_.use_count() != 1) {
    data_ = std::make_shared<const std::vector<Frame>>(data_ ? *data_ : std::vector<Frame>{});
  }
  return const_cast<std::vector<Frame>&>(*data_);  // sole owner of a vector made non-const
}

void FrameStack::push_back(Frame f) { edit().push_back(std::move(f)); }

FrameStack::iterator FrameStack::erase(const_iterator first, const_iterator last) {
  auto a = first - begin_const();
  auto b = last - begin_const();
  std::vector<Frame>& v = edit();
  return v.erase(v.begin() + a, v.begin() + b);
}

FrameStack::iterator FrameStack::erase(const_iterator pos) { return erase(pos, pos + 1); }

bool FrameStack::operator==(const FrameStack& o) const {
  return data_ == o.data_ || frames() == o.frames();
}

}  // namespace hangscan
