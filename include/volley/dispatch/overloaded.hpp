#pragma once
// A visitor built from lambdas, for std::visit and gnb::dispatch:
//   gnb::dispatch(frame, dispatch::Overloaded{[](const gnb::AckView&) {...}, [](const auto&) {...}});

namespace volley::dispatch {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace volley::dispatch
