#pragma once

#include <string>
#include <utility>
#include <variant>

// The one way our functions report an expected failure: bad input, a file
// that is not what it should be, a port that is taken. A Result holds the
// value or the Error saying why there is none, in words for the user.
//
// Exceptions are for what no caller can handle at the call (bugs, exhausted
// memory, a SQLite store that fails under us): they are caught at the edges
// (each env's facts guard, each judge, each HTTP request, each verb's main)
// and turned into an error there. Problems that belong to the facts (a
// library that does not load, a pattern that could not be looked for) are
// facts, fields of the fact itself, not failures of the function that
// gathered them. Loaders that report many problems at once (contracts) collect
// diagnostics with their positions instead of stopping at the first.
namespace envcontract::common {

// What a caller may act on beyond reporting the message. A code is added
// when a caller must tell one failure from another: it never reads the
// message's words for that.
enum class ErrorCode {
  failed,   // reported as it is
  refused,  // input refused as beyond what its kind allows (a crafted file of an env)
};

struct Error {
  std::string message;  // what went wrong and, where we know it, what to do
  ErrorCode code = ErrorCode::failed;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_state(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : m_state(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return m_state.index() == 0; }
  explicit operator bool() const { return ok(); }

  // The value; asking a failed Result for it is a bug (std::bad_variant_access).
  const T& value() const& { return std::get<0>(m_state); }
  T& value() & { return std::get<0>(m_state); }
  T&& value() && { return std::get<0>(std::move(m_state)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // Why there is no value; "" when there is one.
  const std::string& error() const {
    static const std::string none;
    return ok() ? none : std::get<1>(m_state).message;
  }
  // What kind of failure it is (ErrorCode::failed when there is a value).
  ErrorCode error_code() const { return ok() ? ErrorCode::failed : std::get<1>(m_state).code; }

 private:
  std::variant<T, Error> m_state;
};

}  // namespace envcontract::common
