//===- SingleRank.cpp - The collectives of a one-rank run -----------------===//
//
// What a device uses unless a multi-rank backend (MPI across processes,
// NCCL across GPUs; each a file of this folder reaching its library through
// DynamicLibrary) is given: with one rank, a sum over ranks is the data
// itself and a rank's block is the whole buffer.
//
//===----------------------------------------------------------------------===//

#include "effrt/Device.h"

#include "effrt/Error.h"

#include <cstring>

using namespace effrt;

namespace {
class SingleRank final : public Collectives {
public:
  std::string name() const override { return "single-rank"; }
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }

  void allReduceSum(Device &, DeviceSpan, DType) override {}

  void reduceScatterSum(Device &device, DeviceSpan send, DeviceSpan recv,
                        DType) override {
    copyWhole(device, send, recv, "reduce-scatter");
  }

  void allGather(Device &device, DeviceSpan send, DeviceSpan recv) override {
    copyWhole(device, send, recv, "all-gather");
  }

  void allGatherHost(const void *send, void *recv, uint64_t bytes) override {
    if (bytes && send != recv)
      std::memmove(recv, send, bytes);
  }

  void broadcast(Device &device, DeviceSpan, int root) override {
    if (root != 0)
      fail(device.label(), ": broadcast from rank ", root,
           " in a run of one rank");
  }

  void barrier() override {}

private:
  static void copyWhole(Device &device, DeviceSpan send, DeviceSpan recv,
                        const char *what) {
    if (send.bytes != recv.bytes)
      fail(device.label(), ": ", what, " of ", send.bytes, " bytes into ",
           recv.bytes, " bytes in a run of one rank");
    if (send.region != recv.region || send.offset != recv.offset)
      device.copyWithinDevice(send, recv);
  }
};
} // namespace

std::shared_ptr<Collectives> effrt::singleRankCollectives() {
  static const std::shared_ptr<Collectives> single =
      std::make_shared<SingleRank>();
  return single;
}
