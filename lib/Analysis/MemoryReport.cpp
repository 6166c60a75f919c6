//===- MemoryReport.cpp - where the bytes of a training step go -----------===//

#include "effopt/Analysis/MemoryReport.h"

#include "effopt/Dialect/Eff/IR/Provenance.h"

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace effopt {

static constexpr MemoryCategory kAllCategories[] = {
    MemoryCategory::Parameters,  MemoryCategory::Buffers,
    MemoryCategory::OptimizerState, MemoryCategory::Gradients,
    MemoryCategory::Activations, MemoryCategory::Temporaries,
    MemoryCategory::Workspace,   MemoryCategory::Batch};

StringRef categoryName(MemoryCategory category) {
  switch (category) {
  case MemoryCategory::Parameters:
    return "parameters";
  case MemoryCategory::Buffers:
    return "buffers";
  case MemoryCategory::OptimizerState:
    return "optimizer state";
  case MemoryCategory::Gradients:
    return "gradients";
  case MemoryCategory::Activations:
    return "activations";
  case MemoryCategory::Temporaries:
    return "temporaries";
  case MemoryCategory::Workspace:
    return "workspace";
  case MemoryCategory::Batch:
    return "batch and loss";
  }
  llvm_unreachable("unknown category");
}

static std::optional<MemoryCategory> parseCategory(StringRef name) {
  for (MemoryCategory c : kAllCategories)
    if (categoryName(c) == name)
      return c;
  return std::nullopt;
}

static bool isPersistent(MemoryCategory c) {
  return c == MemoryCategory::Parameters || c == MemoryCategory::Buffers ||
         c == MemoryCategory::OptimizerState || c == MemoryCategory::Batch;
}

/// "node (provenance)" for an op of the schedule.
static std::string describeOp(Operation *op) {
  std::string node = eff::nodeNameOf(op->getLoc());
  StringRef provenance = eff::provenanceName(eff::provenanceOf(op->getLoc()));
  if (node.empty())
    node = op->getName().getStringRef().str();
  return node + " (" + provenance.str() + ")";
}

/// The op at the last schedule position reading `alloc` or a view of it.
static Operation *lastReader(memref::AllocOp alloc,
                             const DenseMap<Operation *, int64_t> &position) {
  Operation *last = nullptr;
  int64_t lastAt = -1;
  SmallVector<Value> worklist{alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      // The innermost op of the schedule holding the use.
      Operation *op = use.getOwner();
      while (op && !position.count(op))
        op = op->getParentOp();
      if (op && position.lookup(op) > lastAt) {
        last = op;
        lastAt = position.lookup(op);
      }
      if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner()))
        if (view.getViewSource() == v)
          llvm::append_range(worklist, use.getOwner()->getResults());
    }
  }
  return last;
}

MemoryReport MemoryReport::fromPlan(const MemoryPlan &plan) {
  MemoryReport report;
  ArrayRef<Operation *> schedule = plan.schedule();
  report.scheduleLength = static_cast<int64_t>(schedule.size());
  report.arena = plan.arenaBytes();
  report.peakAt = plan.peak().first;
  if (report.peakAt >= 0 && report.peakAt < report.scheduleLength)
    report.peakOp = describeOp(schedule[report.peakAt]);
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(schedule))
    position[op] = static_cast<int64_t>(i);

  for (const PlannedBuffer &planned : plan.buffers()) {
    ReportBuffer buffer;
    memref::AllocOp alloc = planned.alloc;
    Location loc = alloc.getLoc();
    eff::Provenance provenance = eff::provenanceOf(loc);
    buffer.node = eff::nodeNameOf(loc);
    buffer.provenance = eff::provenanceName(provenance).str();
    llvm::raw_string_ostream(buffer.type) << alloc.getType();
    buffer.bytes = planned.bytes;
    buffer.offset = planned.offset;
    buffer.first = planned.first;
    buffer.last = planned.last;
    buffer.inPlace = planned.inPlace;
    eff::Provenance readerProvenance = eff::Provenance::Forward;
    if (Operation *reader = lastReader(alloc, position)) {
      buffer.lastUser = describeOp(reader);
      readerProvenance = eff::provenanceOf(reader->getLoc());
    }
    // A forward value is an activation when the backward keeps it alive:
    // tagged saved by eff-autodiff, or (through a view the tag did not
    // reach) read last by the backward or the optimizer.
    // A recomputed value is a temporary of the backward by construction.
    bool forwardValue = provenance == eff::Provenance::Forward ||
                        provenance == eff::Provenance::Saved ||
                        provenance == eff::Provenance::Cast;
    bool readLater = readerProvenance == eff::Provenance::Backward ||
                     readerProvenance == eff::Provenance::Gradient ||
                     readerProvenance == eff::Provenance::Optimizer;
    // Scratch of a library call: attention's tiles (eff.workspace on the
    // allocation) and NF4 dequantization tiles (workspace provenance).
    if (alloc->hasAttr(kWorkspaceAttrName) ||
        provenance == eff::Provenance::Workspace)
      buffer.category = MemoryCategory::Workspace;
    else if (provenance == eff::Provenance::Gradient)
      buffer.category = MemoryCategory::Gradients;
    else if (provenance == eff::Provenance::Saved ||
             (forwardValue && readLater))
      buffer.category = MemoryCategory::Activations;
    else
      buffer.category = MemoryCategory::Temporaries;
    report.buffers.push_back(std::move(buffer));
  }
  return report;
}

void MemoryReport::setRegions(int64_t stateBytes, int64_t ioBytes,
                              std::vector<ReportTensor> persistent,
                              int64_t hostBytes) {
  state = stateBytes;
  io = ioBytes;
  host = hostBytes;
  tensors = std::move(persistent);
}

void MemoryReport::setLibraryWorkspace(std::string name, int64_t bytes) {
  workspace = bytes;
  if (bytes)
    tensors.push_back({std::move(name), MemoryCategory::Workspace, bytes, 0});
}

int64_t MemoryReport::peakLiveBytes() const {
  int64_t live = 0;
  for (const ReportBuffer &b : buffers)
    if (b.liveAt(peakAt))
      live += b.bytes;
  return live;
}

std::vector<int64_t> MemoryReport::bytesAtPeak() const {
  std::vector<int64_t> bytes(kNumMemoryCategories, 0);
  for (const ReportTensor &t : tensors)
    if (!t.onHost)
      bytes[static_cast<int>(t.category)] += t.bytes;
  for (const ReportBuffer &b : buffers)
    if (b.liveAt(peakAt))
      bytes[static_cast<int>(b.category)] += b.bytes;
  return bytes;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// Whether `part` is a module index ("3") or ends in one ("layers.3").
static bool endsInIndex(StringRef part) {
  StringRef index = part.rsplit('.').second;
  if (index.empty())
    index = part;
  return !index.empty() && llvm::all_of(index, llvm::isDigit);
}

/// The layer a node or tensor belongs to: the first repeated scope, i.e.
/// the first scope of an ONNX node name that ends in an index
/// ("/blocks.3/attn/MatMul" -> "blocks.3", "/model/layers.3/mlp/Gemm" ->
/// "layers.3", "/layers/2/fc/Gemm" -> "layers.2"), or the module path of a
/// state tensor up to its first index ("blocks.3.attn.weight",
/// "optimizer.model.layers.3.ln.bias.exp_avg" -> the same layers); without
/// an index, the first scope ("/lm_head/Gemm", "lm_head.weight" ->
/// "lm_head"), and "(top)" for names without a scope.
static std::string layerOf(StringRef name) {
  if (name.empty())
    return "(unknown)";
  if (name.consume_front("/")) {
    SmallVector<StringRef> scopes;
    name.split(scopes, '/');
    scopes.pop_back(); // the op's own name
    for (auto [i, scope] : llvm::enumerate(scopes)) {
      if (!endsInIndex(scope))
        continue;
      if (scope.contains('.') || i == 0)
        return scope.str();
      return (scopes[i - 1] + "." + scope).str();
    }
    return scopes.empty() ? "(top)" : scopes.front().str();
  }
  name.consume_front("optimizer.");
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  parts.pop_back(); // the tensor's own name
  for (auto [i, part] : llvm::enumerate(parts))
    if (i > 0 && !part.empty() && llvm::all_of(part, llvm::isDigit))
      return (parts[i - 1] + "." + part).str();
  return parts.empty() ? "(top)" : parts.front().str();
}

llvm::json::Value MemoryReport::toJSON() const {
  llvm::json::Array bufferArray;
  for (const ReportBuffer &b : buffers)
    bufferArray.push_back(llvm::json::Object{
        {"node", b.node},
        {"provenance", b.provenance},
        {"category", categoryName(b.category)},
        {"type", b.type},
        {"bytes", b.bytes},
        {"offset", b.offset},
        {"first", b.first},
        {"last", b.last},
        {"in_place", b.inPlace},
        {"last_user", b.lastUser},
        {"layer", layerOf(b.node)}});
  llvm::json::Array tensorArray;
  for (const ReportTensor &t : tensors) {
    llvm::json::Object o{{"name", t.name},
                         {"category", categoryName(t.category)},
                         {"bytes", t.bytes},
                         {"offset", t.offset},
                         {"layer", layerOf(t.name)}};
    if (t.onHost)
      o["region"] = "host";
    tensorArray.push_back(std::move(o));
  }
  llvm::json::Object byCategory;
  std::vector<int64_t> atPeak = bytesAtPeak();
  for (MemoryCategory c : kAllCategories)
    byCategory[categoryName(c)] = atPeak[static_cast<int>(c)];
  llvm::json::Object regions{{"state", state}, {"arena", arena}, {"io", io}};
  if (workspace)
    regions["workspace"] = workspace;
  if (host)
    regions["host"] = host;
  if (hostStaging)
    regions["host_staging"] = hostStaging;
  return llvm::json::Object{
      {"title", title},
      {"total_bytes", totalBytes()},
      {"device_bytes", totalBytes()},
      {"host_bytes", host},
      {"regions", std::move(regions)},
      {"schedule_length", scheduleLength},
      {"peak",
       llvm::json::Object{{"position", peakAt},
                          {"op", peakOp},
                          {"arena_live_bytes", peakLiveBytes()},
                          {"bytes", state + io + workspace + peakLiveBytes()},
                          {"by_category", std::move(byCategory)}}},
      {"buffers", std::move(bufferArray)},
      {"tensors", std::move(tensorArray)}};
}

llvm::Expected<MemoryReport> MemoryReport::fromJSON(StringRef text) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return parsed.takeError();
  auto bad = [](const Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "memory report: " + what);
  };
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return bad("not an object");
  MemoryReport report;
  auto integer = [](const llvm::json::Object &o, StringRef key) {
    return o.getInteger(key).value_or(0);
  };
  auto string = [](const llvm::json::Object &o, StringRef key) {
    return o.getString(key).value_or("").str();
  };
  report.title = string(*root, "title");
  report.scheduleLength = integer(*root, "schedule_length");
  if (const llvm::json::Object *regions = root->getObject("regions")) {
    report.state = integer(*regions, "state");
    report.arena = integer(*regions, "arena");
    report.io = integer(*regions, "io");
    report.workspace = integer(*regions, "workspace");
    report.host = integer(*regions, "host");
    report.hostStaging = integer(*regions, "host_staging");
  }
  if (const llvm::json::Object *peak = root->getObject("peak")) {
    report.peakAt = integer(*peak, "position");
    report.peakOp = string(*peak, "op");
  }
  if (const llvm::json::Array *array = root->getArray("buffers"))
    for (const llvm::json::Value &value : *array) {
      const llvm::json::Object *o = value.getAsObject();
      if (!o)
        return bad("a buffer is not an object");
      ReportBuffer b;
      b.node = string(*o, "node");
      b.provenance = string(*o, "provenance");
      std::optional<MemoryCategory> category =
          parseCategory(string(*o, "category"));
      if (!category)
        return bad("unknown category '" + string(*o, "category") + "'");
      b.category = *category;
      b.type = string(*o, "type");
      b.bytes = integer(*o, "bytes");
      b.offset = integer(*o, "offset");
      b.first = integer(*o, "first");
      b.last = integer(*o, "last");
      b.inPlace = o->getBoolean("in_place").value_or(false);
      b.lastUser = string(*o, "last_user");
      report.buffers.push_back(std::move(b));
    }
  if (const llvm::json::Array *array = root->getArray("tensors"))
    for (const llvm::json::Value &value : *array) {
      const llvm::json::Object *o = value.getAsObject();
      if (!o)
        return bad("a tensor is not an object");
      std::optional<MemoryCategory> category =
          parseCategory(string(*o, "category"));
      if (!category)
        return bad("unknown category '" + string(*o, "category") + "'");
      report.tensors.push_back(
          {string(*o, "name"), *category, integer(*o, "bytes"),
           integer(*o, "offset"), string(*o, "region") == "host"});
    }
  return report;
}

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

static std::string withCommas(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t(1) << 30))
    return llvm::formatv("{0:f2} GiB", bytes / double(1 << 30));
  if (bytes >= (1 << 20))
    return llvm::formatv("{0:f2} MiB", bytes / double(1 << 20));
  if (bytes >= (1 << 10))
    return llvm::formatv("{0:f1} KiB", bytes / double(1 << 10));
  return std::to_string(bytes) + " B";
}

void MemoryReport::printTable(llvm::raw_ostream &os, size_t maxRows) const {
  if (!title.empty())
    os << "memory report: " << title << "\n";
  os << llvm::formatv("  allocated {0} bytes ({1}) = state {2} + arena {3} + "
                      "io {4}",
                      withCommas(totalBytes()), formatBytes(totalBytes()),
                      formatBytes(state), formatBytes(arena), formatBytes(io));
  if (workspace)
    os << " + library workspace " << formatBytes(workspace);
  os << "\n";
  // State kept in host memory (effc --offload optimizer): allocated apart,
  // not counted above, nor at the peak, nor against --memory-budget.
  if (host) {
    int64_t optimizer = 0, masters = 0;
    for (const ReportTensor &t : tensors)
      if (t.onHost)
        (t.category == MemoryCategory::OptimizerState ? optimizer : masters) +=
            t.bytes;
    os << llvm::formatv("  host {0} bytes ({1}) = optimizer state {2}",
                        withCommas(host), formatBytes(host),
                        withCommas(optimizer));
    if (masters)
      os << " + fp32 master weights " << withCommas(masters);
    os << " (offloaded: not on the device)\n";
  }
  if (hostStaging)
    os << llvm::formatv("  host staging {0} bytes ({1}): pinned copies of the "
                        "device bytes a host task reads and writes, the "
                        "largest task's\n",
                        withCommas(hostStaging), formatBytes(hostStaging));
  int64_t live = peakLiveBytes();
  os << llvm::formatv("  peak at schedule position {0} of {1}: {2} "
                      "(arena live {3}",
                      peakAt, scheduleLength, peakOp.empty() ? "-" : peakOp,
                      withCommas(live));
  if (arena > live)
    os << llvm::formatv(", placement gaps {0}", withCommas(arena - live));
  os << ")\n";

  os << "  bytes at the peak by category:\n";
  std::vector<int64_t> atPeak = bytesAtPeak();
  for (MemoryCategory c : kAllCategories)
    os << llvm::formatv("    {0,-16} {1,14}  {2}\n", categoryName(c),
                        withCommas(atPeak[static_cast<int>(c)]),
                        formatBytes(atPeak[static_cast<int>(c)]));

  // Per layer: persistent tensors and arena buffers live at the peak.
  // In numeric order: layers.2 before layers.10.
  auto numericLess = [](const std::string &a, const std::string &b) {
    return StringRef(a).compare_numeric(b) < 0;
  };
  std::map<std::string, std::vector<int64_t>, decltype(numericLess)> layers(
      numericLess);
  for (const ReportTensor &t : tensors)
    if (t.category != MemoryCategory::Batch && !t.onHost) {
      auto &row = layers[layerOf(t.name)];
      row.resize(kNumMemoryCategories);
      row[static_cast<int>(t.category)] += t.bytes;
    }
  std::vector<const ReportBuffer *> live_;
  for (const ReportBuffer &b : buffers)
    if (b.liveAt(peakAt)) {
      live_.push_back(&b);
      auto &row = layers[layerOf(b.node)];
      row.resize(kNumMemoryCategories);
      row[static_cast<int>(b.category)] += b.bytes;
    }
  os << "  per layer at the peak (params / optimizer / gradients / "
        "activations / temporaries):\n";
  for (auto &[layer, row] : layers) {
    auto at = [&](MemoryCategory c) { return row[static_cast<int>(c)]; };
    os << llvm::formatv(
        "    {0,-24} {1,10} {2,10} {3,10} {4,10} {5,10}\n", layer,
        formatBytes(at(MemoryCategory::Parameters) + at(MemoryCategory::Buffers)),
        formatBytes(at(MemoryCategory::OptimizerState)),
        formatBytes(at(MemoryCategory::Gradients)),
        formatBytes(at(MemoryCategory::Activations)),
        formatBytes(at(MemoryCategory::Temporaries) + at(MemoryCategory::Workspace)));
  }

  llvm::stable_sort(live_, [](const ReportBuffer *a, const ReportBuffer *b) {
    return a->bytes > b->bytes;
  });
  os << llvm::formatv("  live at the peak ({0} buffers, largest first):\n",
                      live_.size());
  os << llvm::formatv("    {0,12}  {1,-12} {2,-11} {3,-13} {4}\n", "bytes",
                      "category", "decision", "lifetime", "node -> last use");
  for (auto [i, b] : llvm::enumerate(live_)) {
    if (i == maxRows) {
      os << "    ... " << live_.size() - maxRows << " more\n";
      break;
    }
    os << llvm::formatv("    {0,12}  {1,-12} {2,-11} {3,-13} {4} -> {5}\n",
                        withCommas(b->bytes), categoryName(b->category),
                        b->provenance,
                        llvm::formatv("{0}..{1}", b->first, b->last).str(),
                        b->node.empty() ? "?" : b->node, b->lastUser);
  }

  // The runtime kernels' scratch (attention's tiles and head copies, one
  // slot per thread; oneDNN's blocked copies; NF4 tiles), live at the peak
  // or not: every byte they touch is a buffer of the plan.
  std::vector<const ReportBuffer *> scratch;
  int64_t scratchBytes = 0;
  for (const ReportBuffer &b : buffers)
    if (b.category == MemoryCategory::Workspace) {
      scratch.push_back(&b);
      scratchBytes += b.bytes;
    }
  if (scratch.empty())
    return;
  llvm::stable_sort(scratch, [](const ReportBuffer *a, const ReportBuffer *b) {
    return a->bytes > b->bytes;
  });
  os << llvm::formatv("  kernel workspaces ({0} buffers, {1} bytes, largest "
                      "first):\n",
                      scratch.size(), withCommas(scratchBytes));
  for (auto [i, b] : llvm::enumerate(scratch)) {
    if (i == maxRows) {
      os << "    ... " << scratch.size() - maxRows << " more\n";
      break;
    }
    os << llvm::formatv("    {0,12}  {1,-13} {2} -> {3}\n",
                        withCommas(b->bytes),
                        llvm::formatv("{0}..{1}", b->first, b->last).str(),
                        b->node.empty() ? "?" : b->node, b->lastUser);
  }
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

void MemoryReport::writeSvg(llvm::raw_ostream &os) const {
  // Stacked from the bottom: persistent state, then the arena's categories.
  static constexpr MemoryCategory kStack[] = {
      MemoryCategory::Parameters,  MemoryCategory::Buffers,
      MemoryCategory::OptimizerState, MemoryCategory::Batch,
      MemoryCategory::Gradients,   MemoryCategory::Activations,
      MemoryCategory::Workspace,   MemoryCategory::Temporaries};
  static constexpr const char *kColor[] = {"#4e79a7", "#76b7b2", "#59a14f",
                                           "#bab0ac", "#edc948", "#e15759",
                                           "#b07aa1", "#f28e2b"};
  const int64_t n = std::max<int64_t>(scheduleLength, 1);
  // Bytes per category at every schedule position (difference arrays).
  std::vector<std::vector<int64_t>> series(kNumMemoryCategories,
                                           std::vector<int64_t>(n + 1, 0));
  for (const ReportTensor &t : tensors) {
    if (t.onHost)
      continue; // the device's memory over the schedule
    series[static_cast<int>(t.category)][0] += t.bytes;
    series[static_cast<int>(t.category)][n] -= t.bytes;
  }
  for (const ReportBuffer &b : buffers) {
    int64_t from = b.inPlace ? b.first + 1 : b.first;
    series[static_cast<int>(b.category)][std::clamp<int64_t>(from, 0, n)] +=
        b.bytes;
    series[static_cast<int>(b.category)]
          [std::clamp<int64_t>(b.last + 1, 0, n)] -= b.bytes;
  }
  for (auto &s : series)
    for (int64_t i = 1; i <= n; ++i)
      s[i] += s[i - 1];
  int64_t top = 1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t sum = 0;
    for (auto &s : series)
      sum += s[i];
    top = std::max(top, sum);
  }

  const double width = 960, height = 420, left = 80, right = 200, bottom = 40,
               topMargin = 40;
  const double plotW = width - left - right, plotH = height - topMargin - bottom;
  auto x = [&](int64_t pos) { return left + plotW * pos / double(n); };
  auto y = [&](int64_t bytes) {
    return topMargin + plotH - plotH * bytes / double(top);
  };
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                      "height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"20\" font-size=\"14\">memory over "
                      "the schedule{1}{2}</text>\n",
                      left, title.empty() ? "" : ": ", title);
  std::vector<int64_t> below(n, 0);
  for (auto [k, category] : llvm::enumerate(kStack)) {
    const std::vector<int64_t> &s = series[static_cast<int>(category)];
    if (llvm::all_of(s, [](int64_t v) { return v == 0; }))
      continue;
    std::string path;
    llvm::raw_string_ostream p(path);
    // Upper edge left to right as steps, lower edge back.
    for (int64_t i = 0; i < n; ++i) {
      double yy = y(below[i] + s[i]);
      p << (i ? " L" : "M") << llvm::format("%.1f,%.1f", x(i), yy)
        << llvm::format(" L%.1f,%.1f", x(i + 1), yy);
    }
    for (int64_t i = n - 1; i >= 0; --i)
      p << llvm::format(" L%.1f,%.1f L%.1f,%.1f", x(i + 1), y(below[i]), x(i),
                        y(below[i]));
    p << " Z";
    os << "<path d=\"" << path << "\" fill=\"" << kColor[k]
       << "\" stroke=\"none\"><title>" << categoryName(category)
       << "</title></path>\n";
    for (int64_t i = 0; i < n; ++i)
      below[i] += s[i];
    double ly = topMargin + 18 * k;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"12\" height=\"12\" "
                        "fill=\"{2}\"/><text x=\"{3}\" y=\"{4}\">{5}</text>\n",
                        width - right + 16, ly, kColor[k], width - right + 34,
                        ly + 10, categoryName(category));
  }
  // Axes and the peak.
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n",
                      left, topMargin, topMargin + plotH);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      left, topMargin + plotH, left + plotW);
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}"
                      "</text>\n",
                      left - 6, topMargin + 4, formatBytes(top));
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">0</text>\n",
                      left - 6, topMargin + plotH + 4);
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">schedule position (0..{2}): "
                      "forward, backward, optimizer</text>\n",
                      left, height - 10, n);
  int64_t peakBytes = state + io + workspace + peakLiveBytes();
  double px = x(peakAt) + 0.5 * plotW / n;
  os << llvm::formatv("<line x1=\"{0:f1}\" y1=\"{1}\" x2=\"{0:f1}\" y2=\"{2}\" "
                      "stroke=\"black\" stroke-dasharray=\"4 3\"/>\n",
                      px, topMargin, topMargin + plotH);
  std::string label = llvm::formatv("peak {0} at {1}", formatBytes(peakBytes),
                                    peakOp.empty() ? std::to_string(peakAt)
                                                   : peakOp)
                          .str();
  // Escape the few characters XML cares about in node names.
  std::string escaped;
  for (char c : label)
    escaped += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;"
                                                                : std::string(1, c);
  os << llvm::formatv("<text x=\"{0:f1}\" y=\"{1}\" text-anchor=\"{2}\">{3}"
                      "</text>\n",
                      px + (peakAt * 2 < n ? 4 : -4), topMargin - 6,
                      peakAt * 2 < n ? "start" : "end", escaped);
  os << "</svg>\n";
}

} // namespace effopt
