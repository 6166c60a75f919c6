//===- Error.h - The runtime's one error type -------------------*- C++ -*-===//
//
// Every failure the runtime can report (bad input files, I/O errors, misuse
// of an API) is thrown as an effrt::Error whose message is one line that
// names the file and says what is wrong, e.g.
//
//   data.npz: array 'x' has shape [10,64], expected [*,64] with float32
//
// Tools catch it at the top, print the message on stderr and exit 1.
//
//===----------------------------------------------------------------------===//

#ifndef EFFRT_ERROR_H
#define EFFRT_ERROR_H

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace effrt {

/// The runtime's only exception type. The message is forced onto one line:
/// control characters (which could come from names inside a corrupt file)
/// are replaced, so a tool can always print it as a single stderr line.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message);
};

/// Throws an Error whose message is the concatenation of `parts`.
template <typename... Parts> [[noreturn]] void fail(const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

/// Quotes a name taken from a file for an error message: 'name', with
/// non-printable bytes escaped and very long names shortened.
std::string quoteName(std::string_view name);

/// The text of errno `err` (strerror), for I/O error messages.
std::string errnoMessage(int err);

} // namespace effrt

#endif // EFFRT_ERROR_H
