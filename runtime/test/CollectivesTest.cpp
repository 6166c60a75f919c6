//===- CollectivesTest.cpp - effrt::Collectives on every rank -------------===//
//
//   effrt-collectives-test single|mpi|abort
//
// Runs every collective of the chosen backend on a host-memory device with
// values that depend on the rank, and checks the results against their
// closed forms: under `mpirun -np N`, `mpi` exercises Open MPI across N
// processes (test/Runtime/collectives.test). Prints "rank R of N: ok" or one
// line naming the first wrong value, exit status 1.
//
// `abort` (under mpirun -np 2): rank 1 starts an all-reduce that rank 0
// never joins, so its communication thread is inside MPI waiting, and then
// fails (finishMpi(true)) while rank 0 sleeps: every rank must end, through
// MPI_Abort made by that thread, not hang or race it.
//
//===----------------------------------------------------------------------===//

#include "effrt/Device.h"
#include "effrt/Error.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace effrt;

namespace {

template <typename T>
void put(Device &device, DeviceSpan span, const std::vector<T> &values) {
  device.copyToDevice(span, values.data());
}

template <typename T> std::vector<T> get(Device &device, DeviceSpan span) {
  std::vector<T> values(span.bytes / sizeof(T));
  device.copyFromDevice(span, values.data());
  return values;
}

template <typename T>
void expect(const char *what, const std::vector<T> &got,
            const std::vector<T> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i])
      fail(what, ": element ", i, " is ", got[i], ", expected ", want[i]);
}

int run(const std::string &backend) {
  std::shared_ptr<Collectives> c =
      backend == "mpi" ? mpiCollectives() : singleRankCollectives();
  const int rank = c->rank(), n = c->worldSize();
  DeviceOptions options;
  options.label = "collectives-test";
  options.collectives = c;
  std::unique_ptr<Device> device = createHostMemoryDevice(options);
  const uint64_t count = 1000; // elements per rank's block
  device->allocate({/*state=*/0, /*arena=*/count * (n + 1) * 8 * 4, /*io=*/0});
  auto span = [&](uint64_t offset, uint64_t bytes) {
    return DeviceSpan{RegionKind::Arena, offset, bytes};
  };

  // all-reduce, f32 and f64: element i of rank r is r + i; the sum over
  // ranks is n*i + n(n-1)/2.
  for (bool f64 : {false, true}) {
    std::vector<double> want(count);
    for (uint64_t i = 0; i < count; ++i)
      want[i] = double(n) * double(i) + n * (n - 1) / 2.0;
    if (f64) {
      std::vector<double> mine(count);
      for (uint64_t i = 0; i < count; ++i)
        mine[i] = rank + double(i);
      put(*device, span(0, count * 8), mine);
      c->allReduceSum(*device, span(0, count * 8), DType::F64);
      expect("all-reduce f64", get<double>(*device, span(0, count * 8)), want);
    } else {
      std::vector<float> mine(count), wantF(count);
      for (uint64_t i = 0; i < count; ++i) {
        mine[i] = float(rank + i);
        wantF[i] = float(want[i]);
      }
      put(*device, span(0, count * 4), mine);
      c->allReduceSum(*device, span(0, count * 4), DType::F32);
      expect("all-reduce f32", get<float>(*device, span(0, count * 4)), wantF);
    }
  }

  // reduce-scatter: rank r's send holds n blocks, element j of block b is
  // r + b*count + j; rank r receives block r summed: n*(r*count + j) +
  // n(n-1)/2.
  const uint64_t sendBytes = count * n * 4, recvBytes = count * 4;
  std::vector<float> send(count * n), wantBlock(count);
  for (uint64_t j = 0; j < count * n; ++j)
    send[j] = float(rank + j);
  for (uint64_t j = 0; j < count; ++j)
    wantBlock[j] = float(n * (rank * count + j) + n * (n - 1) / 2);
  put(*device, span(0, sendBytes), send);
  c->reduceScatterSum(*device, span(0, sendBytes), span(sendBytes, recvBytes),
                      DType::F32);
  expect("reduce-scatter", get<float>(*device, span(sendBytes, recvBytes)),
         wantBlock);

  // all-gather: rank r sends `count` floats of value r*1000 + j; every rank
  // receives them all in rank order.
  std::vector<float> mine(count), gathered(count * n);
  for (uint64_t j = 0; j < count; ++j)
    mine[j] = float(rank * 1000 + j);
  for (int r = 0; r < n; ++r)
    for (uint64_t j = 0; j < count; ++j)
      gathered[r * count + j] = float(r * 1000 + j);
  put(*device, span(0, recvBytes), mine);
  c->allGather(*device, span(0, recvBytes), span(recvBytes, sendBytes));
  expect("all-gather", get<float>(*device, span(recvBytes, sendBytes)),
         gathered);

  // all-gather of host memory (checkpoint consolidation): the same.
  std::vector<float> hostGathered(count * n);
  c->allGatherHost(mine.data(), hostGathered.data(), count * 4);
  expect("all-gather on the host", hostGathered, gathered);

  // broadcast from the last rank.
  std::vector<float> fromLast(count);
  for (uint64_t j = 0; j < count; ++j)
    fromLast[j] = float((n - 1) * 7 + j);
  put(*device, span(0, recvBytes), rank == n - 1 ? fromLast : mine);
  c->broadcast(*device, span(0, recvBytes), n - 1);
  expect("broadcast", get<float>(*device, span(0, recvBytes)), fromLast);

  // Started collectives (eff-overlap-collectives): an all-reduce, a
  // reduce-scatter and an all-gather started one after the other, a host
  // all-gather called behind them (it runs after them), then each waited
  // for: the same results as the blocking calls.
  {
    std::vector<float> sums(count), wantSums(count);
    for (uint64_t i = 0; i < count; ++i) {
      sums[i] = float(rank + i);
      wantSums[i] = float(double(n) * double(i) + n * (n - 1) / 2.0);
    }
    uint64_t a = 0, rsSend = a + recvBytes, rsRecv = rsSend + sendBytes,
             agSend = rsRecv + recvBytes, agRecv = agSend + recvBytes;
    put(*device, span(a, recvBytes), sums);
    put(*device, span(rsSend, sendBytes), send);
    put(*device, span(agSend, recvBytes), mine);
    uint64_t r1 = c->startAllReduceSum(*device, span(a, recvBytes), DType::F32);
    uint64_t r2 = c->startReduceScatterSum(*device, span(rsSend, sendBytes),
                                           span(rsRecv, recvBytes), DType::F32);
    uint64_t r3 = c->startAllGather(*device, span(agSend, recvBytes),
                                    span(agRecv, sendBytes));
    std::vector<float> behind(count * n);
    c->allGatherHost(mine.data(), behind.data(), count * 4);
    expect("host all-gather behind started ones", behind, gathered);
    c->wait(r1);
    c->wait(r3);
    c->wait(r2); // already finished: returns at once
    expect("started all-reduce", get<float>(*device, span(a, recvBytes)),
           wantSums);
    expect("started reduce-scatter",
           get<float>(*device, span(rsRecv, recvBytes)), wantBlock);
    expect("started all-gather", get<float>(*device, span(agRecv, sendBytes)),
           gathered);
  }

  c->barrier();
  std::printf("rank %d of %d (%s): ok\n", rank, n, c->name().c_str());
  return 0;
}

/// Rank 1 fails with an all-reduce in flight that rank 0 never joins.
int failInFlight() {
  std::shared_ptr<Collectives> c = mpiCollectives();
  if (c->worldSize() != 2)
    fail("abort needs mpirun -np 2");
  DeviceOptions options;
  options.label = "collectives-test";
  options.collectives = c;
  std::unique_ptr<Device> device = createHostMemoryDevice(options);
  device->allocate({/*state=*/0, /*arena=*/4096, /*io=*/0});
  if (c->rank() == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    std::printf("rank 0: still running after 60 s\n");
    return 1;
  }
  c->startAllReduceSum(*device, DeviceSpan{RegionKind::Arena, 0, 4096},
                       DType::F32);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::fprintf(stderr, "rank 1: failing with an all-reduce in flight\n");
  std::fflush(stderr);
  finishMpi(/*failed=*/true);
  std::printf("rank 1: finishMpi(true) returned\n");
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 || (std::strcmp(argv[1], "mpi") &&
                    std::strcmp(argv[1], "single") &&
                    std::strcmp(argv[1], "abort"))) {
    std::fprintf(stderr, "usage: effrt-collectives-test single|mpi|abort\n");
    return 2;
  }
  if (!std::strcmp(argv[1], "abort"))
    return failInFlight();
  int status = 1;
  try {
    status = run(argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "effrt-collectives-test: error: %s\n", e.what());
  }
  finishMpi(status != 0);
  return status;
}
