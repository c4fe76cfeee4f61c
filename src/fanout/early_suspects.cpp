// Odd ranks named early, from the node documents read so far.
#include "fanout/early_suspects.h"

#include <algorithm>

namespace hangscan {

namespace {

const FrameStack& stack_of(const ThreadSnapshot& t) {
  return t.frames.empty() ? t.native_frames : t.frames;
}

std::optional<Frame> innermost(const FrameStack& s) {
  if (s.empty()) return std::nullopt;
  return s.front();
}

}  // namespace

std::vector<EarlyNote> EarlySuspects::add(const JobSnapshot& doc) {
  for (const ProcessSnapshot& p : doc.processes) {
    const ThreadSnapshot* t = p.rank ? main_or_first_thread(p) : nullptr;
    if (!t) continue;
    const FrameStack& s = stack_of(*t);
    auto [it, fresh] = groups_.try_emplace(s.id());
    if (fresh) {
      it->second.first_rank = *p.rank;
      it->second.first_host = p.host;
      it->second.where = innermost(s);
    }
    ++it->second.members;
    ++ranks_;
  }
  std::vector<EarlyNote> notes;
  if (ranks_ < rules_.min_ranks || notes_ >= rules_.max_notes) return notes;
  auto largest = std::max_element(groups_.begin(), groups_.end(), [](const auto& a, const auto& b) {
    return a.second.members < b.second.members;
  });
  const auto total = static_cast<double>(ranks_);
  if (static_cast<double>(largest->second.members) < rules_.majority * total) return notes;
  const auto odd_max = std::max<std::size_t>(1, static_cast<std::size_t>(rules_.odd_share * total));
  // Oldest first would need an order; the rank number gives a stable one.
  std::vector<Group*> odd;
  for (auto& [id, g] : groups_) {
    if (&g != &largest->second && !g.noted && g.members <= odd_max) odd.push_back(&g);
  }
  std::sort(odd.begin(), odd.end(),
            [](const Group* a, const Group* b) { return a->first_rank < b->first_rank; });
  for (Group* g : odd) {
    if (notes_ >= rules_.max_notes) break;
    g->noted = true;
    ++notes_;
    notes.push_back({g->members, g->first_rank, g->first_host, g->where, largest->second.members,
                     largest->second.where, ranks_});
  }
  return notes;
}

}  // namespace hangscan
