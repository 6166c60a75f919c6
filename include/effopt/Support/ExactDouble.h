//===- ExactDouble.h - a double option that prints exactly ------*- C++ -*-===//
//
// MLIR prints `double` pass options as raw_ostream does, with 7 significant
// digits: a pipeline printed with lr=0.00123456789 replays with 1.234568e-03
// and trains differently. Options of type ExactDouble print the shortest text
// that reads back as the same double, so a printed pipeline (effc
// --print-pipeline, the .effx manifest) replays bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_SUPPORT_EXACTDOUBLE_H
#define EFFOPT_SUPPORT_EXACTDOUBLE_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace effopt {

/// A double that converts to and from `double` and prints exactly.
struct ExactDouble {
  double value = 0;
  ExactDouble() = default;
  ExactDouble(double value) : value(value) {}
  operator double() const { return value; }
};

/// The shortest decimal text (at most 17 significant digits) that reads
/// back as `value`.
std::string formatExactDouble(double value);

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, ExactDouble d) {
  return os << formatExactDouble(d.value);
}

} // namespace effopt

namespace llvm::cl {
/// Parses pass options of type ExactDouble as decimal or scientific
/// numbers, like `double` options.
template <>
class parser<effopt::ExactDouble> : public basic_parser<effopt::ExactDouble> {
public:
  parser(Option &option) : basic_parser(option) {}
  bool parse(Option &option, StringRef argName, StringRef arg,
             effopt::ExactDouble &value);
  StringRef getValueName() const override { return "number"; }
  void printOptionDiff(const Option &option, effopt::ExactDouble value,
                       const OptionValue<effopt::ExactDouble> &,
                       size_t globalWidth) const {
    printOptionName(option, globalWidth);
    outs() << "= " << value << "\n";
  }
  static void print(raw_ostream &os, const effopt::ExactDouble &value) {
    os << value;
  }
};
} // namespace llvm::cl

#endif // EFFOPT_SUPPORT_EXACTDOUBLE_H
