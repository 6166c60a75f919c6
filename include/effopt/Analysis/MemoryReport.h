//===- MemoryReport.h - where the bytes of a training step go ---*- C++ -*-===//
//
// The exact memory of a compiled step, explained: every byte the runtime
// allocates (persistent state, the arena of temporaries, the batch) by
// category, the peak of the arena's live bytes and where in the schedule it
// falls, which buffers are live there, the ONNX node that produced each, its
// lifetime and the decision that made it live (saved for the backward,
// recomputed, cast, ...). The arena part comes from the memory plan and the
// provenance tags in buffer locations (effopt/Dialect/Eff/IR/Provenance.h);
// the persistent part from the step's layout.
//
// Rendered as a terminal table, JSON, or an SVG of memory over the schedule.
//
//===----------------------------------------------------------------------===//

#ifndef EFFOPT_ANALYSIS_MEMORYREPORT_H
#define EFFOPT_ANALYSIS_MEMORYREPORT_H

#include "effopt/Analysis/MemoryPlan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace effopt {

/// Unit attribute on a memref.alloc that a library call uses as scratch
/// space (the attention kernels' tile buffers): reported as workspace.
inline constexpr llvm::StringLiteral kWorkspaceAttrName = "eff.workspace";

/// Unit attribute on a memref.alloc that a collective sends from (an
/// all-reduce's bucket, a scatter's or gather's send buffer): the copies into
/// it may be folded into its producers (eff-fold-collective-copies).
inline constexpr llvm::StringLiteral kCollectiveBufferAttrName =
    "eff.collective_buffer";

/// Module attribute holding the report as JSON (eff-memory-plan{attach-report}).
inline constexpr llvm::StringLiteral kMemoryReportAttrName = "eff.memory_report";

/// What a byte is for. Persistent categories live for the whole run; the
/// others are arena buffers with a lifetime.
enum class MemoryCategory {
  Parameters,
  Buffers,
  OptimizerState,
  Gradients,
  Activations, // forward values kept for the backward
  Temporaries,
  Workspace,
  Batch, // the io region: inputs and the loss
};
constexpr int kNumMemoryCategories = 8;
llvm::StringRef categoryName(MemoryCategory category);
/// "512 B", "1.5 KiB", "3.67 MiB", "1.20 GiB".
std::string formatBytes(int64_t bytes);

/// One arena buffer.
struct ReportBuffer {
  std::string node;       // ONNX node that produced it ("" if unknown)
  std::string provenance; // forward, saved, backward, gradient, ...
  MemoryCategory category = MemoryCategory::Temporaries;
  std::string type;
  int64_t bytes = 0, offset = 0;
  int64_t first = 0, last = 0; // schedule positions
  bool inPlace = false;        // takes its input's bytes at `first`
  std::string lastUser;        // "node (provenance)" of the last reader

  bool liveAt(int64_t pos) const {
    return (inPlace ? first + 1 : first) <= pos && pos <= last;
  }
};

/// One tensor of the state, host or io region.
struct ReportTensor {
  std::string name;
  MemoryCategory category = MemoryCategory::Parameters;
  int64_t bytes = 0, offset = 0;
  /// In the host region (eff-offload-optimizer): host memory, not the
  /// device's; `offset` is in the host region.
  bool onHost = false;
};

class MemoryReport {
public:
  /// The arena part: classifies every buffer of `plan` over `schedule`.
  static MemoryReport fromPlan(const MemoryPlan &plan);
  /// Reads what toJSON wrote.
  static llvm::Expected<MemoryReport> fromJSON(llvm::StringRef text);

  /// Adds the persistent part (state and io regions, and the host region
  /// of state kept in host memory: the tensors marked onHost).
  void setRegions(int64_t stateBytes, int64_t ioBytes,
                  std::vector<ReportTensor> tensors, int64_t hostBytes = 0);
  /// Adds the target libraries' scratch space (allocated once at load,
  /// besides the regions: cuBLASLt's workspace), named `name`, as one
  /// persistent workspace tensor.
  void setLibraryWorkspace(std::string name, int64_t bytes);
  /// Adds the pinned host buffer a GPU's host tasks stage device bytes in
  /// (eff-host-tasks abi=cuda): host memory, besides the host region.
  void setHostStaging(int64_t bytes) { hostStaging = bytes; }
  void setTitle(std::string text) { title = std::move(text); }

  int64_t arenaBytes() const { return arena; }
  /// The device's bytes: what the device allocates, and what
  /// --memory-budget bounds.
  int64_t totalBytes() const { return state + arena + io + workspace; }
  /// The host region's bytes (optimizer state in host memory), besides.
  int64_t hostBytes() const { return host; }
  int64_t peakPosition() const { return peakAt; }
  /// Live arena bytes at the peak.
  int64_t peakLiveBytes() const;
  /// Device bytes per category at the peak (persistent ones count fully;
  /// tensors in host memory do not count).
  std::vector<int64_t> bytesAtPeak() const;

  llvm::json::Value toJSON() const;
  void printTable(llvm::raw_ostream &os, size_t maxRows = 25) const;
  void writeSvg(llvm::raw_ostream &os) const;

private:
  std::vector<ReportBuffer> buffers;
  std::vector<ReportTensor> tensors;
  std::string title;
  std::string peakOp; // "node (provenance)" at the peak position
  int64_t scheduleLength = 0, peakAt = 0;
  int64_t state = 0, arena = 0, io = 0, workspace = 0, host = 0,
          hostStaging = 0;
};

} // namespace effopt

#endif // EFFOPT_ANALYSIS_MEMORYREPORT_H
