//===- UnitTest.h - A minimal test harness for effrt ------------*- C++ -*-===//
//
// TEST(name) { ... } registers a test; CHECK* macros throw on failure with
// the file, line, expression and values; effrt-unit-tests runs every test
// (or those whose name contains argv[1]) and prints "N passed, M failed".
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_TEST_UNITTEST_H
#define EFFRT_TEST_UNITTEST_H

#include "effrt/Error.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace effrt::test {

struct TestCase {
  const char *name;
  void (*run)();
};

std::vector<TestCase> &registry();

struct Registrar {
  Registrar(const char *name, void (*run)()) {
    registry().push_back({name, run});
  }
};

/// Thrown by a failed CHECK.
struct CheckFailure {
  std::string message;
};

[[noreturn]] void checkFailed(const char *file, int line,
                              const std::string &what);

template <typename T> std::string show(const T &value) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, std::byte>)
    os << static_cast<int>(value);
  else if constexpr (std::is_enum_v<T>)
    os << static_cast<long long>(value);
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    os << "[";
    for (size_t i = 0; i < value.size(); ++i)
      os << (i ? "," : "") << value[i];
    os << "]";
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    os << "[";
    for (size_t i = 0; i < value.size(); ++i)
      os << (i ? ", " : "") << "'" << value[i] << "'";
    os << "]";
  } else
    os << value;
  return os.str();
}

/// A fresh directory under $TMPDIR (or /tmp) for this run; removed at exit.
const std::string &tempDir();
std::string tempPath(const std::string &name);
std::vector<std::byte> readFileBytes(const std::string &path);
void writeFileBytes(const std::string &path,
                    const std::vector<std::byte> &bytes);
bool fileExists(const std::string &path);
/// Names in a directory (no "." and "..").
std::vector<std::string> listDir(const std::string &path);

} // namespace effrt::test

#define TEST(name)                                                             \
  static void name();                                                          \
  static ::effrt::test::Registrar name##Registrar(#name, name);                \
  static void name()

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      ::effrt::test::checkFailed(__FILE__, __LINE__, "CHECK(" #cond ")");      \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    const auto checkA_ = (a);                                                  \
    const auto checkB_ = (b);                                                  \
    if (!(checkA_ == checkB_))                                                 \
      ::effrt::test::checkFailed(                                              \
          __FILE__, __LINE__,                                                  \
          "CHECK_EQ(" #a ", " #b "): " + ::effrt::test::show(checkA_) +        \
              " != " + ::effrt::test::show(checkB_));                          \
  } while (0)

/// Checks that `stmt` throws effrt::Error whose message contains `substr`.
#define CHECK_ERROR(stmt, substr)                                              \
  do {                                                                         \
    bool threw_ = false;                                                       \
    try {                                                                      \
      stmt;                                                                    \
    } catch (const ::effrt::Error &e) {                                        \
      threw_ = true;                                                           \
      std::string message_ = e.what();                                         \
      if (message_.find(substr) == std::string::npos)                          \
        ::effrt::test::checkFailed(__FILE__, __LINE__,                         \
                                   "CHECK_ERROR(" #stmt "): message '" +       \
                                       message_ + "' lacks '" + (substr) +     \
                                       "'");                                   \
      if (message_.find('\n') != std::string::npos)                            \
        ::effrt::test::checkFailed(__FILE__, __LINE__,                         \
                                   "CHECK_ERROR(" #stmt                        \
                                   "): message is not one line");              \
    }                                                                          \
    if (!threw_)                                                               \
      ::effrt::test::checkFailed(__FILE__, __LINE__,                           \
                                 "CHECK_ERROR(" #stmt "): nothing thrown");    \
  } while (0)

#endif // EFFRT_TEST_UNITTEST_H
