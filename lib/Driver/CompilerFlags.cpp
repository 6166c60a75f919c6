//===- CompilerFlags.cpp - effc's flags by name into CompileOptions -------===//

#include "effopt/Driver/CompilerFlags.h"

#include "effopt/Driver/MemoryBudget.h"

#include "llvm/ADT/SmallVector.h"

using namespace llvm;

namespace effopt {

static Error flagError(StringRef name, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           "--" + name + ": " + message);
}

static Error parseShape(StringRef spec, ONNXImportOptions &options) {
  auto [input, dims] = spec.split('=');
  if (input.empty() || dims.empty())
    return flagError("shape", "expects name=d0,d1,..., got '" + spec + "'");
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  dims.split(parts, ',');
  for (StringRef part : parts) {
    int64_t dim;
    if (part.trim().getAsInteger(10, dim) || dim <= 0)
      return flagError("shape", input + ": '" + part +
                                    "' is not a positive integer");
    shape.push_back(dim);
  }
  options.inputShapes[input] = shape;
  return Error::success();
}

/// --lora rank=R,alpha=A,dropout=P,targets=REGEX,seed=S (every key
/// optional; "" or "on": peft's defaults). targets= takes the rest of the
/// text, commas included, so a regex like (a|b){1,2} needs no quoting.
Error applyLoraSpec(TrainStepOptions &step, StringRef spec) {
  step.lora = true;
  spec = spec.trim();
  if (spec.empty() || spec == "on" || spec == "true")
    return Error::success();
  while (!spec.empty()) {
    auto [key, rest] = spec.split('=');
    key = key.trim();
    if (key == "targets") {
      step.loraTargets = rest.str();
      return Error::success();
    }
    auto [text, tail] = rest.split(',');
    spec = tail;
    text = text.trim();
    if (key == "rank" || key == "r") {
      int64_t rank;
      if (text.getAsInteger(10, rank) || rank < 1)
        return flagError("lora", "rank must be a positive integer, got '" +
                                     text + "'");
      step.loraRank = rank;
    } else if (key == "alpha" || key == "lora_alpha") {
      double alpha;
      if (text.getAsDouble(alpha))
        return flagError("lora", "alpha must be a number, got '" + text + "'");
      step.loraAlpha = alpha;
    } else if (key == "dropout" || key == "lora_dropout") {
      double dropout;
      if (text.getAsDouble(dropout) || !(dropout >= 0 && dropout < 1))
        return flagError("lora", "dropout must be a number in [0, 1), got '" +
                                     text + "'");
      step.loraDropout = dropout;
    } else if (key == "seed") {
      int64_t seed;
      if (text.getAsInteger(10, seed))
        return flagError("lora", "seed must be an integer, got '" + text + "'");
      step.loraSeed = seed;
    } else {
      return flagError("lora", "unknown key '" + key +
                                   "' (expected rank=R,alpha=A,dropout=P,"
                                   "seed=S,targets=REGEX)");
    }
  }
  return Error::success();
}

Error applyCompilerFlag(CompileOptions &options, StringRef name,
                        StringRef value) {
  if (name == "shape")
    return parseShape(value, options.import);
  if (name == "freeze") {
    options.import.freezeRegex = value.str();
    return Error::success();
  }
  if (name == "shapes-only") {
    if (value == "true" || value == "1" || value.empty())
      options.import.shapesOnly = true;
    else if (value == "false" || value == "0")
      options.import.shapesOnly = false;
    else
      return flagError(name, "must be true or false, got '" + value + "'");
    return Error::success();
  }
  if (name == "lora")
    return applyLoraSpec(options.step, value);
  if (name == "qlora") {
    // effc --qlora: the frozen base weights as NF4 (--quantize-frozen nf4).
    if (value == "true" || value == "1" || value.empty())
      options.step.quantizeFrozen = FrozenStorage::NF4;
    else if (value != "false" && value != "0")
      return flagError(name, "must be true or false, got '" + value + "'");
    return Error::success();
  }
  if (name == "memory-budget") {
    std::optional<int64_t> bytes = parseBytes(value);
    if (!bytes)
      return flagError(name, "'" + value +
                                 "' is not a byte count (like 3000000, 512K, "
                                 "1.5M, 2G)");
    options.memoryBudget = *bytes;
    return Error::success();
  }
  if (name == "remat" && value.starts_with("budget:")) {
    std::optional<int64_t> bytes =
        parseBytes(value.drop_front(strlen("budget:")));
    if (!bytes)
      return flagError(name, value + ": the budget is not a byte count");
    options.rematBudget = *bytes;
    options.step.remat = RematPolicy::Budget;
    return Error::success();
  }
  if (name == "mask-like") {
    if (value == "warn")
      options.maskLike = MaskLikePolicy::Warn;
    else if (value == "error")
      options.maskLike = MaskLikePolicy::Error;
    else if (value == "freeze")
      options.maskLike = MaskLikePolicy::Freeze;
    else
      return flagError(name, "must be warn, error or freeze, got '" + value +
                                 "'");
    return Error::success();
  }
  if (name == "arch" || name == "cpu") {
    options.codegen.arch = value.str();
    return Error::success();
  }
  if (name == "allow-tf32") {
    if (value != "true" && value != "false" && value != "1" && value != "0")
      return flagError(name, "must be true or false, got '" + value + "'");
    options.codegen.allowTf32 = value == "true" || value == "1";
    return Error::success();
  }
  if (name == "emulated-order") {
    if (value != "ascending" && value != "descending")
      return flagError(name, "must be ascending or descending, got '" +
                                 value + "'");
    options.codegen.emulateDescending = value == "descending";
    return Error::success();
  }
  if (name == "opt-level") {
    unsigned level;
    if (value.getAsInteger(10, level) || level > 3)
      return flagError(name, "must be 0, 1, 2 or 3, got '" + value + "'");
    options.codegen.optLevel = level;
    return Error::success();
  }
  // effc's --loss-scale "" is the pipeline's auto.
  if (name == "loss-scale" && value.empty())
    value = "auto";
  // Everything else is an option of the pipeline, parsed by its own
  // declaration; its complaint ("no such option", "Cannot find option
  // named 'lrr'!", "'x' value invalid for ...") becomes the message.
  std::string text = (name + "=\"" + value + "\"").str();
  std::string complaint;
  raw_string_ostream os(complaint);
  if (succeeded(options.step.parseFromString(text, os)))
    return Error::success();
  StringRef message = StringRef(complaint).trim().split('\n').first.trim();
  if (message.contains("no such option"))
    return flagError(name, "no such option (effc --help lists them)");
  if (message.empty())
    return flagError(name, "unknown option or bad value '" + value + "'");
  return flagError(name, message);
}

} // namespace effopt
