//===- TrainConfig.cpp - effc --config train.toml -------------------------===//

#include "TrainConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

// toml++ header-only, reporting errors through parse_result: effc is built
// without C++ exceptions, like LLVM.
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>

using namespace llvm;

namespace effc {
namespace {

Error configError(StringRef path, const toml::source_region &where,
                  const Twine &message) {
  std::string text =
      where.begin.line ? formatv("{0}:{1}: ", path, where.begin.line).str()
                       : (path + ": ").str();
  return createStringError(inconvertibleErrorCode(), text + message.str());
}

/// The command-line spelling of one scalar TOML value, or an empty optional
/// for tables, arrays and dates (no effc flag takes those).
std::optional<std::string> scalarText(const toml::node &node) {
  if (auto v = node.as_string())
    return std::string(v->get());
  if (auto v = node.as_boolean())
    return std::string(v->get() ? "true" : "false");
  if (auto v = node.as_integer())
    return std::to_string(v->get());
  if (auto v = node.as_floating_point()) {
    // The shortest text that reads back as the same double.
    char text[64];
    for (int digits = 15; digits <= 17; ++digits) {
      snprintf(text, sizeof text, "%.*g", digits, v->get());
      if (strtod(text, nullptr) == v->get())
        break;
    }
    return std::string(text);
  }
  return std::nullopt;
}

/// Adds `value` to `option` through the option's own parser. The parser
/// reports a bad value on stderr naming a command-line flag; the caller
/// reports it naming the config line instead, so stderr is muted meanwhile.
bool addQuietly(cl::Option &option, StringRef value) {
  errs().flush();
  int saved = ::dup(STDERR_FILENO);
  int null = ::open("/dev/null", O_WRONLY);
  if (saved >= 0 && null >= 0)
    ::dup2(null, STDERR_FILENO);
  bool failed = option.addOccurrence(/*pos=*/0, option.ArgStr, value);
  errs().flush();
  if (saved >= 0 && null >= 0)
    ::dup2(saved, STDERR_FILENO);
  if (null >= 0)
    ::close(null);
  if (saved >= 0)
    ::close(saved);
  return failed;
}

class ConfigApplier {
public:
  ConfigApplier(StringRef path, const cl::OptionCategory &category,
                cl::Option &model)
      : path(path), category(category), model(model) {}

  Error apply(const toml::table &root) {
    for (auto &&[rawKey, node] : root) {
      std::string key(rawKey.str());
      std::replace(key.begin(), key.end(), '_', '-');
      const toml::source_region &where = node.source();
      if (key == "shape") {
        if (Error e = applyShapes(node))
          return e;
        continue;
      }
      cl::Option *option = lookup(key);
      if (!option)
        return configError(path, where,
                           "unknown key '" + key +
                               "' (keys are effc's flags, see effc --help)");
      if (option->getNumOccurrences())
        continue; // The command line wins.
      if (const toml::array *list = node.as_array()) {
        if (option->getNumOccurrencesFlag() != cl::ZeroOrMore &&
            option->getNumOccurrencesFlag() != cl::OneOrMore)
          return configError(path, where,
                             "'" + key + "' takes one value, not a list");
        for (const toml::node &element : *list)
          if (Error e = set(*option, key, element))
            return e;
        continue;
      }
      if (Error e = set(*option, key, node))
        return e;
    }
    return Error::success();
  }

private:
  cl::Option *lookup(StringRef key) {
    if (key == "model")
      return &model;
    StringRef flag = key == "output" ? StringRef("o") : key;
    auto &options = cl::getRegisteredOptions();
    auto it = options.find(flag);
    if (it == options.end() || it->second == &model)
      return nullptr;
    // Only effc's own flags: LLVM's global options are not a training config.
    if (!is_contained(it->second->Categories, &category))
      return nullptr;
    return it->second;
  }

  Error set(cl::Option &option, StringRef key, const toml::node &node) {
    std::optional<std::string> text = scalarText(node);
    if (!text)
      return configError(path, node.source(),
                         "'" + key + "' must be a string, number or boolean");
    if (addQuietly(option, *text))
      return configError(path, node.source(),
                         "'" + key + "': invalid value '" + *text + "'");
    return Error::success();
  }

  Error applyShapes(const toml::node &node) {
    const toml::table *table = node.as_table();
    if (!table)
      return configError(path, node.source(),
                         "'shape' must be a table of input = [d0, d1, ...]");
    cl::Option *shape = lookup("shape");
    if (!shape)
      return configError(path, node.source(), "effc has no --shape flag");
    if (shape->getNumOccurrences())
      return Error::success();
    for (auto &&[name, dims] : *table) {
      const toml::array *list = dims.as_array();
      if (!list || list->empty())
        return configError(path, dims.source(),
                           "shape of '" + std::string(name.str()) +
                               "' must be a list of dimensions");
      std::string spec = std::string(name.str()) + "=";
      for (auto [i, dim] : llvm::enumerate(*list)) {
        auto value = dim.as_integer();
        if (!value || value->get() <= 0)
          return configError(path, dim.source(),
                             "shape of '" + std::string(name.str()) +
                                 "': dimensions must be positive integers");
        spec += (i ? "," : "") + std::to_string(value->get());
      }
      if (addQuietly(*shape, spec))
        return configError(path, dims.source(), "invalid shape '" + spec + "'");
    }
    return Error::success();
  }

  StringRef path;
  const cl::OptionCategory &category;
  cl::Option &model;
};

} // namespace

Error applyTrainConfig(StringRef path, const cl::OptionCategory &category,
                       cl::Option &model) {
  toml::parse_result parsed = toml::parse_file(std::string_view(path.data(), path.size()));
  if (!parsed) {
    const toml::parse_error &error = parsed.error();
    std::string what(error.description());
    if (what.find("File could not be opened") != std::string::npos)
      return createStringError(inconvertibleErrorCode(),
                               path + ": cannot read the config file");
    return configError(path, error.source(), "invalid TOML: " + what);
  }
  return ConfigApplier(path, category, model).apply(parsed.table());
}

} // namespace effc
