// Boxed<T>: an optional value kept on the heap, read and written like std::optional<T>.
//
// Why: a ProcessSnapshot carries rare, large parts (a death record, a core's crash facts,
// memory figures) that most processes of a live job do not have. Held inline as
// std::optional they made every process 1.2 KB; a front end holding 80,000 ranks paid that in
// fresh pages and in every move. Boxed costs one pointer when empty and keeps the optional's
// interface (has_value, *, ->, reset, emplace, comparison), so readers do not change. Copies
// are deep: two snapshots never share a mutable part.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace hangscan {

template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}                                 // NOLINT: converts like std::optional
  Boxed(const T& v) : p_(std::make_unique<T>(v)) {}        // NOLINT
  Boxed(T&& v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT
  Boxed(const std::optional<T>& v) : p_(v ? std::make_unique<T>(*v) : nullptr) {}  // NOLINT
  Boxed(std::optional<T>&& v)                                                      // NOLINT
      : p_(v ? std::make_unique<T>(std::move(*v)) : nullptr) {}
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(std::nullopt_t) {
    p_.reset();
    return *this;
  }
  ~Boxed() = default;

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& value() {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  const T& value() const {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  void reset() { p_.reset(); }
  template <class... Args>
  T& emplace(Args&&... args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  // The value as a std::optional copy (for code that wants one).
  std::optional<T> to_optional() const { return p_ ? std::optional<T>(*p_) : std::nullopt; }

  friend bool operator==(const Boxed& a, const Boxed& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || *a == *b;
  }
  friend bool operator==(const Boxed& a, std::nullopt_t) { return !a.has_value(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace hangscan
