// FunctionRef: a non-owning reference to a callable, for parameters that are called during the call and not
// kept (the thread pool's parallel regions, per-token loops). Unlike `const std::function&`, binding a lambda
// to it never allocates: a capture list larger than std::function's small buffer (16 bytes in libstdc++) made
// every parallel region of a step a heap allocation. The callable must outlive the FunctionRef (a lambda
// passed as an argument lives until the call returns).
#pragma once
#include <type_traits>
#include <utility>

namespace tinfer {

template <class Sig>
class FunctionRef;

template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                              std::is_invocable_r_v<R, F&, A...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): binds like a function parameter
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<A>(a)...); }) {}
  R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

}  // namespace tinfer
