//===- ExactDouble.cpp - a double option that prints exactly --------------===//

#include "effopt/Support/ExactDouble.h"

#include <cstdio>
#include <cstdlib>

std::string effopt::formatExactDouble(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

bool llvm::cl::parser<effopt::ExactDouble>::parse(Option &option, StringRef,
                                                  StringRef arg,
                                                  effopt::ExactDouble &value) {
  double parsed;
  if (arg.trim().getAsDouble(parsed))
    return option.error("'" + arg + "' is not a number");
  value = parsed;
  return false;
}
