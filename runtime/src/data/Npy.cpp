//===- Npy.cpp - The .npy array format ------------------------------------===//

#include "effrt/Npy.h"

#include "effrt/Error.h"
#include "effrt/File.h"

#include <cstring>
#include <optional>

using namespace effrt;

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;
/// numpy's own readers cap the header at 10000 bytes by default; anything
/// near this is not an array effrt can read, and the cap bounds allocation.
static constexpr uint64_t kMaxHeaderLength = 1 << 20;

static uint32_t readLE(const std::byte *p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

NpyPreamble effrt::parseNpyPreamble(const std::byte *data, size_t size,
                                    const std::string &what) {
  if (size < kMagicSize || std::memcmp(data, kMagic, kMagicSize) != 0)
    fail(what, ": not an .npy array (bad magic)");
  if (size < 10)
    fail(what, ": truncated .npy header");
  NpyPreamble preamble;
  int major = static_cast<int>(data[6]), minor = static_cast<int>(data[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail(what, ": unsupported .npy version ", major, ".", minor);
  preamble.majorVersion = major;
  if (major == 1) {
    preamble.size = 10;
    preamble.headerLength = readLE(data + 8, 2);
  } else {
    if (size < 12)
      fail(what, ": truncated .npy header");
    preamble.size = 12;
    preamble.headerLength = readLE(data + 8, 4);
  }
  if (preamble.headerLength > kMaxHeaderLength)
    fail(what, ": .npy header of ", preamble.headerLength,
         " bytes is too large");
  return preamble;
}

namespace {
/// Parses the Python dict literal numpy writes as the header.
class DictParser {
public:
  DictParser(std::string_view text, const std::string &what)
      : text_(text), what_(what) {}

  NpyHeader parse(const NpyPreamble &preamble) {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<Shape> shape;
    skipSpace();
    expect('{', "the header dict");
    skipSpace();
    while (!consume('}')) {
      std::string key = parseString("a key");
      skipSpace();
      expect(':', "':' after a key");
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          fail(what_, ": structured dtypes are not supported");
        if (descr)
          duplicate(key);
        descr = parseString("the descr value");
      } else if (key == "fortran_order") {
        if (fortran)
          duplicate(key);
        fortran = parseBool();
      } else if (key == "shape") {
        if (shape)
          duplicate(key);
        shape = parseShape();
      } else {
        fail(what_, ": unexpected key ", quoteName(key), " in the .npy header");
      }
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != '}')
        bad("',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size())
      bad("the end of the header");
    if (!descr || !fortran || !shape)
      fail(what_, ": .npy header lacks '",
           !descr     ? "descr"
           : !fortran ? "fortran_order"
                      : "shape",
           "'");

    NpyHeader header;
    header.dtype = parseDType(*descr);
    header.shape = std::move(*shape);
    if (*fortran) {
      // Fortran and C order lay out the same bytes when at most one dim
      // exceeds 1.
      int big = 0;
      for (int64_t d : header.shape)
        big += d > 1;
      if (big > 1)
        fail(what_, ": array is stored in Fortran order, which is not "
                    "supported; save np.ascontiguousarray(a) instead");
    }
    std::optional<uint64_t> bytes = checkedByteSize(header.dtype, header.shape);
    if (!bytes)
      fail(what_, ": shape ", formatShape(header.shape), " of ",
           dtypeName(header.dtype), " is too large");
    header.dataSize = *bytes;
    header.dataOffset = preamble.size + preamble.headerLength;
    return header;
  }

private:
  [[noreturn]] void bad(const char *expected) {
    fail(what_, ": malformed .npy header: expected ", expected, " at byte ",
         pos_);
  }
  [[noreturn]] void duplicate(const std::string &key) {
    fail(what_, ": .npy header repeats ", quoteName(key));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size())
      return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char *expected) {
    if (!consume(c))
      bad(expected);
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  std::string parseString(const char *expected) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      bad(expected);
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size())
          break;
        c = text_[pos_++];
      }
      out += c;
    }
    if (!consume(quote))
      bad("the end of a string");
    return out;
  }

  bool parseBool() {
    if (consumeWord("True"))
      return true;
    if (consumeWord("False"))
      return false;
    bad("True or False");
  }

  int64_t parseInt() {
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (__builtin_mul_overflow(value, 10, &value) ||
          __builtin_add_overflow(value, text_[pos_] - '0', &value))
        fail(what_, ": .npy shape dimension is too large");
      ++pos_;
    }
    if (pos_ == start)
      bad("a non-negative integer dimension");
    consume('L'); // Python 2 longs, written by very old numpy.
    return value;
  }

  Shape parseShape() {
    Shape shape;
    expect('(', "a shape tuple");
    skipSpace();
    while (!consume(')')) {
      shape.push_back(parseInt());
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != ')')
        bad("',' or ')' in the shape");
    }
    return shape;
  }

  DType parseDType(const std::string &descr) {
    if (std::optional<DType> dtype = dtypeFromNumpyCode(descr))
      return *dtype;
    if (!descr.empty() && descr[0] == '>') {
      std::string little = "<" + descr.substr(1);
      if (dtypeFromNumpyCode(little))
        fail(what_, ": big-endian dtype ", quoteName(descr),
             " is not supported; save a.astype(", quoteName(little), ")");
    }
    std::string supported;
    for (DType d : kAllDTypes)
      if (!dtypeNumpyCode(d).empty())
        supported += std::string(" ") + std::string(dtypeNumpyCode(d));
    fail(what_, ": dtype ", quoteName(descr),
         " is not supported (supported:", supported, ")");
  }

  std::string_view text_;
  const std::string &what_;
  size_t pos_ = 0;
};
} // namespace

NpyHeader effrt::parseNpyHeaderDict(std::string_view dict,
                                    const NpyPreamble &preamble,
                                    const std::string &what) {
  return DictParser(dict, what).parse(preamble);
}

NpyHeader effrt::parseNpyHeader(const std::byte *data, size_t size,
                                const std::string &what) {
  NpyPreamble preamble = parseNpyPreamble(data, size, what);
  if (size - preamble.size < preamble.headerLength)
    fail(what, ": truncated .npy header (needs ",
         preamble.size + preamble.headerLength, " bytes, has ", size, ")");
  std::string_view dict(reinterpret_cast<const char *>(data + preamble.size),
                        static_cast<size_t>(preamble.headerLength));
  return parseNpyHeaderDict(dict, preamble, what);
}

std::string effrt::formatNpyHeader(DType dtype, const Shape &shape) {
  std::string_view code = dtypeNumpyCode(dtype);
  if (code.empty())
    fail(dtypeName(dtype), " has no numpy dtype and cannot be stored in .npy");
  if (!checkedByteSize(dtype, shape))
    fail("shape ", formatShape(shape), " of ", dtypeName(dtype),
         " is invalid or too large");
  std::string dict = "{'descr': '" + std::string(code) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      dict += ", ";
    dict += std::to_string(shape[i]);
  }
  dict += shape.size() == 1 ? ",), }" : "), }";

  size_t preambleSize = 10;
  auto paddedLength = [&] {
    size_t total = preambleSize + dict.size() + 1;
    return (total + 63) / 64 * 64 - preambleSize;
  };
  if (paddedLength() > 0xffff)
    preambleSize = 12;
  size_t headerLength = paddedLength();
  if (headerLength > kMaxHeaderLength)
    fail("shape ", formatShape(shape), " has too many dimensions for .npy");

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(preambleSize == 10 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < preambleSize - 8; ++i)
    out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += dict;
  out.append(headerLength - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

Tensor effrt::readNpy(const std::string &path) {
  SharedBytes bytes = mapFile(path);
  NpyHeader header = parseNpyHeader(bytes.data, bytes.size, path);
  uint64_t available = bytes.size - header.dataOffset;
  if (available != header.dataSize)
    fail(path, ": array of shape ", formatShape(header.shape), " and dtype ",
         dtypeName(header.dtype), " needs ", header.dataSize,
         " bytes of data, file has ", available);
  return Tensor::view(header.dtype, header.shape,
                      bytes.data + header.dataOffset, bytes.owner);
}
