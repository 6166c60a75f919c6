//===- Error.cpp - The runtime's one error type ---------------------------===//

#include "effrt/Error.h"

#include <cstring>

using namespace effrt;

static std::string oneLine(const std::string &message) {
  std::string out = message;
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = ' ';
  return out;
}

Error::Error(const std::string &message)
    : std::runtime_error(oneLine(message)) {}

std::string effrt::quoteName(std::string_view name) {
  constexpr size_t kMaxShown = 200;
  std::string out = "'";
  size_t shown = 0;
  for (char c : name) {
    if (shown++ == kMaxShown) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string effrt::errnoMessage(int err) { return std::strerror(err); }
